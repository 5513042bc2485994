"""Fixtures shared by the report tests."""

from __future__ import annotations

import os

import pytest

from exam.reports import regrade as regrade_mod


@pytest.fixture
def forced_parallel(monkeypatch) -> list[bool]:
    """``regrade(..., parallel=True)`` takes the parallel path even on a small store and one
    core; the list records, per call, whether the parallel path ran (True) or declined."""
    took: list[bool] = []
    original = regrade_mod._graded_parallel

    def spy(*args):
        result = original(*args)
        took.append(result is not None)
        return result

    monkeypatch.setattr(regrade_mod, "PARALLEL_MIN", 1)  # small stores take the parallel path
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(regrade_mod, "_graded_parallel", spy)
    return took
