from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_ruff_is_clean():
    # the ruff installed with this Python (a venv's bin/, wherever it is: a git worktree runs
    # the main checkout's), else the checkout's .venv, else PATH
    ruff = (shutil.which("ruff", path=str(Path(sys.executable).parent))
            or shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff"))
    if ruff is None:  # a missing part fails, never skips: the suite would pass unlinted
        pytest.fail("ruff is not installed: pip install -e '.[test]' (make test does)")
    paths = [p for p in ("exam", "graders", "tests", "bench") if (ROOT / p).is_dir()]
    proc = subprocess.run([ruff, "check", *paths], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
