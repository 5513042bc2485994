"""Every report in every format; the machine formats parse."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from graders import GRADER_VERSION

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major")]


@pytest.fixture
def db(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "fft"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp"})
    return str(history.tmp / "exam.db")


# (command, its exit status on this history, what its text rendering must say)
COMMANDS = [
    (("report", "scorecard"), 0, ["A v1 ", "A v2 ", "CRITICAL failing: Q-01",
                                  r"FAIL\s+Q-02 \(major, c\)  pass 0/3"]),
    # hold comes before incomplete: a regression proven on what arrived is a "no" anyway
    (("compare", "A", "v1", "v2"), 1, [r"A: v1 \(runs 1\) → v2",
                                       r"VERDICT: HOLD vs v1, last shipped  \(exit 1\)",
                                       r"hold: Q-01 3/3 → 0/3 .*; also incomplete: old 5/6 cells "
                                       r"answered; not answered: Q-02 \(1 timeout\)",
                                       "CRITICAL regression: Q-01",
                                       r"REGRESSION\s+Q-01 .* 3/3 → 0/3"]),
    (("report", "discrimination"), 0, ["A: 2 of 2 questions separate versions",
                                       r"Q-01\s+█ 3/3\s+0/3\s+discriminating",
                                       r"Q-02\s+0/2\s+█ 3/3\s+discriminating"]),
    (("report", "rebalance"), 0, [r"A: 2 run\(s\), versions v1, v2", r"Q-01\s+\w+\s+3/3\s+0/3",
                                  r"Q-02\s+\w+\s+0/2\s+3/3"]),
]


def tables(markdown: str) -> list[list[list[str]]]:
    """Every table: its lines' cells; an escaped bar (``\\|``) stays inside its cell."""
    found: list[list[list[str]]] = []
    previous = ""
    for line in markdown.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                found.append([])
            found[-1].append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        previous = line
    return found


@pytest.mark.parametrize(("cmd", "status", "says"), COMMANDS, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else None)
@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "csv", "junit", "html"])
def test_every_report_in_every_format(db, cmd, status, says, fmt):
    result = CliRunner().invoke(main, [*cmd, "--format", fmt, "--db", db], catch_exceptions=False)
    out = result.output
    # compare exits 1 on a critical regression, in every format; the reports exit 0
    assert result.exit_code == status, out
    kind = cmd[1] if cmd[0] == "report" else cmd[0]
    if fmt == "json":
        data = json.loads(out)
        assert data["grader_version"] == GRADER_VERSION
        cases = json.dumps(data, ensure_ascii=False)
        assert "Q-01" in cases and "Q-02" in cases
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert {r["case_no"] for r in rows} == {"Q-01", "Q-02"}
        assert {r["agent"] for r in rows} == {"A"}
    elif fmt == "junit":
        root = ET.fromstring(out)
        assert root.get("name") == f"agent-exam {kind}"
        cases = root.findall(".//testcase")
        # compare adds the verdict of the change as a testcase of its own
        assert {c.get("name") for c in cases} == {"Q-01", "Q-02"} | (
            {"verdict"} if kind == "compare" else set())
    elif fmt == "markdown":
        assert out.startswith(f"# agent-exam {kind}\n\nGrader {GRADER_VERSION}")
        found = tables(out)
        for header, rule, *body in found:
            assert set(rule) == {"---"}
            assert all(len(row) == len(header) for row in [rule, *body])
        (header, _, *body), = [t for t in found if "case_no" in t[0]]
        # compare's table holds the questions that moved; Q-02 (0/2 → 3/3) has too few old
        # answers to count as fixed
        assert {row[header.index("case_no")] for row in body} == (
            {"Q-01"} if kind == "compare" else {"Q-01", "Q-02"})
    elif fmt == "html":
        assert out.startswith("<!doctype html>") and "<svg" in out
        assert "Q-01" in out and "Q-02" in out
        assert_self_contained(out)
    else:
        assert out.startswith(f"grader {GRADER_VERSION}")
        for pattern in says:
            assert re.search(pattern, out), f"{pattern!r} not in:\n{out}"


def test_junit_failure_message_is_the_evidence(db):
    out = CliRunner().invoke(main, ["report", "scorecard", "--format", "junit", "--db", db,
                                    "--version", "v2"]).output
    root = ET.fromstring(out)
    failure = root.find(".//testcase[@name='Q-01']/failure")
    assert failure is not None
    assert "fact[0] fail" in failure.get("message") and "已出貨" in failure.get("message")


def test_csv_keeps_infrastructure_trouble_apart(db):
    out = CliRunner().invoke(main, ["report", "scorecard", "--format", "csv", "--db", db]).output
    rows = list(csv.DictReader(io.StringIO(out)))
    timeout = [r for r in rows if r["run_status"] == "timeout"]
    assert len(timeout) == 1 and timeout[0]["verdict"] == ""


def assert_self_contained(page: str) -> None:
    """Nothing a browser would fetch: no src=, no stylesheet link, no URL but the SVG and
    XML namespaces (and pygal's own comment naming its home page)."""
    import re

    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link rel=\"stylesheet\"" not in page and "@import" not in page
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                    "http://pygal.org--", "http://github.com/Kozea/pygal--"}, urls


def test_the_html_report_escapes_replies_and_keeps_chinese(history):
    from exam.reports import html

    out = html.mark_text("<script>alert(1)</script> 下次購物享 9 折優惠", ["9 折"])
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "<mark>9 折</mark>" in out
    assert str(html.marks("asserted: «<b>» here")) == "asserted: <mark>&lt;b&gt;</mark> here"
    assert html.as_json({"msg": "我是老客戶"}) == '{\n  "msg": "我是老客戶"\n}'
