"""The store's connection and transactions: what every concept module of the store runs on.

``StoreBase`` opens the store (a SQLite file or a ``postgresql://`` URL), brings its schema up
to date, and hands out transactions (``_begin`` for a read, ``tx`` for a write); the concept
modules beside it (runs, leases, cells, grades, ...) own their tables' SQL and their methods,
and ``Store`` (``exam/store/__init__.py``) composes them.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from sqlalchemy import Connection, Engine, Row, Table, func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, OperationalError

from exam.db.clock import store_now
from exam.db.engine import WRITE, engine_for, is_postgres, migrate, schema_version, shown, url_of
from exam.db.schema import SCHEMA_VERSION, TABLES
from exam.errors import StoreDamaged, StoreError, StoreUnavailable
from exam.redact import store_secrets
from exam.store.failures import away_at_open, damage_message, damaged, reason

DEFAULT_DB = "results/exam.db"


class StoreBase:
    """One connection per Store, shared by the runner's threads under a lock.

    ``path`` is a SQLite file or a ``postgresql://`` URL (shown with its password masked).
    """

    def __init__(self, path: str | Path, *, engine: Engine | None = None,
                 checked: bool = False):
        """Open the store at ``path``: make its folder, bring its schema up to date.

        ``engine`` (the service's, one per process: ``exam.web.context``): this Store's
        transactions run on one connection taken from that engine's pool and given back by
        ``close``. ``checked``: this process already opened the store, so its folder and
        schema are not looked at again (``check_schema`` does that when asked).
        """
        target = str(path)
        self.path = shown(target)  # for messages and logs: a URL's password masked
        self.target = target  # to open the same store again (another process); never shown
        # its credentials (password, ?password=…), longest first: kept out of every message
        self._secrets = sorted((s for s in store_secrets(target) if len(s) >= 3), key=len,
                               reverse=True)
        self.backend = "postgresql" if is_postgres(target) else "sqlite"
        url_of(target)  # a malformed URL is refused before anything is created
        try:
            if self.backend == "sqlite" and target != ":memory:" and not checked:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder: {exc.strerror or exc}"
                             ) from None
        self._lock = threading.RLock()
        self._engine = engine or engine_for(target)
        # SQLite: one connection, shared by the runner's threads under the lock (SQLite has one
        # writer anyway). PostgreSQL: a connection from the process's pool per transaction, so
        # a run's threads store their cells concurrently; or, given an engine, one connection
        # held until closed (a service request: one pool checkout, not one per transaction).
        self._conn: Connection | None = None
        try:
            if self.backend == "sqlite" or engine is not None:
                self._conn = self._engine.connect()
            if not checked:
                self._migrate()
        except (DBAPIError, sqlite3.Error) as exc:
            self.close()
            raise self._cannot_open(exc) from None
        except BaseException:
            self.close()
            raise
        self._insert = sqlite_insert if self.backend == "sqlite" else pg_insert

    def _cannot_open(self, exc: BaseException) -> StoreError:
        if damaged(exc):
            return StoreDamaged(self.said(damage_message(self.path, exc)))
        kind = StoreUnavailable if away_at_open(exc) else StoreError
        return kind(self.said(f"{self.path}: cannot open the store: {reason(exc)}"))

    def said(self, message: str) -> str:
        """``message`` (a driver's, which may echo a connection string) without the store's
        credentials: each of ``store_secrets`` masked as ``shown`` masks it."""
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return message

    def check_schema(self) -> None:
        """Read the schema again and bring it up to date, as opening the store does: the same
        errors (a store newer than this agent-exam is refused) for a store opened long ago."""
        try:
            self._migrate()
        except (DBAPIError, sqlite3.Error) as exc:
            raise self._cannot_open(exc) from None

    @classmethod
    def open(cls, path: str | Path | None = None) -> Self:
        return cls(path or os.environ.get("EXAM_DB") or DEFAULT_DB)

    def close(self) -> None:
        """Close SQLite's connection, or give a pooled one back (a PostgreSQL pool lives as
        long as the process)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    @contextmanager
    def _begin(self, write: bool = False) -> Iterator[Connection]:
        """A transaction: a write one on SQLite is taken up front (BEGIN IMMEDIATE), so two
        writers never deadlock; a read is a consistent snapshot, ended at once."""
        if self._conn is None:
            with self._engine.begin() as conn:
                yield conn
            return
        with self._lock:
            self._conn.info[WRITE] = write
            try:
                with self._conn.begin():
                    self._conn.info[WRITE] = False
                    yield self._conn
            finally:
                self._conn.info[WRITE] = False

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """A write transaction."""
        with self._begin(write=True) as conn:
            yield conn

    def _rows(self, stmt: Any, params: dict[str, Any] | None = None) -> list[Row]:
        with self._begin() as conn:
            return list(conn.execute(stmt, params).all())

    def _value(self, stmt: Any, params: dict[str, Any] | None = None) -> Any:
        with self._begin() as conn:
            return conn.execute(stmt, params).scalar()

    def _kept_text(self, table: Table, name: str, key: str) -> str | None:
        """The text a kept-text table (a name, a key, the text: ``kept_changes``,
        ``kept_answers``) holds for ``name`` under exactly ``key``, or None."""
        named, keyed, text = table.c
        return self._value(select(text).where(named == name, keyed == key))

    def _keep_text(self, table: Table, name: str, key: str, text: str) -> bool:
        """Keep (or replace) ``name``'s text in a kept-text table under ``key``; False when
        the store cannot be written (``_keep``)."""
        named, keyed, column = table.c
        stmt = self._insert(table).values({named.name: name, keyed.name: key,
                                           column.name: text})
        return self._keep(stmt.on_conflict_do_update(
            index_elements=[named], set_={keyed.name: key, column.name: text}))

    def _keep(self, stmt: Any) -> bool:
        """Write something kept only to save work later (a graded run, a walk of verdicts);
        False when the store cannot be written (read-only, busy): what was built is still
        right, only not kept. A damaged store still raises."""
        try:
            with self.tx() as db:
                db.execute(stmt)
        except OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def _migrate(self) -> None:
        with self._begin() as conn:
            if schema_version(conn) == SCHEMA_VERSION:
                return
        with self.tx() as conn:
            migrate(conn, self.path)

    def schema_version(self) -> int:
        with self._begin() as conn:
            return schema_version(conn)

    def _by_code_point(self, column: Any) -> Any:
        """Text ordered by code point on both backends (PostgreSQL's collation would not)."""
        return column.collate("C") if self.backend == "postgresql" else column

    def now(self) -> float:
        """The store's time (epoch seconds, ``exam/db/clock.py``): what share links are signed
        and judged by, so hosts whose clocks disagree agree on when a link expires."""
        return float(self._value(select(store_now())))

    def integrity_check(self) -> str:
        """SQLite's integrity check; on PostgreSQL (which checks its pages itself) "ok" when
        every table can be read."""
        if self.backend == "sqlite":
            return self._value(text("PRAGMA integrity_check"))
        for table in TABLES:
            self._value(select(func.count()).select_from(table))
        return "ok"

