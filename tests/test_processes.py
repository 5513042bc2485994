"""How tests/processes.py finds gunicorn: beside the running Python (a venv's bin/, wherever
it is), and a clear failure, not a bare FileNotFoundError, when it is not installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest


def test_gunicorn_is_the_one_installed_with_this_python():
    from tests.processes import gunicorn_command

    command = gunicorn_command()
    assert command[0] in (str(Path(sys.executable).parent / "gunicorn"), sys.executable)
    ran = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and "gunicorn" in ran.stdout + ran.stderr, ran.stderr


def test_gunicorn_missing_fails_the_test_saying_so(monkeypatch, tmp_path):
    from tests.processes import gunicorn_command

    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    with pytest.raises(pytest.fail.Exception, match=r"gunicorn is not installed for .*/bin/python"):
        gunicorn_command()
