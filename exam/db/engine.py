"""Which database a store target names, its engine, and bringing its schema up to date.

A target is a SQLite path (``results/exam.db``) or a PostgreSQL URL
(``postgresql://user@host:5432/dbname``). SQLite connections run in WAL mode with a 60 s busy
timeout; a write transaction is ``BEGIN IMMEDIATE`` (taken up front, so two writers never
deadlock), a read is a plain deferred ``BEGIN``. PostgreSQL connections come from a pool per URL.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import NullPool

from exam.db.schema import SCHEMA_VERSION
from exam.errors import StoreError

PG_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")
MIGRATION_LOCK = 7_311_019  # pg_advisory_xact_lock key: one process migrates at a time
WRITE = "exam_write"  # Connection.info flag: the next BEGIN takes SQLite's write lock

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def _forget_engines_in_child() -> None:
    """A forked child (the parallel re-grade) must not use its parent's pooled connections:
    it drops them without closing them (they are the parent's) and makes its own."""
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


os.register_at_fork(after_in_child=_forget_engines_in_child)


def is_postgres(target: str | Path) -> bool:
    return str(target).startswith(PG_SCHEMES)


def url_of(target: str | Path) -> URL:
    """The SQLAlchemy URL of a store target (psycopg 3 for PostgreSQL)."""
    target = str(target)
    if is_postgres(target):
        url = make_url(target)
        return url.set(drivername="postgresql+psycopg")
    return URL.create("sqlite", database=target)


def shown(target: str | Path) -> str:
    """The target as messages show it: a URL's password is masked."""
    if is_postgres(target):
        return make_url(str(target)).render_as_string(hide_password=True)
    return str(target)


def engine_for(target: str | Path) -> Engine:
    """One engine per target for the life of the process."""
    key = str(target)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _postgres(key) if is_postgres(key) else _sqlite(key)
        return engine


def dispose(target: str | Path) -> None:
    """Close a target's pooled connections and forget its engine (tests, ``exam store copy``)."""
    with _engines_lock:
        engine = _engines.pop(str(target), None)
    if engine is not None:
        engine.dispose()


def _postgres(target: str) -> Engine:
    return create_engine(url_of(target), pool_size=5, max_overflow=10, pool_pre_ping=True,
                         pool_recycle=3600)


def _sqlite(target: str) -> Engine:
    # NullPool: a closed Store closes its file (tests corrupt and delete files; the service
    # opens one Store per request and SQLite opens in microseconds)
    engine = create_engine(url_of(target), poolclass=NullPool,
                           connect_args={"timeout": 60, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        # pysqlite's own transaction handling is off: SQLAlchemy's BEGIN below is the only one
        dbapi_connection.isolation_level = None
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=60000",
                       "foreign_keys=ON"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get(WRITE) else "BEGIN")

    return engine


def schema_version(conn: Connection) -> int:
    """The schema a store is at: 0 for an empty database."""
    if conn.dialect.name == "sqlite":
        return int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())
    if conn.execute(text("SELECT to_regclass('alembic_version')")).scalar() is None:
        return 0
    found = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return int(found) if found else 0


def migrate(conn: Connection, where: str) -> None:
    """Bring the schema up to ``SCHEMA_VERSION`` (in the caller's write transaction).

    Concurrent openers wait: SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise StoreError(f"{where}: schema version {current} is newer than this agent-exam "
                         f"understands ({SCHEMA_VERSION}): upgrade agent-exam")
    if current == SCHEMA_VERSION:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    location = str(Path(__file__).parent / "migrations")
    config.set_main_option("script_location", location.replace("%", "%%"))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
