"""The store's tests run on both backends: SQLite (a file per test) and PostgreSQL (a database
of its own for the test session, emptied before each test, dropped at the end).

PostgreSQL is a real part, like n8n and Chromium: when it cannot be reached these tests fail
with a message saying how to start it; they are never skipped.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from exam.db import engine as db_engine
from exam.db.schema import TABLES
from exam.store import Store
from tests.backends import postgres_database


@pytest.fixture(scope="session")
def postgres_url():
    """A fresh database for this test session, dropped at the end (tests/backends.py)."""
    with postgres_database() as url:
        yield url
        db_engine.dispose(url)


def empty_postgres(url: str) -> str:
    """The session's database with today's schema and no rows."""
    s = Store(url)
    try:
        with s.tx() as db:
            names = ", ".join(t.name for t in TABLES)
            db.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    finally:
        s.close()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request):
    return request.param


@pytest.fixture
def store_target(backend, tmp_path, request):
    """An empty store's target (a path or a URL) on each backend."""
    if backend == "sqlite":
        return str(tmp_path / "exam.db")
    return empty_postgres(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_target):
    s = Store(store_target)
    yield s
    s.close()



@pytest.fixture
def hosts(store_target):
    """Two workers' stores (two connections, as on two hosts)."""
    from exam.store import Store

    a, b = Store(store_target), Store(store_target)
    yield a, b
    a.close()
    b.close()
