"""The throwaway PostgreSQL database behind the ``store_url`` fixture: made, usable, dropped;
and a server that cannot be reached fails the test (never a skip)."""

from __future__ import annotations

import subprocess

import pytest

from tests.backends import DROPPER, PG_SERVER, postgres_database, store_at


def databases() -> set[str]:
    done = subprocess.run(["psql", "-X", "-At", "-d", f"{PG_SERVER}/postgres", "-c",
                           "SELECT datname FROM pg_database"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"PostgreSQL at {PG_SERVER}: {done.stderr}"
    return set(done.stdout.split())


@pytest.mark.slow  # a PostgreSQL database (tests/backends.py)
def test_a_database_is_made_for_the_test_and_dropped_after():
    with postgres_database() as url:
        name = url.rsplit("/", 1)[1]
        assert name.startswith("exam_test_") and name in databases()
        made = subprocess.run(["psql", "-X", "-q", "-At", "-d", url, "-c",
                               "CREATE TABLE t (x int); INSERT INTO t VALUES (7); "
                               "SELECT x FROM t"], capture_output=True, text=True, timeout=60)
        assert made.stdout.strip() == "7", made.stderr
    assert name not in databases()


@pytest.mark.slow  # a PostgreSQL database (tests/backends.py)
def test_a_database_given_back_for_later_is_dropped_by_the_end_of_the_session():
    with postgres_database(drop="later") as url:
        name = url.rsplit("/", 1)[1]
        assert name in databases()
    assert DROPPER.wait() == []  # as pytest_sessionfinish (tests/conftest.py) does
    assert name not in databases()


def test_an_unreachable_server_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match="need a running PostgreSQL"):
        with postgres_database("postgresql://postgres@127.0.0.1:9"):
            pass


@pytest.mark.slow  # a PostgreSQL database (tests/backends.py)
def test_a_postgresql_store_url_is_a_new_store_with_the_schema_a_migration_makes(tmp_path):
    """store_url's PostgreSQL database is copied from one migrated this session: the tables
    and columns of a database Alembic migrates, no rows, today's schema version."""
    from exam.db import engine as db_engine
    from exam.db.schema import SCHEMA_VERSION
    from exam.store import Store

    def columns(url: str) -> str:
        done = subprocess.run(["psql", "-X", "-At", "-d", url, "-c",
                               "SELECT table_name, column_name, data_type, column_default "
                               "FROM information_schema.columns WHERE table_schema = 'public' "
                               "ORDER BY 1, 2"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with store_at("postgresql", tmp_path) as copied, postgres_database() as migrated:
        Store(migrated).close()
        db_engine.dispose(migrated)
        assert columns(copied) == columns(migrated) and "runs|lease_token" in columns(copied)
        store = Store(copied)
        try:
            assert store.schema_version() == SCHEMA_VERSION and store.list_runs() == []
        finally:
            store.close()
