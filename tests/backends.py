"""The store backends the multi-instance tests run on, and a throwaway PostgreSQL database.

``STORE_BACKENDS`` is what the ``store_url`` fixture (tests/conftest.py) yields: both, always.
An unreachable PostgreSQL fails these tests with the command that starts it; never a skip.
"""

from __future__ import annotations

import os
import queue
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

STORE_BACKENDS = ["sqlite", "postgresql"]
# the server the throwaway databases are made on (EXAM_TEST_POSTGRES points elsewhere)
PG_SERVER = os.environ.get("EXAM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
PG_ADMIN_DB = "postgres"
PG_START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def _admin(server: str):
    """An autocommit connection to the server's admin database (psycopg: no ``psql`` process
    per statement); a server that cannot be reached fails the test, saying how to start it."""
    import psycopg

    try:
        return psycopg.connect(f"{server}/{PG_ADMIN_DB}", autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        problem = " ".join(str(exc).split())[:300]
    # outside the except: one clear message, not a chained traceback
    pytest.fail(f"PostgreSQL at {server} cannot be reached: {problem} — these tests need a "
                f"running PostgreSQL (start it with: {PG_START})", pytrace=False)


def _drop(server: str, name: str) -> None:
    with _admin(server) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class _Dropper:
    """Drops the test databases given back with ``drop="later"`` on a thread of its own: a
    DROP DATABASE waits for a checkpoint (0.4–1.9 s on a busy machine), which no test needs
    to wait for. ``wait`` (at the end of the session) drops what is left."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.failed: list[str] = []
        self.last: list[tuple[str, str]] = []

    def at_end(self, server: str, name: str) -> None:
        """Drop ``name`` when the session ends (a template the session's tests copy)."""
        self.last.append((server, name))

    def put(self, server: str, name: str) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, daemon=True, name="pg-dropper")
            self.thread.start()
        self.queue.put((server, name))

    def _run(self) -> None:
        while (job := self.queue.get()) is not None:
            try:
                _drop(*job)
            except BaseException as exc:  # pytest.fail included: said at the end of the session
                self.failed.append(f"{job[1]}: {exc}")

    def wait(self, *, kept_too: bool = False) -> list[str]:
        """Drop every database given back so far (and, ``kept_too``, those kept to the end of
        the session: its templates); what could not be dropped."""
        if kept_too:
            for server, name in self.last:
                self.put(server, name)
            self.last = []
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
            self.thread = None
        failed, self.failed = self.failed, []
        return failed


DROPPER = _Dropper()


@contextmanager
def store_at(backend: str, folder: Path) -> Iterator[str]:
    """What EXAM_DB is set to for ``backend``: a SQLite file in ``folder``, or a fresh
    PostgreSQL database (dropped once the test is over, on the dropper's thread) with today's
    schema: a copy of the session's migrated one (``migrated_template``), as a new SQLite
    store is a copy of one migrated (tests/templates.py)."""
    if backend == "sqlite":
        yield str(folder / "exam.db")
    elif backend == "postgresql":
        with postgres_database(template=migrated_template(), drop="later") as url:
            yield url
    else:
        raise ValueError(f"unknown store backend {backend!r}")


_MIGRATED: dict[str, str] = {}  # server → its database migrated this session (a template)


def migrated_template(server: str = PG_SERVER) -> str:
    """The name of a database on ``server`` that Alembic brought to today's schema once this
    session, kept to be copied (``CREATE DATABASE … TEMPLATE``: ~0.2 s, where migrating a
    new database takes 0.7–0.9 s) and dropped when the session ends."""
    from exam.db import engine as db_engine
    from exam.store import Store

    if server not in _MIGRATED:
        url = session_database(server)
        Store(url).close()
        db_engine.dispose(url)  # a template is copied only with no one connected
        _MIGRATED[server] = url.rsplit("/", 1)[1]
    return _MIGRATED[server]


def _create(server: str, template: str | None = None) -> str:
    name = f"exam_test_{secrets.token_hex(6)}"
    with _admin(server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'
                      + (f' TEMPLATE "{template}"' if template else ""))
    return name


def session_database(server: str = PG_SERVER) -> str:
    """A new, empty database kept until the session ends (then dropped): its URL."""
    name = _create(server)
    DROPPER.at_end(server, name)
    return f"{server}/{name}"


@contextmanager
def postgres_database(server: str = PG_SERVER, *, template: str | None = None,
                      drop: Literal["now", "later"] = "now") -> Iterator[str]:
    """A new database ``exam_test_<random>``, empty or a copy of ``template``; its URL. It is
    dropped afterwards: at once, or ``later`` by ``DROPPER`` (always before the session
    ends), its connections from this process closed first either way."""
    from exam.db import engine as db_engine

    name = _create(server, template)
    url = f"{server}/{name}"
    try:
        yield url
    finally:
        db_engine.dispose(url)
        if drop == "later":
            DROPPER.put(server, name)
        else:
            _drop(server, name)


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
