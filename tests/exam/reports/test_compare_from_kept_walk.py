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


@pytest.mark.parametrize("seed", [2, 5])
def test_a_compare_asked_for_reads_its_two_versions_cells_alone(tmp_path, monkeypatch, seed):
    """As the API and the dashboard ask (the service's grade source, its walk kept): the same
    report as the walk made afresh gives, for every pair, from OLD's and NEW's cells alone."""
    from exam.reports import inputs as inputs_mod
    from exam.reports import kinds
    from exam.reports.inputs import SERVICE

    history = random_history(tmp_path, seed)
    history.run("A", "v4", {"A-01": "pf"})
    history.run("A", "v5", {"A-01": "pp"})
    store = history.store
    agent = "A"
    runs = select_runs(store, agent)
    versions = list(dict.fromkeys(r.version for r in sorted(runs, key=lambda r: r.id)))
    records = store.ship_records(agent)
    changes.walked(regrade(store, runs), agent, records)  # kept, as a finished run keeps it
    read: list[set[str]] = []
    real = inputs_mod.regrading.regrade
    monkeypatch.setattr(inputs_mod.regrading, "regrade", lambda s, rs, **k: (
        read.append({r.version for r in rs}), real(s, rs, **k))[1])
    for new in versions:
        for old in versions:
            if old == new:
                continue
            read.clear()
            asked = json.dumps(kinds.build("compare", store, SERVICE, agent=agent, old=old,
                                           new=new), ensure_ascii=False, sort_keys=True)
            assert asked == both(store, agent, old, new)[1], (old, new)
            assert read == [{old, new}], (old, new)


def test_a_question_asked_and_never_answered_is_missing_data_whatever_other_versions_did(
        history):
    """A finished run whose cells for a question never arrived: the compare decides it as
    not answered (incomplete), never leaves it out of a ship; and what another version
    answered changes nothing (it used to be what put the question in the verdict at all)."""
    from exam.reports import kinds
    from exam.reports.inputs import LOCAL

    history.bank("W1", [("Q-01", "c", "major"), ("Q-02", "c", "critical")])
    history.run("W1", "v1", {"Q-01": "ppp", "Q-02": ""})
    history.run("W1", "v2", {"Q-01": "ppp", "Q-02": ""})

    def asked() -> dict:
        return kinds.build("compare", history.store, LOCAL, agent="W1", old="v1", new="v2",
                           baseline=False)

    alone = asked()
    assert alone["verdict"] == "incomplete"
    assert [t["case_no"] for t in alone["decision"]["tests"]] == ["Q-01", "Q-02"]
    assert "Q-02" in alone["decision"]["reason"]
    history.run("W1", "v3", {"Q-01": "ppp", "Q-02": "ppp"})
    assert asked() == alone
