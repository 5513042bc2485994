"""No Python reprs (dicts, lists, None) in anything a person reads."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from exam.cli.main import main

REPR = re.compile(r"\{'|\['|(?<![\w\]])\[\d+(, \d+)*\]|\bNone\b")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
@pytest.mark.parametrize("command", [["report", "scorecard"], ["compare", "A", "v1", "v2"],
                                     ["report", "discrimination"], ["report", "rebalance"],
                                     ["runs"]])
def test_reports_print_no_python_reprs(history, command, fmt):
    history.bank("A", [("A-01", "c1", "critical"), ("A-02", "c1", "major"),
                       ("A-03", "c2", "major")])
    history.run("A", "v1", {"A-01": "ppp", "A-02": "pfh", "A-03": "ttp"})
    history.run("A", "v2", {"A-01": "pfp", "A-02": "ppp", "A-03": "ppp"})
    args = [*command, "--db", str(history.tmp / "exam.db")]
    if command != ["runs"] or fmt == "text":
        args += ["--format", fmt] if command != ["runs"] else []
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.output.strip()
    found = REPR.search(result.output)
    assert not found, f"a Python repr in `exam {' '.join(command)}`: {found.group(0)!r}\n{result.output}"
