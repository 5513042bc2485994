"""The store's tests run on both backends: SQLite (a file per test) and PostgreSQL (a database
of its own for the test session, emptied before each test, dropped at the end).

PostgreSQL is a real part, like n8n and Chromium: when it cannot be reached these tests fail
with a message saying how to start it; they are never skipped.
"""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text

from exam.db import engine as db_engine
from exam.db.schema import TABLES
from exam.store import Store

ADMIN_URL = os.environ.get("EXAM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def _admin():
    return create_engine(db_engine.url_of(ADMIN_URL), isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def postgres_url():
    """A fresh database for this test session, dropped at the end."""
    admin = _admin()
    name = f"exam_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # any reason it cannot be reached is the same failure
        admin.dispose()
        pytest.fail(f"PostgreSQL is required for the store tests and cannot be reached at "
                    f"{db_engine.shown(ADMIN_URL)} ({type(exc).__name__}: "
                    f"{str(getattr(exc, 'orig', exc)).strip().splitlines()[0]}). Start it with: "
                    f"{START} (or point EXAM_TEST_POSTGRES at one)", pytrace=False)
    url = db_engine.url_of(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    url = url.replace("postgresql+psycopg://", "postgresql://", 1)
    yield url
    db_engine.dispose(url)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


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
