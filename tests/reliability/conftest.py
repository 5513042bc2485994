"""The reliability suite: each test adds rows to the table in docs/reliability.md.

Rows are written to tests/artifacts/reliability.json and .md when the session ends.
`EXAM_LONG_TESTS=1` (set by .ci/run) runs the long variants (more kill trials).
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT

LONG = os.environ.get("EXAM_LONG_TESTS") == "1"
ROWS: list[dict] = []


def record(area: str, tried: str, times: int, happened: str, lost: str = "nothing") -> None:
    ROWS.append({"area": area, "tried": tried, "times": times, "happened": happened,
                 "lost": lost})


@pytest.fixture
def table():
    return record


def pytest_sessionfinish(session, exitstatus):
    if not ROWS:
        return
    out = ROOT / "tests" / "artifacts"
    out.mkdir(exist_ok=True)
    (out / "reliability.json").write_text(json.dumps(ROWS, ensure_ascii=False, indent=2))
    lines = ["| area | what was tried | times | what happened | lost |", "|---|---|---|---|---|"]
    lines += [f"| {r['area']} | {r['tried']} | {r['times']} | {r['happened']} | {r['lost']} |"
              for r in ROWS]
    (out / "reliability.md").write_text("\n".join(lines) + "\n")
