"""The throwaway PostgreSQL database behind the ``store_url`` fixture: made, usable, dropped;
and a server that cannot be reached fails the test (never a skip)."""

from __future__ import annotations

import subprocess

import pytest

from tests.backends import DROPPER, PG_SERVER, postgres_database


def databases() -> set[str]:
    done = subprocess.run(["psql", "-X", "-At", "-d", f"{PG_SERVER}/postgres", "-c",
                           "SELECT datname FROM pg_database"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"PostgreSQL at {PG_SERVER}: {done.stderr}"
    return set(done.stdout.split())


def test_a_database_is_made_for_the_test_and_dropped_after():
    with postgres_database() as url:
        name = url.rsplit("/", 1)[1]
        assert name.startswith("exam_test_") and name in databases()
        made = subprocess.run(["psql", "-X", "-q", "-At", "-d", url, "-c",
                               "CREATE TABLE t (x int); INSERT INTO t VALUES (7); "
                               "SELECT x FROM t"], capture_output=True, text=True, timeout=60)
        assert made.stdout.strip() == "7", made.stderr
    assert name not in databases()


def test_a_database_given_back_for_later_is_dropped_by_the_end_of_the_session():
    with postgres_database(drop="later") as url:
        name = url.rsplit("/", 1)[1]
        assert name in databases()
    assert DROPPER.wait() == []  # what pytest_sessionfinish (tests/conftest.py) does
    assert name not in databases()


def test_an_unreachable_server_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match="need a running PostgreSQL"):
        with postgres_database("postgresql://postgres@127.0.0.1:9"):
            pass
