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
