from __future__ import annotations

import json

from click.testing import CliRunner

from exam.cli.main import main
from exam.reports import compare
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major"), ("Q-03", "c", "major"),
         ("Q-04", "c", "major"), ("Q-05", "c", "minor")]


def setup(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "fff", "Q-03": "ppp", "Q-04": "ppp",
                            "Q-05": "pfp"}, figures={"Q-03": {"tokens": 900}})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "pfp", "Q-04": "ppp",
                            "Q-05": "pfp"}, figures={"Q-03": {"tokens": 1500}})


def test_groups_and_checks_moved(history):
    setup(history)
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    ids = {g: [x["case_no"] for x in r[g]]
           for g in ("regressions", "undecided", "fixes", "flaky", "unchanged")}
    # 3/3 → 0/3 on a critical question holds (p = 0.05, critical alpha 0.1); 3/3 → 2/3 is
    # a drop too small to show with three repeats: undecided, not "newly flaky"
    assert ids == {"regressions": ["Q-01"], "undecided": ["Q-03"], "fixes": ["Q-02"],
                   "flaky": [], "unchanged": ["Q-04", "Q-05"]}
    assert r["verdict"] == "hold"
    assert r["critical_regressions"] == ["Q-01"]
    moved = {m["check"]: m for m in r["regressions"][0]["checks_moved"]}
    assert moved["fact[0]"]["direction"] == "worse"
    assert moved["forbidden[0]"]["evidence"]["evidence"].startswith("asserted:")
    assert r["cost"]["tokens"]["old"]["p50"] == 1000


def run_cli(history, *args):
    env = {"EXAM_DB": str(history.tmp / "exam.db")}
    return CliRunner().invoke(main, ["compare", *args], env=env, catch_exceptions=False)


def test_exit_1_on_a_real_regression(history):
    setup(history)
    result = run_cli(history, "A", "v1", "v2")
    assert result.exit_code == 1
    assert "CRITICAL regression: Q-01" in result.output


def test_exit_0_without_regression(history):
    setup(history)
    history.run("A", "v3", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "pfp", "Q-04": "ppp",
                            "Q-05": "pfp"})
    result = run_cli(history, "A", "v2", "v3")
    assert result.exit_code == 0
    assert result.output.splitlines()[1].startswith("VERDICT: SHIP")


def test_fail_on_any_fail_and_never(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "p", "Q-02": "f"})
    history.run("A", "v2", {"Q-01": "p", "Q-02": "f"})
    assert run_cli(history, "A", "v1", "v2").exit_code == 0
    assert run_cli(history, "A", "v1", "v2", "--fail-on", "any-fail").exit_code == 1
    history.run("A", "v3", {"Q-01": "f", "Q-02": "f"})
    assert run_cli(history, "A", "v1", "v3", "--fail-on", "never").exit_code == 0


def test_json_keys(history):
    setup(history)
    out = json.loads(run_cli(history, "A", "v1", "v2", "--format", "json").output)
    assert {"agent", "old", "new", "regressions", "fixes", "flaky", "unchanged", "cost",
            "grader_version", "bank_digests"} <= set(out)


def test_unknown_version_is_a_clear_error(history):
    setup(history)
    result = run_cli(history, "A", "v1", "v9")
    assert result.exit_code == 2
    assert "no stored run of A version 'v9' (versions: v1, v2)" in result.output


def test_changed_question_is_flagged(history):
    setup(history)
    data = json.loads((history.tmp / "A.json").read_text())
    data["questions"][3]["expect_facts"] = ["備貨"]
    (history.tmp / "A.json").write_text(json.dumps(data, ensure_ascii=False))
    result = run_cli(history, "A", "v1", "v2")
    assert "rubric changed since the runs for Q-04" in result.output


def test_checks_moved_read_from_kept_runs_equal_fresh_ones(history):
    """Cells read from a kept run share one list of checks per distinct outcome, and the
    rates count each list once per cell that holds it."""
    setup(history)
    runs = select_runs(history.store)
    fresh = compare.build(regrade(history.store, runs, cache=False), "A", "v1", "v2")
    regrade(history.store, runs)  # keeps the finished runs
    kept = regrade(history.store, runs)
    shared = {id(c.checks) for c in kept.cells}
    assert len(shared) < len(kept.cells)  # what this test is about
    assert compare.build(kept, "A", "v1", "v2") == fresh
    moved = {(q["case_no"], m["check"]): (m["old_fail_rate"], m["new_fail_rate"])
             for g in ("regressions", "undecided", "fixes") for q in fresh[g]
             for m in q["checks_moved"]}
    assert moved[("Q-03", "fact[0]")] == (0.0, 1 / 3)
    assert moved[("Q-01", "fact[0]")] == (0.0, 1.0)  # three failing cells, one list
    assert moved[("Q-02", "fact[0]")] == (1.0, 0.0)


def test_an_html_scorecard_of_one_version_says_its_verdict_first(history):
    """The file a CI job keeps says what the dashboard's scorecard page says: the version's
    verdict against the last one shipped before it, with a critical failure beside it."""
    import re

    setup(history)
    db = str(history.store.path)
    out = CliRunner().invoke(main, ["report", "scorecard", "--agent", "A", "--version", "v2",
                                    "--format", "html", "--db", db])
    assert out.exit_code == 0, out.output
    verdict = re.search(r'<div id="verdict"[^>]*data-verdict="(\w+)"', out.output)
    assert verdict and verdict.group(1) == "hold"
    assert out.output.index('id="verdict"') < out.output.index('id="pass-rate"')
    assert "Critical failing:" in out.output and 'href="None"' not in out.output
    first = CliRunner().invoke(main, ["report", "scorecard", "--agent", "A", "--version", "v1",
                                      "--format", "html", "--db", db])
    assert first.exit_code == 0 and "No verdict: " in first.output
    both = CliRunner().invoke(main, ["report", "scorecard", "--agent", "A", "--format",
                                     "html", "--db", db])
    assert both.exit_code == 0 and 'id="verdict"' not in both.output  # two versions: no one verdict
