"""The parallel re-grade (the CLI's default for large stores) equals the serial one.

Seeded random stores: several agents, versions and repeats; passes, fails, needs_human and
timeouts; a question removed from the bank and one changed since the run; a person's review
decision. Only the reply texts of cells that need no human are left out in parallel, by design.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from exam import review
from exam.reports import graded_runs
from exam.reports import regrade as regrade_mod
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from tests.exam.conftest import History


def random_history(tmp_path, seed: int) -> History:
    rng = random.Random(seed)
    history = History(tmp_path)
    for agent in ("A", "B")[: rng.randint(1, 2)]:
        cases = [(f"{agent}-{i:02d}", rng.choice(["c1", "c2"]), rng.choice(["critical", "major"]))
                 for i in range(1, rng.randint(4, 12))]
        history.bank(agent, cases)
        for version in ("v1", "v2", "v3")[: rng.randint(1, 3)]:
            repeats = rng.randint(1, 4)
            history.run(agent, version, {c: "".join(rng.choices("pppffht", k=repeats))
                                         for c, *_ in cases})
        # the bank moves on after the runs: one question changes, one is removed
        path = Path(history.banks[agent])
        bank = json.loads(path.read_text(encoding="utf-8"))
        bank["questions"][0]["expect_facts"] = ["備貨"]
        del bank["questions"][-1]
        path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    queued = review.queue(regrade(history.store, select_runs(history.store)))
    if queued:
        review.decide(history.store, queued[0], "pass", "Mei", "a disclaimer, not a claim")
    return history


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_parallel_regrade_equals_the_serial_one(tmp_path, monkeypatch, seed, forced_parallel):
    monkeypatch.setattr(graded_runs, "keep", lambda *args: None)  # the grading paths, not the rows
    history = random_history(tmp_path, seed)
    runs = select_runs(history.store)
    serial = regrade(history.store, runs)

    took_parallel = forced_parallel
    monkeypatch.setattr(regrade_mod, "_mostly_cached", lambda *a: False)  # the grade cache is full
    parallel = regrade(history.store, runs, parallel=True)

    assert took_parallel == [True]
    assert any(c.reviewed for c in serial.cells)  # the store holds what must carry over
    assert any(c.changed for c in serial.cells) and serial.removed
    assert parallel.removed == serial.removed
    assert parallel.bank_digests() == serial.bank_digests()
    assert [r.id for r in parallel.runs] == [r.id for r in serial.runs]
    # the same cells, verdicts, checks and evidence, in the same order
    assert [replace(c, text=None) for c in parallel.cells] == \
        [replace(c, text=None) for c in serial.cells]
    # parallel keeps reply texts only where a person needs them
    for p, s in zip(parallel.cells, serial.cells, strict=True):
        assert p.text in (None, s.text)
        if s.verdict == "needs_human":
            assert p.text == s.text


def test_a_bank_edited_while_the_workers_start_is_not_what_they_grade_by(tmp_path, monkeypatch,
                                                                         forced_parallel):
    """The report grades by the bank it loaded, in every process: a worker that read the file
    again graded by an edit the report's digests and kept rows know nothing of, and kept its
    cells under the bank as it was; put back, that bank was served the edit's grades."""
    history = History(tmp_path)
    history.bank("A", [("A-01", "c", "major"), ("A-02", "c", "major")])
    history.run("A", "v1", {"A-01": "pfh", "A-02": "pp"})
    store, runs = history.store, select_runs(history.store)
    path = Path(history.banks["A"])
    loaded = path.read_text(encoding="utf-8")
    edited = json.loads(loaded)
    for q in edited["questions"]:
        q["expect_facts"] = ["已退款"]  # no reply says it: every one fails
    started = regrade_mod._graded_parallel

    def edit_first(*args):
        path.write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
        return started(*args)

    with monkeypatch.context() as m:
        m.setattr(regrade_mod, "_mostly_cached", lambda *a: False)
        m.setattr(regrade_mod, "_graded_parallel", edit_first)
        racing = regrade(store, runs, parallel=True)
    assert forced_parallel == [True]
    path.write_text(loaded, encoding="utf-8")  # the edit is undone
    fresh = regrade(store, runs, cache=False)
    assert "pass" in {c.verdict for c in fresh.cells}
    assert [replace(c, text=None) for c in racing.cells] == \
        [replace(c, text=None) for c in fresh.cells]
    assert regrade(store, runs).cells == fresh.cells
