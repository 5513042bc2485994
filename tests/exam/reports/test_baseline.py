"""The baseline of a change is the version that shipped, never merely the previous one."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.reports import baseline
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major"), ("Q-03", "c", "minor")]


def _cli(history, *args):
    return CliRunner().invoke(main, [*args, "--db", str(history.tmp / "exam.db")])


@pytest.fixture
def held(history):
    """v1 passes everything; v2 fails the critical Q-01 (hold); v3 still fails it."""
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v3", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    return history


def test_a_held_version_never_becomes_the_baseline(held):
    result = _cli(held, "compare", "A", "v3")
    assert result.exit_code == 1, result.output
    assert "VERDICT: HOLD vs v1, last shipped" in result.output
    out = json.loads(_cli(held, "compare", "A", "v3", "--format", "json").output)
    assert out["old"] == "v1" and out["verdict"] == "hold"
    assert out["baseline"]["version"] == "v1" and out["baseline"]["how"] == "first"
    assert [h["case_no"] for h in out["decision"]["hold"]] == ["Q-01"]


def test_the_previous_version_asked_for_says_what_shipped_and_what_still_fails(held):
    # v2 → v3 changed nothing: the word may be ship, but the carried failure is on its line
    result = _cli(held, "compare", "A", "v2", "v3")
    first = next(line for line in result.output.splitlines() if line.startswith("VERDICT"))
    assert "vs v2, as asked; last shipped: v1" in first
    assert "still failing since v2: Q-01 (critical, 0/3 → 0/3)" in first
    md = _cli(held, "compare", "A", "v2", "v3", "--format", "markdown").output
    assert "still failing since v2: Q-01" in md


def test_a_version_that_ships_becomes_the_baseline(history):
    history.bank("A", CASES)
    for v in ("v1", "v2", "v3"):
        history.run("A", v, {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    out = json.loads(_cli(history, "compare", "A", "v3", "--format", "json").output)
    assert out["old"] == "v2" and out["baseline"]["how"] == "verdict"
    assert out["baseline"]["why"] == "its verdict against v1 was ship"
    shown = _cli(history, "ship", "A")
    assert shown.exit_code == 0 and "A: shipped v3 (its verdict against v2 was ship)" in shown.output


def test_a_version_shipped_by_hand_is_the_baseline_from_then_on(held):
    result = _cli(held, "ship", "A", "v2", "--reason", "Q-01's rubric is wrong", "--by", "ann")
    assert result.exit_code == 0, result.output
    (rec,) = held.store.ship_records("A")
    assert (rec.version, rec.shipped_by, rec.reason, rec.source) == (
        "v2", "ann", "Q-01's rubric is wrong", "cli")
    assert "A: shipped v2 (shipped by hand by ann" in _cli(held, "ship", "A").output
    # v3 was first run before the decision: its baseline stays v1 ...
    assert json.loads(_cli(held, "compare", "A", "v3", "--format", "json").output)["old"] == "v1"
    # ... a version run after it is compared with v2, and says why
    held.run("A", "v4", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    out = json.loads(_cli(held, "compare", "A", "v4", "--format", "json").output)
    assert out["old"] == "v2" and out["baseline"]["how"] == "by_hand"
    assert "by ann" in out["baseline"]["why"] and "Q-01's rubric is wrong" in out["baseline"]["why"]
    # Q-01 failing was accepted with v2: v4 ships against it, and says Q-01 still fails
    assert out["verdict"] == "ship" and [x["case_no"] for x in out["still_failing"]] == ["Q-01"]


def test_the_walk_is_recursive(history):
    # v2 holds against v1; v3 (fixed) ships against v1; v4 is then compared with v3
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v3", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v4", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    regraded = regrade(history.store, select_runs(history.store))
    steps, shipped = baseline.walk(regraded, "A", [])
    assert [(s.version, s.baseline and s.baseline.version, s.word) for s in steps] == [
        ("v1", None, None), ("v2", "v1", "hold"), ("v3", "v1", "ship"), ("v4", "v3", "ship")]
    assert shipped.version == "v4"


def test_the_first_version_has_no_baseline(held):
    result = _cli(held, "compare", "A", "v1")
    assert result.exit_code == 2 and "first version" in result.output
    # compared by hand with a later version: said as asked, never "last shipped"
    back = json.loads(_cli(held, "compare", "A", "v3", "v1", "--format", "json").stdout)
    assert back["baseline"]["label"] == "v3, as asked"


@pytest.mark.parametrize("args, message", [
    (("ship", "A", "v9"), "no stored run of A version 'v9'"),
    (("ship", "A", "v 2"), "version label 'v 2' is not usable"),
    (("compare", "A", "v1", "v2", "v3"), "expected AGENT [OLD] NEW, found 3 versions"),
])
def test_bad_input_is_one_line(held, args, message):
    result = _cli(held, *args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert held.store.ship_records() == []
