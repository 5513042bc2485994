"""The CLI's reports re-grade as a CLI process may: kept runs are read without the reply
texts no report of theirs shows (reading 100,000 texts was a third of a cached
discrimination report), and the report is the same as one read with every text."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.store import Store
from tests.exam.reports.test_graded_runs import kept, small_history


def report(*args: str) -> dict:
    result = CliRunner().invoke(main, ["report", *args, "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("kind", ["scorecard", "discrimination"])
def test_a_report_over_kept_runs_reads_no_reply_texts(tmp_path, monkeypatch, kind):
    history = small_history(tmp_path)
    db = str(history.store.path)
    first = report(kind, "--db", db)  # grades, and keeps the finished runs
    assert kept(history.store)
    with monkeypatch.context() as m:
        def refuse(*args, **kwargs):
            raise AssertionError("every reply text was read")

        m.setattr(Store, "cell_texts", refuse)
        again = report(kind, "--db", db)
    assert again == first
