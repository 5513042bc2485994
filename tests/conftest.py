from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.backends import DROPPER, STORE_BACKENDS, store_at

ROOT = Path(__file__).resolve().parent.parent
BANK_DIR = ROOT / "bank"

# The fast tier (`make check`: `pytest -m "not slow"`) is what is left once every test that needs
# a real part beyond SQLite and 127.0.0.1 HTTP is marked `slow` (long waits and kill -9 are
# marked by hand, where they are). Marked here from what a test uses, so a new test lands in
# the right tier without a list to keep:
SLOW_DIRS = ("tests/n8n/", "tests/reliability/")  # a real n8n; kill -9, load, faults, several hosts
SLOW_FIXTURES = {
    "postgres_url", "pg_url",  # a PostgreSQL database (tests/backends.py)
    "n8n", "chromium", "browser",  # a real n8n, a real headless Chromium
}
SLOW_PARAM = "postgresql"  # the PostgreSQL variant of a test run on both backends
SLOW_MODULES = ("tests.processes",)  # `exam serve`, `exam worker`, gunicorn as real processes


def why_slow(item: pytest.Item) -> str | None:
    """Why ``item`` is left out of the fast tier (None: it is in it)."""
    path = item.path.as_posix().removeprefix(f"{ROOT.as_posix()}/")
    if path.startswith(SLOW_DIRS):
        return f"in {path.split('/')[1]}/"
    if used := SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return f"uses {', '.join(sorted(used))}"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(isinstance(v, str) and v == SLOW_PARAM
                                    for v in callspec.params.values()):
        return "on PostgreSQL"
    module = getattr(item, "module", None)
    if module is not None and any(_defined_in(v) in SLOW_MODULES for v in vars(module).values()):
        return "starts real service processes (tests/processes.py)"
    return None


def _defined_in(value: object) -> str | None:
    """The module a test module's global comes from (itself, for a module)."""
    if isinstance(value, ModuleType):
        return value.__name__
    return getattr(value, "__module__", None) if callable(value) else None


def pytest_sessionfinish(session, exitstatus):
    """The test databases given back during the session are dropped before it ends."""
    for failed in DROPPER.wait():
        print(f"\ntests/backends.py: a test database was not dropped: {failed}", file=sys.stderr)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is None and why_slow(item):
            item.add_marker(pytest.mark.slow)


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
