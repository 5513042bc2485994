from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the test extra: make test installs it)")
    proc = subprocess.run([ruff, "check", "exam", "graders", "tests", "bench"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
