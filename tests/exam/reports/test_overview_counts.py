"""The overview and the runs page from counts (issue 35): each kept run's head holds its
per-question counts (fails and cells answered too) and its cost, so a list page decodes no
cell. What they show must be what a full re-grade gives, byte for byte, through every change
that could make a kept row wrong; and a warm view reads no cell, no reply text and no whole
kept row (a version of several runs reads its runs' cost lines, nothing more).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from exam import review
from exam.reports import overview as ov
from exam.reports.regrade import regrade
from exam.reports.tallies import tallied
from exam.store import Store
from graders import RULE_VERSIONS
from tests.exam.conftest import HUMAN
from tests.exam.reports.test_grade_cache import edit_banks, random_history, select_runs
from tests.exam.reports.test_graded_runs import add_cell, small_history


def shown(report: dict, rows: list[dict]) -> str:
    for row in rows:
        row["run"] = row["run"].id
    return json.dumps({"overview": report, "runs": rows}, ensure_ascii=False, indent=1,
                      sort_keys=True)


def full(store: Store, runs) -> str:
    """From a fresh re-grade (no grade cache, no kept rows), every cell at hand."""
    graded = regrade(store, runs, cache=False)
    report = ov.build(graded, store.ship_records())
    return shown(report, ov.run_rows(graded, runs, report))


def counted(store: Store, runs) -> str:
    """From the kept runs' heads, as the dashboard builds them."""
    counts = tallied(store, runs)
    report = ov.build(counts, store.ship_records(), lambda: regrade(store, runs, texts=False))
    return shown(report, ov.run_rows(counts, runs, report))


def same(store: Store, runs) -> None:
    want = full(store, runs)
    assert counted(store, runs) == want  # grades and keeps what it must
    assert counted(store, runs) == want  # read from the kept heads


def no_cells(monkeypatch) -> list[int]:
    """Fail if any cell, reply text or whole kept row is read; the runs whose cost line (the
    end of a kept row, cut out by the database) was read."""
    tails: list[int] = []
    real = Store.graded_run_parts

    def refuse(*args, **kwargs):
        raise AssertionError("cells or whole kept rows were read")

    def counting(self, keys, spans):
        tails.extend(spans)
        return real(self, keys, spans)

    monkeypatch.setattr(Store, "cells", refuse)
    monkeypatch.setattr(Store, "cell_texts", refuse)
    monkeypatch.setattr(Store, "graded_runs", refuse)
    monkeypatch.setattr(Store, "graded_run_parts", counting)
    return tails


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_the_overview_from_counts_is_the_full_one_byte_for_byte(tmp_path, monkeypatch, seed):
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    same(store, runs)
    want = full(store, runs)
    with monkeypatch.context() as m:
        whole = no_cells(m)
        assert counted(store, runs) == want
        assert whole == []  # one run per version: its cost is in its head


def test_a_version_of_several_runs_takes_its_cost_from_every_run(tmp_path, monkeypatch):
    history = small_history(tmp_path)
    history.run("A", "v2", {"A-01": "pp", "A-02": "fh", "A-03": "pp"},
                figures={"A-01": {"latency_ms": 9000.0, "tokens": 4000},
                         "A-03": {"model_calls": None, "tokens": None}})
    history.run("A", "v2", {"A-01": "p", "A-02": "t", "A-03": "f"})
    store, runs = history.store, select_runs(history.store)
    same(store, runs)
    with monkeypatch.context() as m:
        whole = no_cells(m)
        report = json.loads(counted(store, runs))
        assert sorted(whole) == sorted(r.id for r in runs if r.version == "v2")
    v2 = next(v for v in report["overview"]["agents"][0]["versions"] if v["version"] == "v2")
    assert len(v2["run_ids"]) == 3 and v2["cost"]["latency_ms"]["p95"] > 200.0


def test_the_overview_from_counts_follows_every_change_a_kept_row_could_miss(tmp_path,
                                                                            monkeypatch):
    rng = random.Random(5)
    history = small_history(tmp_path)
    history.run("A", "v3", {"A-01": "fff", "A-02": "hf", "A-03": "fh"})
    store = history.store
    runs = select_runs(store)
    same(store, runs)

    edit_banks(history, rng)  # rubrics, a removed question, a budget, an option
    same(store, runs)
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][0]["severity"] = "critical"
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    same(store, runs)

    monkeypatch.setitem(RULE_VERSIONS, "forbidden", 99)
    same(store, runs)

    before = counted(store, runs)
    for item in review.queue(regrade(store, runs)):
        review.decide(store, item, rng.choice(["pass", "fail"]), "Mei", "read it")
    same(store, runs)
    assert counted(store, runs) != before

    first = min(r.id for r in runs)
    if store.retire_failed_cells(first):
        same(store, runs)
    add_cell(store, first, "A-02", 9, HUMAN)
    same(store, runs)

    store.set_excluded(first, "the agent was down")
    runs = select_runs(store)
    same(store, runs)


def test_a_versions_figures_are_its_cells_counted(tmp_path):
    """Counted by hand from small_history: v1 is A-01 pass/fail/needs_human, A-02 pass and a
    timeout, A-03 fail twice."""
    history = small_history(tmp_path)
    store, runs = history.store, select_runs(history.store)
    report = json.loads(counted(store, runs))
    v1 = report["overview"]["agents"][0]["versions"][0]
    assert (v1["passes"], v1["fail"], v1["needs_human"], v1["graded"]) == (2, 3, 1, 6)
    assert (v1["answered"], v1["planned"]) == (6, 9)  # 3 repeats × 3 questions planned
    assert v1["critical_failing"] == ["A-01"]
    v1_run = next(r for r in report["runs"] if r["run"] == v1["run_ids"][0])
    assert (v1_run["stored"], v1_run["fail"]) == (7, 3)


def queue(store: Store, runs, **kwargs) -> list[tuple]:
    return [(i.key, i.text, i.checks, sorted(i.cells), i.verdict)
            for i in review.queue(regrade(store, runs, texts=False, **kwargs))]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_review_queue_from_the_open_questions_alone_is_the_whole_queue(tmp_path, seed):
    """The dashboard's /review decodes, of each kept run, only the questions whose head counts
    a needs_human cell; the queue is the one a whole re-grade gives, before and after
    decisions, and it is not empty (the comparison means something)."""
    history = random_history(tmp_path, seed)
    history.run("A", "v9", {"A-01": "hhp", "A-02": "fh"})
    store, runs = history.store, select_runs(history.store)
    want = queue(store, runs, cache=False)
    assert want and queue(store, runs, open_only=True) == want  # keeps the rows
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Store, "graded_runs", lambda *a: (_ for _ in ()).throw(
            AssertionError("a whole kept row was read")))
        assert queue(store, runs, open_only=True) == want  # the open questions' blocks
    first = review.queue(regrade(store, runs))[0]
    review.decide(store, first, "pass", "Mei", "read it")
    want = queue(store, runs, cache=False)
    assert first.key not in [k for k, *_ in want]
    assert queue(store, runs, open_only=True) == want
