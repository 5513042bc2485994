"""Which database a store target names, its engine, and bringing its schema up to date.

A target is a SQLite path (``results/exam.db``) or a PostgreSQL URL
(``postgresql://user@host:5432/dbname``). SQLite connections run in WAL mode with a 60 s busy
timeout; a write transaction is ``BEGIN IMMEDIATE`` (taken up front, so two writers never
deadlock), a read is a plain deferred ``BEGIN``. PostgreSQL connections come from a pool per
URL, each giving up rather than waiting forever (``PG_DEFAULTS``: a connect timeout, TCP
keepalives and a user timeout, a lock wait), unless the URL says otherwise.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from exam.db.schema import SCHEMA_VERSION
from exam.errors import SchemaTooNew, StoreError
from exam.redact import STORE_SETTINGS

PG_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")
# a scheme and a slash: what a URL looks like, so never taken for a SQLite file's path
URL_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+:/+)(.*)$", re.DOTALL)
MIGRATION_LOCK = 7_311_019  # pg_advisory_xact_lock key: one process migrates at a time
WRITE = "exam_write"  # Connection.info flag: the next BEGIN takes SQLite's write lock
# A PostgreSQL connection gives up instead of waiting forever: on a server that accepts and
# never answers (connect), on a host gone without a word (no RST: keepalives when idle, the
# user timeout when what was sent goes unacknowledged), on a lock another session holds
# (a LOCK TABLE by hand: SQLite's busy timeout, the same minute). Each ends in an error the
# store reports as StoreUnavailable: a worker waits it out, a run stops resumable.
CONNECT_TIMEOUT_S = 10
LOCK_TIMEOUT_S = 60
PG_DEFAULTS = {"keepalives": "1", "keepalives_idle": "30", "keepalives_interval": "10",
               "keepalives_count": "3", "tcp_user_timeout": "60000"}

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


def pg_text(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL: there (and only there) a NUL is stored as U+FFFD."""
    return value.replace("\x00", "\ufffd") if value and "\x00" in value else value


def url_of(target: str | Path) -> URL:
    """The SQLAlchemy URL of a store target (psycopg 3 for PostgreSQL); StoreError, naming
    the target with its password masked, for a URL that cannot be one."""
    target = str(target)
    if is_postgres(target):
        if target.partition("://")[2].count("@") > 1:  # else the password's tail is read as the host
            raise StoreError(f"{shown(target)}: an '@' in the user name or password must be "
                             f"written %40 (percent-encode what is not a letter, digit, "
                             f"'-', '_', '.' or '~')")
        try:
            url = make_url(target)
        except (ValueError, ArgumentError) as exc:  # a port that is not a number, …
            reason = str(exc).replace(target, shown(target)).split("\n")[0]
            raise StoreError(f"{shown(target)}: not a usable PostgreSQL URL "
                             f"(postgresql://user:password@host:5432/dbname): {reason}") from None
        return url.set(drivername="postgresql+psycopg")
    if URL_LIKE.match(target):  # postgresql:/… or mysql://… would be a file named like that
        raise StoreError(f"{shown(target)}: not a SQLite path nor a PostgreSQL URL "
                         f"(postgresql://user:password@host:5432/dbname)")
    return URL.create("sqlite", database=target)


def shown(target: str | Path) -> str:
    """The target as messages show it: a URL's password masked, whatever else is wrong
    with the URL (everything between the user name and the last '@' is the password), and
    every query value that is not a setting (``?password=…``: ``STORE_SETTINGS``) too."""
    target = str(target)
    found = URL_LIKE.match(target)
    if not found:
        return target
    scheme, rest = found.groups()
    if "@" in rest:
        at = rest.rindex("@")
        user, colon, _password = rest[:at].partition(":")
        scheme, rest = f"{scheme}{user}{':***' if colon else ''}@", rest[at + 1:]
    where, mark, query = rest.partition("?")
    if mark:
        pairs = (p.partition("=") for p in query.split("&"))
        query = "&".join(k + e + (v if unquote(k).strip().lower() in STORE_SETTINGS else
                                  "***" if e or v else "") for k, e, v in pairs)
    return f"{scheme}{where}{mark}{query}"


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
    url = url_of(target)
    # the URL's own settings (``?connect_timeout=5``, ``?options=...``) win over these
    settings = {**PG_DEFAULTS, "connect_timeout": str(CONNECT_TIMEOUT_S)}
    args: dict[str, str] = {k: v for k, v in settings.items() if k not in url.query}
    engine = create_engine(url, pool_size=5, max_overflow=10, pool_pre_ping=True,
                           pool_recycle=3600, connect_args=args)
    options = url.query.get("options", "")
    if "lock_timeout" not in " ".join(options if isinstance(options, tuple) else [options]):
        # set on each new connection, not as a startup option: a pooler in front (PgBouncer)
        # refuses unknown startup parameters such as ``options`` unless told to ignore them
        @event.listens_for(engine, "connect")
        def _lock_wait(dbapi_connection: Any, _record: Any) -> None:
            autocommit = dbapi_connection.autocommit
            dbapi_connection.autocommit = True  # outside a transaction: a rollback keeps it
            try:
                with dbapi_connection.cursor() as cursor:
                    cursor.execute(f"SET lock_timeout = {LOCK_TIMEOUT_S * 1000}")
            finally:
                dbapi_connection.autocommit = autocommit
    return engine


def pooled_engine(target: str | Path) -> Engine:
    """An engine whose connections are kept between uses, for a process that opens many
    short-lived connections to one store (the service: one per request). PostgreSQL's
    engine already pools, so it is the process's one; a SQLite file gets its own engine,
    owned by the caller (who disposes of it), with its connections opened once each."""
    key = str(target)
    if is_postgres(key):
        return engine_for(key)
    # 8 kept open (a gunicorn worker's threads, with room); more are opened when needed
    # rather than waited for (max_overflow=-1): SQLite has no connection limit to respect
    return _sqlite(key, pool={"pool_size": 8, "max_overflow": -1})


def _sqlite(target: str, pool: dict | None = None) -> Engine:
    # NullPool by default: a closed Store closes its file (tests corrupt and delete files)
    engine = create_engine(url_of(target), **(pool or {"poolclass": NullPool}),
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


def refuse_newer(conn: Connection, where: str) -> None:
    """``SchemaTooNew`` when the store is past this code, read in the caller's transaction
    and held there: PostgreSQL's migration lock taken shared (a migration waits for the
    transaction, and it for a migration under way), SQLite's write transaction (BEGIN
    IMMEDIATE) already excludes one. What the transaction writes is then written under the
    schema it read: a worker's claim, never with old code into a store migrated meanwhile."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": MIGRATION_LOCK})
    _not_newer(schema_version(conn), where)


def _not_newer(current: int, where: str) -> None:
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(f"{where}: schema version {current} is newer than this agent-exam "
                           f"understands ({SCHEMA_VERSION}): upgrade agent-exam")


def migrate(conn: Connection, where: str) -> None:
    """Bring the schema up to ``SCHEMA_VERSION`` (in the caller's write transaction).

    Concurrent openers wait: SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock.
    """
    if conn.dialect.name == "postgresql":
        # another opener's migration is waited for however long it takes (no lock_timeout)
        conn.execute(text("SET LOCAL lock_timeout = 0"))
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
    current = schema_version(conn)
    _not_newer(current, where)
    if current == SCHEMA_VERSION:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    location = str(Path(__file__).parent / "migrations")
    config.set_main_option("script_location", location.replace("%", "%%"))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
