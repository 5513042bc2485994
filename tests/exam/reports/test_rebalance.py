from __future__ import annotations

import datetime as dt
import json

from click.testing import CliRunner

from exam.cli import main
from exam.reports import rebalance
from exam.reports.regrade import regrade, select_runs

CASES = [("G-01", "guards", "major"), ("G-02", "guards", "major"), ("G-03", "guards", "major"),
         ("G-04", "guards", "major"), ("B-01", "boundary", "major"), ("B-02", "boundary", "major"),
         ("X-01", "broken", "major")]


def setup(history):
    history.bank("A", CASES)
    for version, b in (("v1", "ffff"), ("v2", "pppp"), ("v3", "pppp")):
        history.run("A", version, {"G-01": "pppp", "G-02": "pppp", "G-03": "pppp",
                                   "G-04": "pppp", "B-01": b, "B-02": b, "X-01": "ffff"})


def test_advice(history):
    setup(history)
    report = rebalance.build(regrade(history.store, select_runs(history.store)))
    a = report["agents"][0]
    texts = [adv["text"] for adv in a["advice"]]
    retire = next(adv for adv in a["advice"] if adv["action"] == "retire_or_harden")
    assert retire["keep"] == ["G-01", "G-02"] and retire["cases"] == ["G-03", "G-04"]
    assert any(adv["action"] == "audit_rubric" and adv["cases"] == ["X-01"] for adv in a["advice"])
    assert any("fact[0]" in t for t in texts if t.startswith("X-01"))
    rows = {r["case_no"]: r for r in a["questions"]}
    assert rows["B-01"]["difficulty"] == 8 / 12
    assert rows["B-01"]["spread"] == 1.0
    assert rows["B-01"]["item_rest"] is not None and rows["B-01"]["item_rest"] > 0.9
    assert rows["G-01"]["item_rest"] is None  # no variance: undefined, not zero


def test_write_tags_changes_only_tags(history):
    setup(history)
    before = json.loads((history.tmp / "A.json").read_text())
    result = CliRunner().invoke(main, ["report", "rebalance", "--write-tags", "--db",
                                       str(history.tmp / "exam.db")], catch_exceptions=False)
    assert result.exit_code == 0
    after = json.loads((history.tmp / "A.json").read_text())
    tags = {q["case_no"]: q.pop("tags") for q in after["questions"]}
    assert after == before
    assert tags["B-01"] == ["class:discriminating", "difficulty:0.67"]
    assert tags["X-01"][0] == "class:always_failing"


def test_since_filters_runs(history):
    setup(history)
    tomorrow = (dt.date.today() + dt.timedelta(days=1)).isoformat()
    result = CliRunner().invoke(main, ["report", "rebalance", "--since", tomorrow, "--db",
                                       str(history.tmp / "exam.db")])
    assert result.exit_code == 2 and "no stored runs match since" in result.output
