from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.backends import STORE_BACKENDS, store_at

ROOT = Path(__file__).resolve().parent.parent
BANK_DIR = ROOT / "bank"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the developer's real store, registry or LINE credentials."""
    for key in list(os.environ):
        if key.startswith(("EXAM_", "LINE_")):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("EXAM_DB", str(tmp_path / "exam.db"))
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture(params=STORE_BACKENDS)
def store_url(request, tmp_path):
    """What EXAM_DB is set to: a SQLite file, or a fresh PostgreSQL database (dropped after).

    tests/backends.py says which backends run; PostgreSQL that cannot be reached fails."""
    with store_at(request.param, tmp_path) as url:
        yield url
