"""A compare asked for reads its baseline (what had shipped when NEW was first run) from the
agent's kept walk (exam/reports/changes.py ``against_kept``): the report must be the one the
walk made afresh gives (``baseline.compare_against``), for every pair of versions and without
OLD, through ship decisions by hand and ships by verdict; and a kept walk builds one compare."""

from __future__ import annotations

import json

import pytest

from exam.reports import baseline, changes, compare
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from tests.exam.reports.test_grade_cache import random_history


def both(store, agent: str, old: str | None, new: str) -> tuple[str, str]:
    records = store.ship_records(agent)
    graded = regrade(store, select_runs(store, agent))

    def said(make):
        try:
            return json.dumps(make(), ensure_ascii=False, sort_keys=True)
        except compare.CompareError as exc:
            return f"refused: {exc}"

    return (said(lambda: changes.against_kept(graded, agent, old, new, records)),
            said(lambda: baseline.compare_against(graded, agent, old, new, records)))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_every_compare_is_the_one_the_walk_made_afresh_gives(tmp_path, seed):
    history = random_history(tmp_path, seed)
    store = history.store
    for agent in sorted({r.agent for r in select_runs(store)}):
        versions = list(dict.fromkeys(r.version for r in sorted(
            select_runs(store, agent), key=lambda r: r.id)))
        if seed % 2 and len(versions) > 1:  # a ship by hand moves the baseline
            baseline.record_ship(store, agent, versions[-2], "Mei", "by hand")
        for new in versions:
            for old in [None, *versions]:
                if old == new:
                    continue
                kept, afresh = both(store, agent, old, new)
                assert kept == afresh, (agent, old, new)


def test_a_kept_walk_makes_a_compare_asked_for_build_one_compare(tmp_path, monkeypatch):
    history = random_history(tmp_path, 3)
    store = history.store
    agent = "A"
    versions = list(dict.fromkeys(r.version for r in sorted(select_runs(store, agent),
                                                             key=lambda r: r.id)))
    if len(versions) < 3:
        history.run(agent, "v8", {"A-01": "pf"})
        history.run(agent, "v9", {"A-01": "pp"})
        versions = [*versions, "v8", "v9"]
    records = store.ship_records(agent)
    graded = regrade(store, select_runs(store, agent))
    changes.walked(graded, agent, records)  # kept
    built = []
    real = compare.build
    monkeypatch.setattr(compare, "build", lambda *a, **k: built.append(a[2:4]) or real(*a, **k))
    changes.against_kept(graded, agent, versions[0], versions[-1], records)
    assert built == [(versions[0], versions[-1])]
