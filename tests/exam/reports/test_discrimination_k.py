"""pass^k at a fixed k, question-level intervals, and the `new` class."""

from __future__ import annotations

import math

from exam.reports import discrimination
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [("Q-01", "c", "major"), ("Q-02", "c", "major"), ("Q-03", "c", "major")]


def build(history, **kw):
    return discrimination.build(regrade(history.store, select_runs(history.store)), **kw)


def test_pass_k_uses_a_fixed_k_whatever_the_repeats(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "pppf", "Q-02": "ppppppppff"})
    history.run("A", "v2", {"Q-01": "pppf", "Q-02": "ppppppppff"})
    a = build(history)["agents"][0]
    q1 = a["questions"][0]["pass_rates"][0]
    q2 = a["questions"][1]["pass_rates"][0]
    assert q1["pass_k"] == math.comb(3, 3) / math.comb(4, 3)
    assert q2["pass_k"] == math.comb(8, 3) / math.comb(10, 3)
    assert a["summary"]["per_version"][0]["k"] == 3
    a2 = build(history, k=2)["agents"][0]
    assert a2["questions"][0]["pass_rates"][0]["pass_k"] == math.comb(3, 2) / math.comb(4, 2)


def test_version_interval_resamples_questions_and_is_seeded(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "pppppp", "Q-02": "pppppp", "Q-03": "ffffff"})
    history.run("A", "v2", {"Q-01": "pppppp", "Q-02": "pppppp", "Q-03": "ffffff"})
    pv = build(history)["agents"][0]["summary"]["per_version"][0]
    assert pv["bootstrap"] == build(history)["agents"][0]["summary"]["per_version"][0]["bootstrap"]
    # three questions, one always failing: the question-level interval is far wider than cells'
    lo, hi = pv["bootstrap"]
    wlo, whi = pv["wilson"]
    assert hi - lo > whi - wlo


def test_a_question_added_later_is_new_not_failing(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.bank("A", CASES)
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "fff"})
    qs = {q["case_no"]: q["class"] for q in build(history)["agents"][0]["questions"]}
    assert qs["Q-03"] == "new"
