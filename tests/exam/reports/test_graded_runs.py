"""Graded runs kept whole: a finished run is read back from one row, and only while every
part of its key (rules, today's questions, the run's settings, its cells) is unchanged.

Correctness first: after each change that could make a kept row wrong, the report equals a
fresh re-grade (``cache=False``, which reads neither the grade cache nor the kept rows).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest

from exam import review
from exam.bank import load as bank_mod
from exam.grading.keys import rules_key
from exam.reports import discrimination, graded_runs
from exam.reports import regrade as regrade_mod
from exam.reports.regrade import GradedCell, regrade
from exam.reports.tallies import tallied
from exam.store import AttemptRow, CellRow, Store
from graders import RULE_VERSIONS
from tests.exam.conftest import FAIL, HUMAN, PASS, History
from tests.exam.reports.test_grade_cache import (  # select_runs from wherever reports keep it
    assert_same,
    count_grades,
    random_history,
    select_runs,
)


def kept(store: Store) -> dict[int, str]:
    with sqlite3.connect(store.path) as con:
        return dict(con.execute("SELECT run_id, key FROM graded_runs"))


def no_cells_loaded(monkeypatch) -> None:
    """Fail if a report loads any cell: a kept run is read from its one row."""
    def refuse(*args, **kwargs):
        raise AssertionError("cells were loaded")

    monkeypatch.setattr(Store, "cells", refuse)


def add_cell(store: Store, run_id: int, case_no: str, repeat: int, text: str) -> None:
    digest = store.get_run(run_id).plan[0][1]
    digest = dict(store.get_run(run_id).plan).get(case_no, digest)
    store.record_cell(CellRow(run_id, case_no, repeat, digest, "ok", "", text, None, False, None,
                              1, 2, 1000, 200.0, time.time()),
                      [AttemptRow(1, time.time(), 200, 1.0, "", "application/json",
                                  json.dumps({"answer": text}, ensure_ascii=False), 10, False)])


def small_history(tmp_path) -> History:
    history = History(tmp_path)
    history.bank("A", [("A-01", "c1", "critical"), ("A-02", "c2", "major"),
                       ("A-03", "c1", "major")])
    history.run("A", "v1", {"A-01": "pfh", "A-02": "pt", "A-03": "ff"})
    history.run("A", "v2", {"A-01": "ppp", "A-02": "hh", "A-03": "pf"})
    return history


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_finished_run_is_read_from_its_kept_row_alone(tmp_path, monkeypatch, seed):
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    fresh = regrade(store, runs, cache=False)
    assert kept(store) == {}  # cache=False keeps nothing
    assert_same(regrade(store, runs), fresh)
    assert set(kept(store)) == {r.id for r in runs}
    calls = count_grades(monkeypatch)
    with monkeypatch.context() as m:
        no_cells_loaded(m)
        assert_same(regrade(store, runs), fresh)  # the reply texts too (read on their own)
        parallel = regrade(store, runs, parallel=True)
    assert calls[0] == 0
    # the parallel path keeps no texts but those a person must read, as it always did
    assert parallel.cells == [c if c.verdict == "needs_human" else replace(c, text=None)
                              for c in fresh.cells]


def test_a_kept_row_is_what_the_report_reads_and_a_stale_one_is_never_read(tmp_path):
    history = small_history(tmp_path)
    store = history.store
    runs = select_runs(store)
    regrade(store, runs)
    items = {p: b.by_case() for p, b in regrade_mod.load_banks(store, runs)[0].items()}
    with sqlite3.connect(store.path) as con:  # change what the rows say, not their keys
        for run_id, text in con.execute("SELECT run_id, cells FROM graded_runs").fetchall():
            run = store.get_run(run_id)
            rows, removed = graded_runs.decode(text, run, items[run.bank_path])
            cells = [replace(c, verdict="fail") if c.verdict is not None else c
                     for c in (GradedCell(*t) for t in rows)]
            con.execute("UPDATE graded_runs SET cells=? WHERE run_id=?",
                        (graded_runs.encode(cells, removed), run_id))
    poisoned = regrade(store, runs)
    assert {c.verdict for c in poisoned.cells if c.run_status == "ok"} == {"fail"}
    # the counts path reads the same rows' heads (and their cells for the failing checks)
    counted = discrimination.build(tallied(store, runs))
    assert counted == discrimination.build(poisoned)
    assert {r["passes"] for q in counted["agents"][0]["questions"] for r in q["pass_rates"]} == {0}
    # another process (another Store) adds a cell to run 1: its mark changes, its row is stale
    other = Store(store.path)
    try:
        add_cell(other, runs[-1].id, "A-02", 3, PASS)
    finally:
        other.close()
    fresh = regrade(store, runs, cache=False)
    after = regrade(store, runs)
    assert [c for c in after.cells if c.run_id == runs[-1].id] == \
        [c for c in fresh.cells if c.run_id == runs[-1].id]
    assert any(c.repeat == 3 and c.case_no == "A-02" for c in after.cells)


def test_kept_runs_equal_fresh_ones_through_every_change(tmp_path, monkeypatch):
    rng = random.Random(5)
    history = small_history(tmp_path)
    store = history.store
    runs = select_runs(store)

    def same() -> None:
        assert_same(regrade(store, runs), regrade(store, runs, cache=False))
        assert_same(regrade(store, runs), regrade(store, runs, cache=False))  # kept, then read

    same()
    before = kept(store)

    # the bank moves on: a rubric changes, a category and a severity too (not graded, shown)
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][0]["expect_facts"] = ["備貨"]
    bank["questions"][1]["category"] = "renamed"
    bank["questions"][2]["severity"] = "minor"
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    same()
    assert {c.category for c in regrade(store, runs).cells} >= {"renamed"}
    assert kept(store).keys() == before.keys() and kept(store) != before

    # a question is removed from the bank, then a bank option changes
    del bank["questions"][2]
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    same()
    assert regrade(store, runs).removed == {r.id: ["A-03"] for r in runs}
    bank["options"] = {"fold_script": False}
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    same()

    # a rule's version is bumped
    monkeypatch.setitem(RULE_VERSIONS, "forbidden", 99)
    same()
    assert all(key.startswith(rules_key()) for key in kept(store).values())

    # a person decides on a needs_human reply: applied on top, the kept rows stay as they were
    rows = kept(store)
    for item in review.queue(regrade(store, runs))[:2]:
        review.decide(store, item, rng.choice(["pass", "fail"]), "Mei", "read it")
    same()
    assert kept(store) == rows
    assert any(c.reviewed for c in regrade(store, runs).cells)

    # a finished run's failed cells are retried (moved aside, then answered again)
    first = min(r.id for r in runs)  # v1, whose A-02 timed out once
    assert store.retire_failed_cells(first) == 1
    same()
    add_cell(store, first, "A-02", 2, HUMAN)
    same()
    assert [(c.repeat, c.run_status) for c in regrade(store, runs).cells
            if c.run_id == first and c.case_no == "A-02"] == [(1, "ok"), (2, "ok")]

    # a run is excluded: it leaves the report, the other is still read from its row
    store.set_excluded(first, "the agent was down")
    runs = select_runs(store)
    assert [r.id for r in runs] == [first + 1]
    same()


def test_a_running_run_is_not_kept_and_its_new_cells_are_seen(tmp_path):
    history = small_history(tmp_path)
    store = history.store
    run_id = history.run("A", "v3", {"A-01": "p", "A-02": "f", "A-03": "p"})
    store.set_run_status(run_id, "running")
    runs = select_runs(store)
    assert_same(regrade(store, runs), regrade(store, runs, cache=False))
    assert run_id not in kept(store) and len(kept(store)) == 2
    add_cell(store, run_id, "A-01", 2, FAIL)  # a new cell arrives while the run goes on
    got = regrade(store, runs)
    assert_same(got, regrade(store, runs, cache=False))
    assert [c.verdict for c in got.cells if c.run_id == run_id and c.case_no == "A-01"] == \
        ["pass", "fail"]


def test_prune_drops_kept_runs_of_other_rules(tmp_path, monkeypatch):
    history = small_history(tmp_path)
    store, runs = history.store, select_runs(history.store)
    with monkeypatch.context() as m:
        m.setitem(RULE_VERSIONS, "fact", 99)
        regrade(store, runs)
    assert len(kept(store)) == 2
    store.prune_grade_cache(rules_key())
    assert kept(store) == {}
    regrade(store, runs)
    store.prune_grade_cache(rules_key())
    assert len(kept(store)) == 2


def test_a_kept_run_is_not_read_when_its_bank_is_gone(tmp_path):
    history = small_history(tmp_path)
    store, runs = history.store, select_runs(history.store)
    regrade(store, runs)
    Path(history.banks["A"]).unlink()
    got = regrade(store, runs)
    assert got.cells == [] and [m["run_id"] for m in got.missing_banks] == sorted(r.id for r in runs)
    assert regrade_mod.load_banks(store, runs)[0] == {}


def test_checks_whose_evidence_holds_line_breaks_come_back_whole(tmp_path):
    history = History(tmp_path)
    history.bank("A", [("A-01", "c1", "critical"), ("A-02", "c2", "major")])
    prefix = "第一行\n第二行\r\n\u2028\u2029\x85"
    history.run("A", "v1", {"A-01": "pfh", "A-02": "hp"}, texts={"A-01": prefix, "A-02": prefix})
    store, runs = history.store, select_runs(history.store)
    fresh = regrade(store, runs, cache=False)
    regrade(store, runs)
    got = regrade(store, runs)
    assert_same(got, fresh)
    # the parallel path reads needs_human texts from the row itself
    kept_texts = [c.text for c in regrade(store, runs, parallel=True).cells
                  if c.verdict == "needs_human"]
    assert kept_texts and all(t.startswith(prefix) for t in kept_texts)
    for mine, theirs in zip(got.cells, fresh.cells, strict=True):
        assert mine.checks == theirs.checks and theirs.checks == mine.checks
        assert hash(mine.checks) == hash(theirs.checks) and list(mine.checks) == list(theirs.checks)


def test_a_bank_edit_is_seen_at_once_even_with_the_same_size_and_time(tmp_path, monkeypatch):
    history = small_history(tmp_path)
    store, runs = history.store, select_runs(history.store)
    path = Path(history.banks["A"])
    parses = []
    original = bank_mod.bank_from_text
    monkeypatch.setattr(bank_mod, "bank_from_text",
                        lambda *a: parses.append(1) or original(*a))
    bank_mod._parsed_bank.cache_clear()
    before = regrade(store, runs)
    regrade(store, runs)
    assert len(parses) == 1  # parsed and validated once per content
    stat = path.stat()
    text = path.read_text(encoding="utf-8")
    assert '"c1"' in text
    path.write_text(text.replace('"c1"', '"c9"'), encoding="utf-8")  # the same length
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    after = regrade(store, runs)
    assert len(parses) == 2
    assert {c.category for c in before.cells} == {"c1", "c2"}
    assert {c.category for c in after.cells} == {"c9", "c2"}
    assert_same(after, regrade(store, runs, cache=False))
