"""Discrimination from counts (``tallies.tallied``): the kept runs' heads (counts and failing
checks per question), never a cell. The report must be the one a full
re-grade gives, byte for byte, through every change that could make a kept row wrong.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from exam import review
from exam.reports import discrimination
from exam.reports import regrade as regrade_mod
from exam.reports.regrade import regrade
from exam.reports.tallies import tallied
from exam.store import Store
from graders import RULE_VERSIONS
from tests.exam.conftest import HUMAN
from tests.exam.reports.test_grade_cache import edit_banks, random_history, select_runs
from tests.exam.reports.test_graded_runs import add_cell, kept, small_history


def full(store: Store, runs) -> str:
    """The report from a fresh re-grade (no grade cache, no kept rows), as the CLI prints it."""
    return json.dumps(discrimination.build(regrade(store, runs, cache=False)),
                      ensure_ascii=False, indent=2)


def counted(store: Store, runs, parallel: bool = False) -> str:
    return json.dumps(discrimination.build(tallied(store, runs, parallel=parallel)),
                      ensure_ascii=False, indent=2)


def same(store: Store, runs) -> None:
    want = full(store, runs)
    assert counted(store, runs) == want  # keeps what it had to grade
    assert counted(store, runs) == want  # read from the kept heads
    report = discrimination.build(tallied(store, runs))
    assert discrimination.text(report, details=True) == \
        discrimination.text(discrimination.build(regrade(store, runs, cache=False)),
                            details=True)


def refuse_whole_rows(monkeypatch) -> None:
    """Fail if a report loads any cell or any whole kept row: the heads only."""
    def refuse(*args, **kwargs):
        raise AssertionError("cells or whole kept rows were read")

    monkeypatch.setattr(Store, "cells", refuse)
    monkeypatch.setattr(Store, "graded_runs", refuse)
    monkeypatch.setattr(Store, "cell_texts", refuse)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_counts_give_the_full_report_byte_for_byte(tmp_path, monkeypatch, seed):
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    want = full(store, runs)
    assert counted(store, runs) == want
    assert set(kept(store)) == {r.id for r in runs}
    with monkeypatch.context() as m:
        refuse_whole_rows(m)
        assert counted(store, runs) == want
        assert counted(store, runs, parallel=True) == want


def test_counts_follow_every_change_a_kept_row_could_miss(tmp_path, monkeypatch):
    rng = random.Random(5)
    history = small_history(tmp_path)
    history.run("A", "v3", {"A-01": "fff", "A-02": "hf", "A-03": "fh"})
    store = history.store
    runs = select_runs(store)
    same(store, runs)

    # the bank moves on: rubrics, categories, severities, a removed question, an option
    edit_banks(history, rng)
    same(store, runs)
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][1]["category"] = "renamed"
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    same(store, runs)
    assert "renamed" in counted(store, runs)

    # a rule's version is bumped
    monkeypatch.setitem(RULE_VERSIONS, "forbidden", 99)
    same(store, runs)

    # a person decides needs_human replies: the counts move, the kept rows do not
    rows = kept(store)
    before = counted(store, runs)
    for item in review.queue(regrade(store, runs)):
        review.decide(store, item, rng.choice(["pass", "fail"]), "Mei", "read it")
    same(store, runs)
    assert kept(store) == rows and counted(store, runs) != before

    # a finished run's failed cells are retried; a cell arrives
    first = min(r.id for r in runs)
    if store.retire_failed_cells(first):
        same(store, runs)
    add_cell(store, first, "A-02", 9, HUMAN)
    same(store, runs)

    # a run is excluded: it leaves the report
    store.set_excluded(first, "the agent was down")
    runs = select_runs(store)
    assert first not in [r.id for r in runs]
    same(store, runs)


def test_a_decision_changes_the_counts_read_from_kept_rows(tmp_path):
    history = small_history(tmp_path)
    store, runs = history.store, select_runs(history.store)
    counted(store, runs)  # keeps the runs
    a02 = {r["version"]: r["passes"] for q in json.loads(counted(store, runs))["agents"][0][
        "questions"] if q["case_no"] == "A-02" for r in q["pass_rates"]}
    for item in review.queue(regrade(store, runs)):
        if item.case_no == "A-02":
            review.decide(store, item, "pass", "Mei")
    after = {r["version"]: r["passes"] for q in json.loads(counted(store, runs))["agents"][0][
        "questions"] if q["case_no"] == "A-02" for r in q["pass_rates"]}
    assert after["v2"] == a02["v2"] + 2  # v2's two needs_human replies of A-02, decided pass
    assert counted(store, runs) == full(store, runs)


@pytest.mark.parametrize("seed", [2, 3])
def test_counts_graded_in_worker_processes_give_the_full_report(tmp_path, monkeypatch, seed):
    pools = []
    real = regrade_mod.ProcessPoolExecutor

    def counting(*args, **kwargs):
        pools.append(kwargs["max_workers"])
        return real(*args, **kwargs)

    monkeypatch.setattr(regrade_mod, "PARALLEL_MIN", 1)  # a small store takes the parallel path
    monkeypatch.setattr(regrade_mod.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(regrade_mod, "ProcessPoolExecutor", counting)
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    want = full(store, runs)
    assert counted(store, runs, parallel=True) == want
    assert pools == [2]  # graded by the workers, which kept every finished run themselves
    assert set(kept(store)) == {r.id for r in runs}
    assert counted(store, runs, parallel=True) == want and pools == [2]  # then read back
    for item in review.queue(regrade(store, runs))[:3]:
        review.decide(store, item, "fail", "Mei", "wrong")
    assert counted(store, runs, parallel=True) == full(store, runs)
