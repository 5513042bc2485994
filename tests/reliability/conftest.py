"""The reliability suite: each test adds rows to the table in docs/reliability.md.

Rows are written to tests/artifacts/reliability.json and .md when the session ends
(tests/reliability/table.py; tests/conftest.py writes them, gathered from every worker).
`EXAM_LONG_TESTS=1` (set by .ci/run) runs the long variants (more kill trials).
"""

from __future__ import annotations

import os

import pytest

from tests.reliability.table import record

LONG = os.environ.get("EXAM_LONG_TESTS") == "1"


@pytest.fixture
def table():
    return record
