"""The store backends the multi-instance tests run on, and a throwaway PostgreSQL database.

``STORE_BACKENDS`` is what the ``store_url`` fixture (tests/conftest.py) yields: both, always.
An unreachable PostgreSQL fails these tests with the command that starts it; never a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

STORE_BACKENDS = ["sqlite", "postgresql"]
# the server the throwaway databases are made on (EXAM_TEST_POSTGRES points elsewhere)
PG_SERVER = os.environ.get("EXAM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
PG_ADMIN_DB = "postgres"
PG_START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def _psql(server: str, sql: str) -> None:
    """One statement as the admin user; a failure to reach the server fails the test."""
    psql = shutil.which("psql")
    if psql is None:
        pytest.fail("psql is not on PATH: the PostgreSQL tests need the PostgreSQL client "
                    "(apt-get install postgresql-client)", pytrace=False)
    done = subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d",
                           f"{server}/{PG_ADMIN_DB}", "-c", sql],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.fail(f"PostgreSQL at {server} refused {sql.split()[0]} {sql.split()[1]}: "
                    f"{done.stderr.strip()[:300]} — these tests need a running PostgreSQL "
                    f"(start it with: {PG_START})", pytrace=False)


@contextmanager
def store_at(backend: str, folder: Path) -> Iterator[str]:
    """What EXAM_DB is set to for ``backend``: a SQLite file in ``folder``, or a fresh
    PostgreSQL database (dropped afterwards)."""
    if backend == "sqlite":
        yield str(folder / "exam.db")
    elif backend == "postgresql":
        with postgres_database() as url:
            yield url
    else:
        raise ValueError(f"unknown store backend {backend!r}")


@contextmanager
def postgres_database(server: str = PG_SERVER) -> Iterator[str]:
    """A new, empty database ``exam_test_<random>``; its URL, and it is dropped afterwards."""
    name = f"exam_test_{secrets.token_hex(6)}"
    _psql(server, f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        _psql(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def marked_newer(target: str) -> Iterator[int]:
    """The store at ``target`` marked one schema newer than this code, as a newer agent-exam
    leaves it (SQLite's user_version, Alembic's version row); marked back afterwards, since a
    PostgreSQL test's database serves the next tests. Yields the newer number."""
    from sqlalchemy import text

    from exam.db.engine import engine_for
    from exam.db.schema import SCHEMA_VERSION

    def mark(version: int) -> None:
        with engine_for(target).begin() as db:
            if db.dialect.name == "sqlite":
                db.exec_driver_sql(f"PRAGMA user_version={version}")
            else:
                db.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": str(version)})

    mark(SCHEMA_VERSION + 1)
    try:
        yield SCHEMA_VERSION + 1
    finally:
        mark(SCHEMA_VERSION)
