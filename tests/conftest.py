from __future__ import annotations

import os
from pathlib import Path

import pytest

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
