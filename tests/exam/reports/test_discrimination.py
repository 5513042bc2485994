"""Each class produced from stored replies made for it."""

from __future__ import annotations

import math
import re

import pytest

from exam.reports import discrimination
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [(f"Q-{i:02d}", "boundary" if i <= 3 else "normal", "major") for i in range(1, 10)]


def build(history):
    return discrimination.build(regrade(history.store, select_runs(history.store)), "A")


def classes(report):
    return {q["case_no"]: q for q in report["agents"][0]["questions"]}


def test_every_class(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ffffff", "Q-02": "ffffff", "Q-03": "fff", "Q-04": "pppppp",
                            "Q-05": "ffffff", "Q-06": "pfpfpf", "Q-07": "ffffpf", "Q-08": "ttt",
                            "Q-09": "pp"})
    history.run("A", "v2", {"Q-01": "pppppp", "Q-02": "pppppp", "Q-03": "ppp", "Q-04": "pppppp",
                            "Q-05": "ffffff", "Q-06": "fpfpfp", "Q-07": "ffffff", "Q-08": "ttt",
                            "Q-09": "ff"})
    q = classes(build(history))
    assert q["Q-01"]["class"] == "discriminating" and not q["Q-01"]["low_evidence"]
    assert q["Q-01"]["q"] < 0.05
    assert q["Q-03"]["class"] == "discriminating" and q["Q-03"]["low_evidence"]  # 3 v 3
    # the advice holds after the correction (8 questions seen in 2 versions: 0.05 / 8)
    assert "6 repeats per version" in q["Q-03"]["note"]
    # Fisher's exact test of n/n against 0/n, two-sided, by hand: the two tables as extreme,
    # each 1 / C(2n, n)
    assert 2 / math.comb(12, 6) <= 0.05 / 8
    assert 2 / math.comb(10, 5) > 0.05 / 8
    assert q["Q-04"]["class"] == "regression_guard"
    assert q["Q-05"]["class"] == "always_failing"
    assert q["Q-05"]["failing_checks"][0]["name"] == "fact[0]"  # audit the rubric: the evidence
    assert q["Q-06"]["class"] == "flaky"
    assert q["Q-07"]["class"] == "near_floor"
    assert q["Q-08"]["class"] == "no_data"  # timeouts are never counted as answers
    assert q["Q-09"]["class"] == "discriminating" and q["Q-09"]["low_evidence"]


def test_underpowered_says_how_many_repeats_and_it_is_true(history):
    from exam.reports.stats import power_worse

    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    history.run("A", "v2", {"Q-01": "pff"})
    q = classes(build(history))["Q-01"]
    assert q["class"] == "underpowered"
    need = int(re.search(r"about (\d+) answered repeats of v2", q["note"]).group(1))
    level = float(re.search(r"one-sided Fisher exact at ([\d.e-]+)", q["note"]).group(1))
    # the statement holds under its own method: need repeats reach 80% power, one fewer don't
    assert power_worse(3, 3, 1 / 3, need, level) >= 0.8
    assert power_worse(3, 3, 1 / 3, need - 1, level) < 0.8
    assert need > 3


def test_three_versions_name_the_pairs_and_the_latest_direction(history):
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "pppppppppp"})
    history.run("A", "v2", {"Q-01": "pppppppppp"})
    history.run("A", "v3", {"Q-01": "ffffffffff"})
    q = classes(build(history))["Q-01"]
    assert q["class"] == "discriminating"
    assert {(p["old"], p["new"], p["direction"]) for p in q["pairs"]} == {
        ("v1", "v3", "worse"), ("v2", "v3", "worse")}
    assert q["latest"]["direction"] == "worse" and q["latest"]["against"] == "v2"
    assert "latest v3 against v2: worse" in q["note"]


def test_single_repeat_difference_is_discriminating_low_evidence(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "p", "Q-02": "p"})
    history.run("A", "v2", {"Q-01": "f", "Q-02": "p"})
    report = build(history)
    q = classes(report)
    assert (q["Q-01"]["class"], q["Q-01"]["low_evidence"]) == ("discriminating", True)
    assert report["agents"][0]["summary"]["headline"] == "1 of 2 questions separate versions"


def test_summary_pass_k_and_wilson(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "ppf", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp"})
    s = build(history)["agents"][0]["summary"]
    v1 = s["per_version"][0]
    assert v1["version"] == "v1"
    assert v1["pass_rate"] == pytest.approx((2 / 3 + 1) / 2)  # the mean of its questions
    assert v1["pass_k"] == 0.5  # Q-01 pass^3 = 0, Q-02 = 1
    assert 0 < v1["wilson"][0] < 5 / 6 < v1["wilson"][1] <= 1


def test_bh_across_questions(history):
    history.bank("A", CASES[:3])
    history.run("A", "v1", {"Q-01": "pppppp", "Q-02": "pppppf", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "ffffff", "Q-02": "ffffpf", "Q-03": "ppp"})
    q = classes(build(history))
    assert q["Q-02"]["q"] >= q["Q-02"]["p"]
