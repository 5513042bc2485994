"""The store: runs, cells (question × repeat), attempts with raw bodies, grades.

One schema on two backends (``exam.db``): a SQLite file (the embedded default, WAL mode so
readers never block the runner) or a PostgreSQL database (``postgresql://`` URL, for a team's
service instances and workers on several hosts). A finished cell is committed before its
thread goes on (cells finished together share one transaction: ``record_cell``), so a run
killed with ``kill -9`` loses only the cells in flight, and ``exam resume`` or the next
worker redoes exactly those (the primary key makes a duplicate impossible). Workers hold the
runs they claim by a lease (``claim_run``, ``heartbeat``); a worker whose lease was taken over
is fenced out (``LeaseLost``). The schema is migrated forward on open (Alembic; SQLite stores of
schema 1..7 go through ``MIGRATIONS`` first).
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Double,
    Engine,
    Row,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, OperationalError

from exam.db.clock import store_now
from exam.db.engine import WRITE, engine_for, is_postgres, migrate, schema_version, shown, url_of
from exam.db.schema import (
    SCHEMA_VERSION,
    TABLES,
    adjudications,
    cells,
    earlier_attempts,
    earlier_cells,
    grade_cache,
    graded_runs,
    grades,
    line_events,
    line_groups,
    notifications,
    rebalance_snapshots,
    run_banks,
    runs,
    sessions,
    settle_rounds,
    share_revocations,
    shipped,
)
from exam.db.schema import attempts as _attempts
from exam.errors import (
    LeaseLost,
    NoSuchRun,
    RunBusy,
    StoreDamaged,
    StoreError,
    StoreUnavailable,
)
from exam.records import RETRY_STATUSES, AttemptRow, CachedGrade, CellRow, cap_text
from exam.redact import store_secrets

DEFAULT_DB = "results/exam.db"
MAX_ID = 2**63 - 1  # the largest integer SQLite and PostgreSQL (BIGINT) store: a run id

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        version TEXT NOT NULL,
        bank_path TEXT NOT NULL,
        bank_digest TEXT NOT NULL,
        repeats INTEGER NOT NULL,
        plan TEXT NOT NULL,               -- JSON list of [case_no, question_digest]
        settings TEXT NOT NULL,           -- JSON: the agent's settings, never its secrets
        status TEXT NOT NULL,             -- queued | running | done | interrupted | failed
        created_at REAL NOT NULL,
        started_at REAL,
        finished_at REAL,
        owner TEXT,                       -- host:pid of the process running it
        heartbeat_at REAL,
        error TEXT,
        source TEXT NOT NULL DEFAULT 'cli'
    );
    CREATE INDEX runs_agent_version ON runs(agent, version);
    CREATE TABLE cells (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        case_no TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        question_digest TEXT NOT NULL,
        run_status TEXT NOT NULL,
        error TEXT NOT NULL DEFAULT '',
        text TEXT,
        status TEXT,
        truncated INTEGER NOT NULL DEFAULT 0,
        steps TEXT,                       -- JSON list of {tool, args}, NULL when not reported
        attempts INTEGER NOT NULL,
        model_calls INTEGER,
        tokens INTEGER,
        latency_ms REAL,
        completed_at REAL NOT NULL,
        PRIMARY KEY (run_id, case_no, repeat)
    );
    CREATE TABLE attempts (
        run_id INTEGER NOT NULL,
        case_no TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        n INTEGER NOT NULL,
        started_at REAL NOT NULL,
        http_status INTEGER,
        latency_ms REAL NOT NULL,
        error TEXT NOT NULL DEFAULT '',
        content_type TEXT,
        body TEXT,
        body_bytes INTEGER,
        body_cut INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, case_no, repeat, n)
    );
    CREATE TABLE grades (
        run_id INTEGER NOT NULL,
        case_no TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        grader_version TEXT NOT NULL,
        question_digest TEXT NOT NULL,
        verdict TEXT,
        checks TEXT NOT NULL,
        graded_at REAL NOT NULL,
        PRIMARY KEY (run_id, case_no, repeat, grader_version)
    );
    """,
    # 2: LINE notifications (each push with its retry key), webhook events seen, groups joined
    """
    CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        batch TEXT NOT NULL,              -- pushes made for one request share a batch
        channel TEXT NOT NULL,            -- 'line'
        target TEXT NOT NULL,             -- the group id
        run_ids TEXT NOT NULL,            -- JSON list
        retry_key TEXT NOT NULL UNIQUE,   -- X-Line-Retry-Key, reused by every retry and resend
        payload TEXT NOT NULL,            -- JSON list of messages (no secrets)
        status TEXT NOT NULL,             -- pending | delivered | failed
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at REAL NOT NULL,
        delivered_at REAL
    );
    CREATE TABLE line_events (
        webhook_event_id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        received_at REAL NOT NULL
    );
    CREATE TABLE line_groups (
        group_id TEXT PRIMARY KEY,
        joined_at REAL NOT NULL
    );
    """,
    # 3: a person's decisions on needs_human (and spot-checked) verdicts
    """
    CREATE TABLE adjudications (
        id INTEGER PRIMARY KEY,
        reply_digest TEXT NOT NULL,       -- sha256 of the reply text
        check_name TEXT NOT NULL,         -- "forbidden[0]", or "*" for the whole reply
        question_digest TEXT NOT NULL,    -- the rubric it was judged under
        rule_version TEXT NOT NULL,       -- the grader's rule for that check at the time
        decision TEXT NOT NULL,           -- pass | fail
        reason TEXT NOT NULL DEFAULT '',
        reviewer TEXT NOT NULL,
        decided_at REAL NOT NULL,
        agent TEXT NOT NULL,
        case_no TEXT NOT NULL,
        UNIQUE (reply_digest, check_name, question_digest, rule_version)
    );
    """,
    # 4: each saved quarterly rebalance, so the next one can show what changed since
    """
    CREATE TABLE rebalance_snapshots (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        created_at REAL NOT NULL,
        since TEXT,                       -- the report's --since date, if any
        snapshot TEXT NOT NULL            -- JSON: settings, per-question roles, per-category counts
    );
    CREATE INDEX rebalance_snapshots_agent ON rebalance_snapshots(agent, id);
    """,
    # 5: where a cell's usage came from (n8n executions), and whether its tokens are an estimate
    """
    ALTER TABLE cells ADD COLUMN tokens_estimated INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE cells ADD COLUMN usage_note TEXT NOT NULL DEFAULT ''
    """,
    # 6: runs excluded from every report (kept, and shown as excluded); cells retried by
    # `exam resume --retry-failed` keep their earlier attempt on record
    """
    ALTER TABLE runs ADD COLUMN excluded_reason TEXT;
    ALTER TABLE runs ADD COLUMN excluded_at REAL;
    CREATE TABLE earlier_cells AS SELECT * FROM cells WHERE 0;
    ALTER TABLE earlier_cells ADD COLUMN retried_at REAL;
    CREATE INDEX earlier_cells_run ON earlier_cells(run_id, case_no, repeat);
    CREATE TABLE earlier_attempts AS SELECT * FROM attempts WHERE 0;
    ALTER TABLE earlier_attempts ADD COLUMN retried_at REAL;
    """,
    # 7: the grade cache: a reply's grade under one set of rules and one question, before
    # any review decision (exam/reports/regrade.py keys it; reports read it first)
    """
    CREATE TABLE grade_cache (
        rules TEXT NOT NULL,              -- GRADER_VERSION and every RULE_VERSIONS entry
        reply_key TEXT NOT NULL,          -- sha256 of everything grade() reads of the reply
        question_key TEXT NOT NULL,       -- the question's digest and the bank's options
        verdict TEXT NOT NULL,
        checks TEXT NOT NULL,             -- JSON list of [name, outcome, missing, unexpected, evidence]
        PRIMARY KEY (rules, reply_key, question_key)
    )
    """,
)
GRADE_CACHE_CHUNK = 500  # keys per lookup query (SQLite's bound-variable limit is far above)
GRADE_CACHE_WRITE_CHUNK = 2_000  # rows per INSERT execution when the cache is filled

CELL_BATCH = 64  # cells written per transaction at most (group commit in record_cell)
HEAD_PROBE = 32_768  # characters of a kept run read for its head (graded_run_heads)
LEASE_S = 30.0  # how long a worker's claim holds a run without a heartbeat
# how long a link's revocation is kept after the link expired: the instances' clocks may
# disagree, and an instance whose clock is behind still opens the link until its own says so
REVOCATION_AFTER_EXPIRY_S = 86400.0


def host_id() -> str:
    """This machine's name in run owners: EXAM_HOST_ID (``exam worker --host-id``), else the
    host name. Two machines must never share one: a pid is only checked on its own host."""
    return os.environ.get("EXAM_HOST_ID") or socket.gethostname()


def owner_id() -> str:
    return f"{host_id()}:{os.getpid()}"


def owner_alive(owner: str | None) -> bool:
    """Whether the process that owns a run still exists (only knowable on this host)."""
    if not owner or ":" not in owner:
        return False
    return not owner_gone(owner)


def owner_gone(owner: str | None) -> bool:
    """The owner ran on this host and its process no longer exists (known at once, without
    waiting for its lease to run out); False for another host's, which only its lease tells."""
    if not owner or ":" not in owner:
        return False
    host, pid = owner.rsplit(":", 1)
    if host != host_id():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    agent: str
    version: str
    bank_path: str
    bank_digest: str
    repeats: int
    plan: tuple[tuple[str, str], ...]
    settings: dict[str, Any]
    status: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    owner: str | None
    heartbeat_at: float | None
    error: str | None
    source: str
    excluded_reason: str | None = None  # set: left out of every report, still listed
    lease_until: float | None = None  # a worker's claim holds the run until then
    lease_token: int = 0  # raised by every claim; only the holder of the current one writes
    # the store's clock as the row was read (exam/db/clock.py): what lease_until is judged by,
    # never this host's clock (None: a Run not read from a store, judged by this host's)
    read_at: float | None = field(default=None, compare=False, repr=False)

    @property
    def total_cells(self) -> int:
        return len(self.plan) * self.repeats

    @property
    def shown_status(self) -> str:
        """'running' whose lease ran out reads 'interrupted': resumable. A worker takes a
        queued run's over by itself; a run started by `exam run` waits for `exam resume`, and
        reads 'interrupted' at once when its process is gone from this host. (Only the CLI's:
        workers on one machine may share a host id from separate containers, whose process
        ids this process cannot see.)"""
        if self.status != "running":
            return self.status
        if self.source == "cli" and owner_gone(self.owner):
            return "interrupted"
        if self.lease_until is not None:
            return "running" if self.lease_until > self.now else "interrupted"
        return "running" if owner_alive(self.owner) else "interrupted"

    @property
    def now(self) -> float:
        """The time this run's lease is judged at: the store's clock when it was read."""
        return time.time() if self.read_at is None else self.read_at


@dataclass(frozen=True, slots=True)
class Revocation:
    """A share link revoked (``link``: its id), or, with ``link`` None, every link to ``page``
    made before ``made_before`` (exam/web/share.py)."""

    id: int
    link: str | None
    page: str
    until: float | None  # the revoked link's own expiry
    made_before: float | None
    revoked_at: float
    reason: str


@dataclass(frozen=True, slots=True)
class ShipRecord:
    """A version shipped by hand (``exam ship``, the API, the dashboard, n8n): who, when, why."""

    id: int
    agent: str
    version: str
    shipped_at: float
    shipped_by: str
    reason: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "version": self.version,
                "shipped_at": self.shipped_at, "shipped_by": self.shipped_by,
                "reason": self.reason, "source": self.source}


def held_elsewhere(run: Run) -> str | None:
    """Why another process holds ``run`` now, or None: it reads ``running`` (``shown_status``:
    a live lease; for a run written by a version without leases, its owner alive) and is not
    this process's own."""
    if run.owner == owner_id() or run.shown_status != "running":
        return None
    holder = f"process {run.owner}" if run.owner else "another process"
    if run.lease_until is None:
        return f"run {run.id} is still running in {holder}"
    return (f"run {run.id} is still running in {holder} (it renews its lease while it works; "
            f"if that process is gone, the lease runs out within "
            f"{max(1, round(run.lease_until - run.now))} s)")


def damaged(exc: BaseException) -> bool:
    """SQLite says the file is corrupt or not a database (overwritten pages, a truncated copy)."""
    exc = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    if not isinstance(exc, sqlite3.Error):
        return False
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(exc) for s in ("malformed", "not a database"))


# what libpq and PostgreSQL say, refusing a connection, while it cannot take one yet: the
# server not listening or not reachable yet, starting up, out of connection slots
_NOT_YET = ("connection refused", "could not connect", "timeout expired", "timed out",
            "no route to host", "network is unreachable", "connection reset",
            "server closed the connection", "too many clients", "too many connections",
            "remaining connection slots", "starting up", "shutting down", "in recovery",
            "not yet accepting connections")


def _away_at_open(exc: BaseException) -> bool:
    """A store that cannot be opened now but may be soon (refused, starting up, out of
    connection slots: a worker started before PostgreSQL waits for it); not one the server
    refuses for good (no such database or role, a failed login). libpq gives a refused
    connection no SQLSTATE, only a text saying "connection failed", which ``unavailable``
    would take as away whatever followed: so without one, only the texts of ``_NOT_YET``
    count, and anything else, a server answering in another language included, is for good
    (the worker exits, and systemd starts it again, as before)."""
    orig = getattr(exc, "orig", None) or exc
    if type(orig).__module__.startswith("psycopg") and getattr(orig, "sqlstate", None) is None:
        return any(s in str(orig).lower() for s in _NOT_YET)
    return unavailable(exc)


def unavailable(exc: BaseException) -> bool:
    """The database away or busy for a moment (worth trying again), not refusing what was asked
    of it: a dropped or refused connection, PostgreSQL shutting down or starting up, too many
    connections, a lock held elsewhere past the lock wait, SQLite busy or locked. A full disk,
    a read-only file, a missing table or a damaged file are not: a worker retrying them would
    send the same cells to the agent again and again."""
    if getattr(exc, "connection_invalidated", False):
        return True
    orig = getattr(exc, "orig", None) or exc
    if not isinstance(exc, OperationalError) and not isinstance(orig, sqlite3.OperationalError):
        return False
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate:  # PostgreSQL: connection exception, operator intervention, too many
        # connections, a lock another session held past the lock wait (engine.LOCK_TIMEOUT_S)
        return sqlstate.startswith(("08", "57P")) or sqlstate in ("53300", "55P03")
    text = str(orig).lower()
    return any(s in text for s in ("database is locked", "database is busy", "connection",
                                   "could not connect", "starting up", "shutting down"))


def damage_message(path: str, exc: BaseException) -> str:
    exc = getattr(exc, "orig", None) or exc
    return (f"{path}: the store is damaged ({exc}): restore it from a backup, or save what can "
            f"be read with: sqlite3 {path} .recover | sqlite3 recovered.db")


def _named_damage(method: Callable[..., Any]) -> Callable[..., Any]:
    """A database error raises StoreError naming the store: a damaged SQLite file says so and
    how to recover it; anything else (PostgreSQL unreachable, a full disk) says what it was."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (DBAPIError, sqlite3.DatabaseError) as exc:
            if damaged(exc):
                raise StoreDamaged(self.said(damage_message(self.path, exc))) from None
            # the database away or busy for a moment, not what was asked of it
            raise (StoreUnavailable if unavailable(exc) else StoreError)(
                self.said(f"{self.path}: {_reason(exc)}")) from exc

    return wrapper


def _reason(exc: BaseException) -> str:
    """The driver's first line, without SQLAlchemy's statement dump."""
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0]


def _runs_read() -> Any:
    """Runs' rows with the store's clock as they are read (``Run.read_at``)."""
    return select(runs, store_now().label("read_at"))


@functools.cache
def _read_sql(name: str, *variant: bool) -> Any:
    """A frequent read's statement, built once (bound values by name, ``ids`` a list): a
    service request makes a few small reads, and building a statement costs several times
    what SQLite takes to run it (cell_marks 290 → 62 µs on the demo store)."""
    c, e, g, r = cells.c, earlier_cells.c, graded_runs.c, runs.c
    ids, rid = bindparam("ids", expanding=True), bindparam("rid")
    if name == "run":
        return _runs_read().where(r.id == rid)
    if name == "runs":  # variant: by agent, by version, limited
        stmt = _runs_read().order_by(r.id.desc())
        if variant[0]:
            stmt = stmt.where(r.agent == bindparam("agent"))
        if variant[1]:
            stmt = stmt.where(r.version == bindparam("version"))
        return stmt.limit(bindparam("limit")) if variant[2] else stmt
    if name == "marks":  # (run id, 0 for cells or 1 for earlier cells, count)
        return union_all(
            select(c.run_id, literal_column("0"), func.count()).where(c.run_id.in_(ids))
            .group_by(c.run_id),
            select(e.run_id, literal_column("1"), func.count()).where(e.run_id.in_(ids))
            .group_by(e.run_id))
    if name == "graded_runs":
        return select(g.run_id, g.key, g.cells).where(g.run_id.in_(ids))
    if name == "count":  # variant: of one run status
        stmt = select(func.count()).select_from(cells).where(c.run_id == rid)
        return stmt.where(c.run_status == bindparam("status")) if variant[0] else stmt
    if name == "status_counts":
        return select(c.run_status, func.count()).where(c.run_id == rid).group_by(c.run_status)
    if name == "status_counts_of":
        return (select(c.run_id, c.run_status, func.count()).where(c.run_id.in_(ids))
                .group_by(c.run_id, c.run_status))
    if name == "adjudications":
        return select(adjudications).order_by(adjudications.c.id)
    if name == "session_role":  # a dashboard login still open, by the store's clock
        return select(sessions.c.role).where(sessions.c.id == bindparam("sid"),
                                             sessions.c.until > store_now())
    if name == "share_revocations":  # of these link ids, or of every link to these pages
        v = share_revocations.c
        return select(share_revocations).where(or_(
            v.link.in_(bindparam("links", expanding=True)),
            and_(v.page.in_(bindparam("pages", expanding=True)), v.link.is_(None))))
    raise KeyError(name)


def _prune_revocations(db: Connection) -> None:
    """Delete the revocations of links expired ``REVOCATION_AFTER_EXPIRY_S`` ago: they refuse
    nothing an expired link is not refused for already. Run as a revocation is written (the
    only time the table grows). A page's revocation is kept: it says before when its links
    were made, not until when they work (``SHARE_LINK_DAYS`` has no upper bound, and a link
    from before schema 13 does not say when it was made)."""
    v = share_revocations.c
    db.execute(delete(share_revocations).where(
        v.link.is_not(None), v.until < time.time() - REVOCATION_AFTER_EXPIRY_S))


def _no_nul(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL; a reply's NUL is stored as U+FFFD there (and only there)."""
    return value.replace("\x00", "\ufffd") if value and "\x00" in value else value


def _same(value: str | None) -> str | None:
    return value


@functools.cache
def _cell_sql(backend: str) -> dict[str, Any]:
    """record_cell's statements, built once per backend: a run stores thousands of cells, and
    building a statement costs more than SQLite takes to run it."""
    ins = sqlite_insert if backend == "sqlite" else pg_insert
    r = runs.c
    grade = ins(grades)
    return {
        "beat": update(runs).where(r.id == bindparam("rid")).values(heartbeat_at=store_now()),
        "beat_lease": update(runs).where(r.id == bindparam("rid"),
                                         r.lease_token == bindparam("token")).values(
            heartbeat_at=store_now(),
            lease_until=store_now() + bindparam("lease_s", type_=Double)),
        "fence": select(r.lease_token).where(r.id == bindparam("rid")).with_for_update(
            read=True),
        "cell": ins(cells).on_conflict_do_nothing().returning(
            cells.c.run_id, cells.c.case_no, cells.c.repeat),
        "attempts": insert(_attempts),
        "cache": ins(grade_cache).on_conflict_do_nothing(),
        "grade": grade.on_conflict_do_update(
            index_elements=["run_id", "case_no", "repeat", "grader_version"],
            set_={k: grade.excluded[k] for k in ("question_digest", "verdict", "checks",
                                                 "graded_at")}),
    }


_GRADE_COLUMNS = "rules, reply_key, question_key, verdict, checks"


def _copy_grades(db: Connection, rules: str, rows: Sequence[tuple[str, str, str, str]]) -> None:
    """PostgreSQL: the rows COPYed into a temporary table, then added to the cache in key
    order, a row already there kept (COPY itself cannot skip one). A report filling the cache
    for 4,000 cells spent ~90 ms of its CPU on SQLAlchemy's and psycopg's executemany of
    the INSERT; this is ~25 ms of the server's time and ~3 ms of ours (docs/performance.md).
    psycopg's errors come out as SQLAlchemy's, as from any other statement."""
    import psycopg

    raw = db.connection.driver_connection
    try:
        with raw.cursor() as cur:
            cur.execute("CREATE TEMPORARY TABLE grade_cache_in (LIKE grade_cache) ON COMMIT DROP")
            with cur.copy(f"COPY grade_cache_in ({_GRADE_COLUMNS}) FROM STDIN") as copy:
                for reply, question, verdict, checks in rows:
                    copy.write_row((rules, reply, question, verdict, checks))
            cur.execute(f"INSERT INTO grade_cache ({_GRADE_COLUMNS}) SELECT {_GRADE_COLUMNS} "
                        f"FROM grade_cache_in ORDER BY rules, reply_key, question_key "
                        f"ON CONFLICT DO NOTHING")
    except psycopg.Error as exc:
        raise DBAPIError.instance("COPY grade_cache_in", None, exc, psycopg.Error) from exc


def _pg_copy_in(db: Connection, table: str, rows: Sequence[dict[str, Any]]) -> None:
    """PostgreSQL: ``rows`` (dicts with the same keys) COPYed into ``table``, as a plain
    INSERT of them would add them (a row already there fails both). The group commit's
    attempts: psycopg's COPY costs half the CPU of its executemany, which sends a statement
    per row (a 10,000-cell run spent ~2% of its CPU there). Errors come out as SQLAlchemy's."""
    import psycopg

    columns = list(rows[0])
    try:
        with db.connection.driver_connection.cursor() as cur, cur.copy(
                f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(tuple(row.values()))
    except psycopg.Error as exc:
        raise DBAPIError.instance(f"COPY {table}", None, exc, psycopg.Error) from exc


def _pg_new_cells(db: Connection, rows: Sequence[dict[str, Any]]) -> set[tuple[int, str, int]]:
    """PostgreSQL: insert the cells (a cell already there is left as it was) and return the
    keys of those added, by psycopg's executemany with RETURNING: one statement text, parsed
    once, each row sent in one pipeline. SQLAlchemy's insertmanyvalues wrote a VALUES row per
    cell into one statement instead, whose text (17 parameters a cell) is too long for
    psycopg to keep parsed: ~7% of a 10,000-cell run's CPU went to parsing it again for
    every batch. psycopg's errors come out as SQLAlchemy's, as from any other statement."""
    import psycopg

    columns = list(rows[0])
    query = (f"INSERT INTO cells ({', '.join(columns)}) VALUES "
             f"({', '.join(f'%({c})s' for c in columns)}) ON CONFLICT DO NOTHING "
             f"RETURNING run_id, case_no, repeat")
    added: set[tuple[int, str, int]] = set()
    try:
        with db.connection.driver_connection.cursor() as cur:
            cur.executemany(query, rows, returning=True)
            while True:
                added.update((r[0], r[1], r[2]) for r in cur.fetchall())
                if not cur.nextset():
                    break
    except psycopg.Error as exc:
        raise DBAPIError.instance(query, None, exc, psycopg.Error) from exc
    return added


class _PendingCell:
    """A cell handed to ``Store.record_cell``, waiting to be written (group commit)."""

    __slots__ = ("cell", "attempts", "grade", "cached", "ready", "lead", "added", "error")

    def __init__(self, cell: CellRow, attempts: Sequence[AttemptRow],
                 grade: tuple[str, str | None, list[dict]] | None,
                 cached: CachedGrade | None = None) -> None:
        self.cell, self.attempts, self.grade, self.cached = cell, attempts, grade, cached
        self.ready = threading.Lock()  # held until the cell is written or handed the writing
        self.ready.acquire()
        self.lead = False  # handed the writing of the cells waiting
        self.added: bool | None = None
        self.error: BaseException | None = None


class Store:
    """One connection per Store, shared by the runner's threads under a lock.

    ``path`` is a SQLite file or a ``postgresql://`` URL (shown with its password masked).
    Every public method turns database errors into one StoreError naming the store
    (see ``_named_damage``, applied below the class).
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
        self._leases: dict[int, int] = {}  # run id → the lease token this Store holds
        self._lease_s: dict[int, float] = {}
        url_of(target)  # a malformed URL is refused before anything is created
        try:
            if self.backend == "sqlite" and target != ":memory:" and not checked:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder: {exc.strerror or exc}"
                             ) from None
        self._lock = threading.RLock()
        # group commit of finished cells (record_cell): the cells waiting to be written, and
        # whether a thread is writing them
        self._cells_lock = threading.Lock()
        self._cells_waiting: list[_PendingCell] = []
        self._cells_writing = False
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
        # cells in the order they were stored: SQLite's rowid, PostgreSQL's identity column
        self._cell_order = literal_column("cells.rowid" if self.backend == "sqlite" else "cells.seq")

    def _cannot_open(self, exc: BaseException) -> StoreError:
        if damaged(exc):
            return StoreDamaged(self.said(damage_message(self.path, exc)))
        kind = StoreUnavailable if _away_at_open(exc) else StoreError
        return kind(self.said(f"{self.path}: cannot open the store: {_reason(exc)}"))

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
    def open(cls, path: str | Path | None = None) -> Store:
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

    def _migrate(self) -> None:
        with self._begin() as conn:
            if schema_version(conn) == SCHEMA_VERSION:
                return
        with self.tx() as conn:
            migrate(conn, self.path)

    def schema_version(self) -> int:
        with self._begin() as conn:
            return schema_version(conn)

    # -- runs ---------------------------------------------------------------------------

    def create_run(self, *, agent: str, version: str, bank_path: str, bank_digest: str,
                   repeats: int, plan: Sequence[tuple[str, str]], settings: dict[str, Any],
                   status: str = "running", source: str = "cli",
                   bank: Mapping[str, Any] | None = None) -> int:
        """``bank``: the rubric of every question in the bank as the run is made (the
        reports read what changed since, and what the run left out: ``run_banks``)."""
        now = time.time()
        running = status == "running"
        with self.tx() as db:
            run_id = int(db.execute(insert(runs).values(
                agent=agent, version=version, bank_path=bank_path, bank_digest=bank_digest,
                repeats=repeats, plan=json.dumps([list(p) for p in plan], ensure_ascii=False),
                settings=json.dumps(settings, ensure_ascii=False), status=status,
                created_at=now, started_at=now if running else None,
                owner=owner_id() if running else None,
                heartbeat_at=store_now() if running else None,
                source=source).returning(runs.c.id)).scalar_one())
            if bank is not None:
                db.execute(insert(run_banks).values(
                    run_id=run_id, questions=json.dumps(bank, ensure_ascii=False)))
            return run_id

    def run_banks(self, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The bank each run was made with (``create_run``'s ``bank``); runs made before
        schema 12 have none."""
        ids, out = list(dict.fromkeys(run_ids)), {}
        for start in range(0, len(ids), 500):  # bound the statement's parameters
            rows = self._rows(select(run_banks).where(
                run_banks.c.run_id.in_(ids[start:start + 500])))
            out.update({r.run_id: json.loads(r.questions) for r in rows})
        return out

    def _run(self, row: Row) -> Run:
        r = row._mapping
        return Run(
            id=r["id"], agent=r["agent"], version=r["version"], bank_path=r["bank_path"],
            bank_digest=r["bank_digest"], repeats=r["repeats"],
            plan=tuple((c, d) for c, d in json.loads(r["plan"])),
            settings=json.loads(r["settings"]), status=r["status"],
            created_at=r["created_at"], started_at=r["started_at"],
            finished_at=r["finished_at"], owner=r["owner"], heartbeat_at=r["heartbeat_at"],
            error=r["error"], source=r["source"], excluded_reason=r["excluded_reason"],
            lease_until=r["lease_until"], lease_token=r["lease_token"],
            read_at=r.get("read_at"),
        )

    def get_run(self, run_id: int) -> Run:
        if not 0 <= run_id <= MAX_ID:  # the database would refuse the number, not find no run
            raise NoSuchRun(f"{self.path}: no run {run_id}")
        rows = self._rows(_read_sql("run"), {"rid": run_id})
        if not rows:
            raise NoSuchRun(f"{self.path}: no run {run_id}")
        return self._run(rows[0])

    def list_runs(self, agent: str | None = None, version: str | None = None,
                  limit: int | None = None) -> list[Run]:
        stmt = _read_sql("runs", bool(agent), bool(version), bool(limit))
        params = {"agent": agent, "version": version, "limit": int(limit) if limit else None}
        return [self._run(r) for r in self._rows(stmt, params)]

    def runs_in(self, conn: Connection) -> list[Run]:
        """Every run as ``conn`` (a transaction of this store's) reads them, newest first: what
        another reader sees as of that transaction's snapshot (``exam store copy``)."""
        return [self._run(r) for r in conn.execute(_read_sql("runs", False, False, False),
                                                   {"agent": None, "version": None,
                                                    "limit": None})]

    def _fenced(self, stmt: Any, run_id: int) -> Any:
        """Limit an UPDATE of a run to this Store's lease on it, if it holds one."""
        token = self._leases.get(run_id)
        return stmt if token is None else stmt.where(runs.c.lease_token == token)

    def _lost(self, run_id: int) -> LeaseLost:
        # the outdated token stays: everything this Store still tries on the run is refused
        return LeaseLost(f"{self.path}: run {run_id}: this process's lease was taken over (by "
                         f"a worker or `exam resume`); it stores nothing more for this run",
                         run_id)

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's status. A worker holding the run's lease keeps it while ``running`` and
        gives it up with a final status; one whose lease was taken gets LeaseLost."""
        now = time.time()
        held = run_id in self._leases
        stmt = self._fenced(update(runs).where(runs.c.id == run_id), run_id)
        if status == "running":
            values: dict[str, Any] = dict(status=status, heartbeat_at=store_now(), error=None,
                                          started_at=func.coalesce(runs.c.started_at, now),
                                          finished_at=None)
            if not held:
                values["owner"] = owner_id()
        elif status in ("done", "failed", "interrupted"):
            values = dict(status=status, finished_at=now, error=error, lease_until=None)
        else:
            values = dict(status=status, error=error)
        with self.tx() as db:
            changed = db.execute(stmt.values(**values)).rowcount
        if held and not changed:
            raise self._lost(run_id)
        if status in ("done", "failed", "interrupted"):
            self._leases.pop(run_id, None)

    def set_excluded(self, run_id: int, reason: str | None) -> None:
        """Exclude a run from every report (``reason``), or include it again (None)."""
        self.get_run(run_id)
        with self.tx() as db:
            db.execute(update(runs).where(runs.c.id == run_id).values(
                excluded_reason=reason, excluded_at=time.time() if reason else None))

    def status_counts(self, run_id: int) -> dict[str, int]:
        """run status → cells of this run."""
        return {r[0]: r[1] for r in self._rows(_read_sql("status_counts"), {"rid": run_id})}

    def status_counts_of(self, run_ids: Sequence[int]) -> dict[int, dict[str, int]]:
        """``status_counts`` of each run, in one query (a list of 100 runs made 300)."""
        out: dict[int, dict[str, int]] = {i: {} for i in run_ids}
        if out:
            for run_id, status, n in self._rows(_read_sql("status_counts_of"), {"ids": list(out)}):
                out[run_id][status] = n
        return out

    def retire_failed_cells(self, run_id: int, statuses: Sequence[str] = RETRY_STATUSES) -> int:
        """Move cells that did not arrive (and their attempts) to the earlier_* tables, so a
        resume runs them again; returns how many. Nothing is deleted from the record."""
        now = time.time()
        with self.tx() as db:
            keys = db.execute(select(cells.c.case_no, cells.c.repeat).where(
                cells.c.run_id == run_id, cells.c.run_status.in_(statuses))).all()
            for case_no, repeat in keys:
                for live, earlier in ((cells, earlier_cells), (_attempts, earlier_attempts)):
                    where = (live.c.run_id == run_id, live.c.case_no == case_no,
                             live.c.repeat == repeat)
                    names = [c.name for c in live.columns]
                    db.execute(insert(earlier).from_select(
                        [*names, "retried_at"],
                        select(*live.columns, literal(now, Double)).where(*where)))
                for live in (_attempts, cells):
                    db.execute(delete(live).where(live.c.run_id == run_id,
                                                  live.c.case_no == case_no,
                                                  live.c.repeat == repeat))
        return len(keys)

    def earlier_cells(self, run_id: int) -> list[dict[str, Any]]:
        e = earlier_cells.c
        return [dict(r._mapping) for r in self._rows(select(earlier_cells).where(
            e.run_id == run_id).order_by(e.retried_at, self._by_code_point(e.case_no), e.repeat))]

    def _by_code_point(self, column: Any) -> Any:
        """Text ordered by code point on both backends (PostgreSQL's collation would not)."""
        return column.collate("C") if self.backend == "postgresql" else column

    # -- claiming and leases ------------------------------------------------------------

    def claim_run(self, worker: str, stale_after_s: float = LEASE_S) -> Run | None:
        """Take the oldest queued run, or a worker's run whose lease has run out.

        The claim holds the run for ``stale_after_s`` (the lease, renewed by ``heartbeat``)
        and raises its lease token, which fences out the worker that held it before. Rows are
        locked as they are read (PostgreSQL: FOR UPDATE SKIP LOCKED, so concurrent claimers
        take different runs; SQLite: the BEGIN IMMEDIATE transaction).
        """
        now = time.time()
        # a run started from the CLI belongs to its user (`exam resume`), not to workers; a
        # lease is judged by the store's clock, never this host's (exam/db/clock.py)
        stmt = select(runs.c.id).where(or_(
            runs.c.status == "queued",
            and_(runs.c.status == "running", runs.c.source != "cli",
                 or_(runs.c.lease_until.is_(None), runs.c.lease_until <= store_now())),
        )).order_by(runs.c.id).limit(1)
        if self.backend == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        with self.tx() as db:
            run_id = db.execute(stmt).scalar()
            if run_id is None:
                return None
            db.execute(update(runs).where(runs.c.id == run_id).values(
                status="running", owner=worker, heartbeat_at=store_now(),
                lease_until=store_now() + stale_after_s, lease_token=runs.c.lease_token + 1,
                started_at=func.coalesce(runs.c.started_at, now), finished_at=None))
            run = self._run(db.execute(_runs_read().where(runs.c.id == run_id)).one())
        self._leases[run.id] = run.lease_token
        self._lease_s[run.id] = stale_after_s
        return run

    def hold_run(self, run_id: int, lease_s: float = LEASE_S) -> Run:
        """Take one named run for this process (``exam run``, ``exam resume``), held by a lease
        as a worker's claim is: renewed by ``heartbeat``, fenced by the raised token (a process
        that stalled and comes back after another took the run over gets LeaseLost).

        Refused (RunBusy) while another process holds it: a live lease, or, for a run started
        by a version without leases, an owner alive on this host. The take is one fenced
        UPDATE, so two ``exam resume`` of one run at once cannot both win, nor can a worker
        and ``exam resume`` of a queued run.
        """
        now = time.time()
        run = self.get_run(run_id)
        why = held_elsewhere(run)
        if why:
            raise RunBusy(why, run_id)
        with self.tx() as db:
            changed = db.execute(update(runs).where(
                runs.c.id == run_id, runs.c.lease_token == run.lease_token).values(
                status="running", owner=owner_id(), heartbeat_at=store_now(),
                lease_until=store_now() + lease_s, lease_token=runs.c.lease_token + 1, error=None,
                started_at=func.coalesce(runs.c.started_at, now), finished_at=None)).rowcount
        if not changed:  # taken between the read and the update
            raise RunBusy(held_elsewhere(self.get_run(run_id))
                          or f"run {run_id} was taken by another process just now", run_id)
        run = self.get_run(run_id)
        self._leases[run.id] = run.lease_token
        self._lease_s[run.id] = lease_s
        return run

    def lease_of(self, run_id: int) -> tuple[int, float] | None:
        """(token, seconds) of this Store's lease on a run, if it holds one."""
        token = self._leases.get(run_id)
        return None if token is None else (token, self._lease_s.get(run_id, LEASE_S))

    def share_lease(self, run_id: int, token: int, lease_s: float) -> None:
        """Write a run's cells under a lease another process holds and renews (a run's helper
        process, exam/pipeline/shard.py): fenced by its token like the holder's own writes,
        so a run taken over is refused to both. This Store never sets the run's status."""
        self._leases[run_id] = token
        self._lease_s[run_id] = lease_s

    def heartbeat(self, run_id: int) -> bool:
        """Renew this Store's lease on a run (or, without one, mark the run alive).
        False when the lease was taken over: the caller should stop working on the run."""
        values: dict[str, Any] = {"heartbeat_at": store_now()}
        if run_id in self._leases:
            values["lease_until"] = store_now() + self._lease_s.get(run_id, LEASE_S)
        with self.tx() as db:
            changed = db.execute(self._fenced(update(runs).where(runs.c.id == run_id), run_id)
                                 .values(**values)).rowcount
        return changed == 1 or run_id not in self._leases

    def release_run(self, run: Run) -> bool:
        """Give a claimed run back to the queue at once (its worker was told to stop): the next
        worker on any host claims it without waiting for the lease to run out, and runs only
        the missing cells. Fenced by the claim's token: False when another worker took it."""
        with self.tx() as db:
            changed = db.execute(update(runs).where(
                runs.c.id == run.id, runs.c.lease_token == run.lease_token,
                runs.c.status.in_(("running", "interrupted")))
                .values(status="queued", owner=None, lease_until=None, error=None,
                        finished_at=None)).rowcount
        self._leases.pop(run.id, None)
        return changed == 1

    # -- cells --------------------------------------------------------------------------

    def record_cell(self, cell: CellRow, attempts: Sequence[AttemptRow],
                    grade: tuple[str, str | None, list[dict]] | None = None,
                    cached: CachedGrade | None = None) -> bool:
        """Store a finished cell, its attempts and (optionally) its grade.

        ``grade`` is (grader version, verdict, checks); ``cached``, the same grade as a row of
        the grade cache, added in the cell's transaction (a row already there is kept, as
        ``cache_grades`` does). Returns False if the cell was there,
        once the cell is committed (never before). Raises LeaseLost when this Store held the
        run's lease and another worker took it.

        Group commit: the runner's threads finish cells faster than one transaction each can
        be committed, so the cells that arrive while one thread writes wait and are written by
        the next thread in one transaction (fenced like one cell: the lease is checked inside
        it). If that transaction fails, each of its cells is tried again on its own, so one
        cell that cannot be stored never costs the others theirs.
        """
        entry = _PendingCell(cell, attempts, grade, cached)
        with self._cells_lock:
            self._cells_waiting.append(entry)
            lead = not self._cells_writing
            self._cells_writing = True
        if not lead:
            try:
                entry.ready.acquire()  # written by another thread, or handed the writing
            except BaseException:  # interrupted while waiting (Ctrl-C in a main-thread caller)
                self._give_up_waiting(entry)
                raise
        if entry.lead or lead:
            self._write_waiting()
        if entry.error is not None:
            raise entry.error
        return bool(entry.added)

    def _give_up_waiting(self, entry: _PendingCell) -> None:
        """A caller stops waiting for its cell: still waiting, it is taken out (never written,
        and the caller knows); handed the writing meanwhile, it writes what waits first, so the
        cells queued behind it are never left with nobody to write them."""
        with self._cells_lock:
            if not entry.lead and entry in self._cells_waiting:
                self._cells_waiting.remove(entry)
                return
            handed = entry.lead
        if handed:
            self._write_waiting()

    def _write_waiting(self) -> None:
        """The writing thread: store the cells waiting (its own first: nobody else waits on
        it), then hand the writing to the first cell that came in meanwhile, if any."""
        try:
            with self._cells_lock:
                batch = self._cells_waiting[:CELL_BATCH]
                del self._cells_waiting[:CELL_BATCH]
            todo = batch
            while todo:
                try:
                    added = self._write_cells(todo)
                except LeaseLost as lost:
                    # that run's cells are refused; the batch's other runs still hold theirs
                    refused = [e for e in todo if e.cell.run_id in (lost.run_id, None)]
                    for e in refused or todo:
                        e.error = self._lost(e.cell.run_id)  # each thread its own object
                    todo = [e for e in todo if e not in refused] if refused else []
                    continue
                except Exception as exc:
                    if len(todo) == 1:
                        todo[0].error = exc
                    else:
                        for e in todo:  # one bad cell must not lose the others: one at a time
                            try:
                                e.added = self._write_cells([e])[0]
                            except Exception as each:
                                e.error = each
                else:
                    for e, was_added in zip(todo, added, strict=True):
                        e.added = was_added
                break
        finally:
            with self._cells_lock:
                for i, e in enumerate(batch):
                    if e.added is None and e.error is None:  # interrupted while writing
                        e.error = StoreError(f"{self.path}: run {e.cell.run_id}: cell "
                                             f"{e.cell.case_no} #{e.cell.repeat} was not stored")
                    if i:  # (a Lock, not an Event: waking 64 threads is cheaper so)
                        e.ready.release()
                if self._cells_waiting:
                    nxt = self._cells_waiting[0]
                    nxt.lead = True
                    nxt.ready.release()
                else:
                    self._cells_writing = False

    def _write_cells(self, batch: Sequence[_PendingCell]) -> list[bool]:
        """One transaction: the lease check of each run in ``batch``, then its cells (a cell
        already there is left as it was: False)."""
        sql = _cell_sql(self.backend)
        text_of = _no_nul if self.backend == "postgresql" else _same
        added: list[bool] = []
        with self.tx() as db:
            for run_id in dict.fromkeys(e.cell.run_id for e in batch):
                token = self._leases.get(run_id)
                # fencing first. PostgreSQL: a shared lock on the run's row, which a claim's
                # UPDATE waits for (and which sees a committed claim's new token), while other
                # writers store their cells alongside; the lease is renewed by the heartbeat.
                # SQLite (one writer at a time anyway): the UPDATE renews the lease as it checks.
                if self.backend == "postgresql":
                    if token is not None and db.execute(sql["fence"], {"rid": run_id}
                                                        ).scalar() != token:
                        raise self._lost(run_id)
                elif token is None:
                    db.execute(sql["beat"], {"rid": run_id})
                elif db.execute(sql["beat_lease"], {
                        "rid": run_id, "token": token,
                        "lease_s": self._lease_s.get(run_id, LEASE_S)}).rowcount == 0:
                    raise self._lost(run_id)
            rows, attempts, grades, cached = [], [], [], []
            for e in batch:
                cell = e.cell
                key = dict(run_id=cell.run_id, case_no=cell.case_no, repeat=cell.repeat)
                rows.append(dict(
                    key, question_digest=cell.question_digest, run_status=cell.run_status,
                    error=text_of(cell.error), text=text_of(cap_text(cell.text)[0]),
                    status=text_of(cell.status), truncated=int(cell.truncated),
                    steps=None if cell.steps is None else text_of(
                        json.dumps(cell.steps, ensure_ascii=False)),
                    attempts=cell.attempts, model_calls=cell.model_calls, tokens=cell.tokens,
                    latency_ms=cell.latency_ms, completed_at=cell.completed_at,
                    tokens_estimated=int(cell.tokens_estimated),
                    usage_note=text_of(cell.usage_note)))
            # one statement for all the cells (a round trip each would serialise PostgreSQL's
            # writers); RETURNING names the cells that were not there yet
            new = (_pg_new_cells(db, rows) if self.backend == "postgresql" else
                   {(r[0], r[1], r[2]) for r in db.execute(sql["cell"], rows)})
            now = time.time()
            for e in batch:
                cell = e.cell
                k = (cell.run_id, cell.case_no, cell.repeat)
                added.append(k in new)
                if k not in new:
                    continue
                key = dict(run_id=cell.run_id, case_no=cell.case_no, repeat=cell.repeat)
                attempts += [dict(
                    key, n=a.n, started_at=a.started_at, http_status=a.http_status,
                    latency_ms=a.latency_ms, error=text_of(a.error),
                    content_type=text_of(a.content_type), body=text_of(a.body),
                    body_bytes=a.body_bytes, body_cut=int(a.body_cut)) for a in e.attempts]
                if e.grade is not None:
                    version, verdict, checks = e.grade
                    grades.append(dict(
                        key, grader_version=version, question_digest=cell.question_digest,
                        verdict=verdict, checks=text_of(json.dumps(checks, ensure_ascii=False)),
                        graded_at=now))
                if e.cached is not None:
                    cached.append(dict(rules=e.cached.rules, reply_key=e.cached.reply_key,
                                       question_key=e.cached.question_key,
                                       verdict=e.cached.verdict,
                                       checks=e.cached.checks))
            if attempts and self.backend == "postgresql":
                _pg_copy_in(db, "attempts", attempts)
            elif attempts:
                db.execute(sql["attempts"], attempts)
            if grades:
                db.execute(sql["grade"], grades)
            if cached:
                # in key order (see cache_grades): another transaction adding the same keys
                # then waits for this one instead of each holding what the other waits for
                cached.sort(key=lambda r: (r["rules"], r["reply_key"], r["question_key"]))
                db.execute(sql["cache"], cached)
        return added

    def done_cells(self, run_id: int) -> set[tuple[str, int]]:
        rows = self._rows(select(cells.c.case_no, cells.c.repeat).where(cells.c.run_id == run_id))
        return {(r[0], r[1]) for r in rows}

    def cell_rowids(self, run_ids: Sequence[int]) -> tuple[int, int, int]:
        """(count, lowest rowid, highest rowid) of the cells of these runs (on PostgreSQL the
        ``seq`` column stands in for SQLite's rowid)."""
        n, lo, hi = self._rows(select(func.count(), func.min(self._cell_order),
                                      func.max(self._cell_order)).select_from(cells).where(
            cells.c.run_id.in_(list(run_ids))))[0]
        return n, lo or 0, hi or 0

    def cells(self, run_ids: Sequence[int], rowids: tuple[int, int] | None = None) -> list[CellRow]:
        """Cells of these runs (optionally only rowids in [lo, hi)), by run, case and repeat."""
        if not run_ids:
            return []
        stmt = select(cells).where(cells.c.run_id.in_(list(run_ids)))
        if rowids is not None:
            stmt = stmt.where(self._cell_order >= rowids[0], self._cell_order < rowids[1])
        stmt = stmt.order_by(cells.c.run_id, self._by_code_point(cells.c.case_no), cells.c.repeat)
        out = []
        # each row becomes a CellRow as it is fetched: the rows are never all held at once
        # (100,000 cells: 165 MB at the peak instead of 189, and 10% less CPU)
        with self._begin() as conn:
            for r in conn.execute(stmt).mappings():
                out.append(CellRow(
                    run_id=r["run_id"], case_no=r["case_no"], repeat=r["repeat"],
                    question_digest=r["question_digest"], run_status=r["run_status"],
                    error=r["error"], text=r["text"], status=r["status"],
                    truncated=bool(r["truncated"]),
                    steps=None if r["steps"] is None else json.loads(r["steps"]),
                    attempts=r["attempts"], model_calls=r["model_calls"], tokens=r["tokens"],
                    latency_ms=r["latency_ms"], completed_at=r["completed_at"],
                    tokens_estimated=bool(r["tokens_estimated"]), usage_note=r["usage_note"]))
        return out

    # -- the grade cache ----------------------------------------------------------------

    def cached_grades(self, rules: str, keys: Sequence[tuple[str, str]]
                      ) -> dict[tuple[str, str], tuple[str, str]]:
        """{(reply_key, question_key): (verdict, checks JSON)} of the keys cached under ``rules``."""
        wanted = set(keys)
        replies = sorted({r for r, _ in wanted})
        found: dict[tuple[str, str], tuple[str, str]] = {}
        gc = grade_cache.c
        for i in range(0, len(replies), GRADE_CACHE_CHUNK):
            part = replies[i:i + GRADE_CACHE_CHUNK]
            for r in self._rows(select(gc.reply_key, gc.question_key, gc.verdict, gc.checks)
                                .where(gc.rules == rules, gc.reply_key.in_(part))):
                key = (r[0], r[1])
                if key in wanted:
                    found[key] = (r[2], r[3])
        return found

    def cache_grades(self, rules: str, rows: Sequence[tuple[str, str, str, str]]) -> bool:
        """Add (reply_key, question_key, verdict, checks JSON) rows; a row already there (another
        process filled it) is kept. False when the store cannot be written (read-only, busy):
        the grades are still right, only not kept."""
        if not rows:
            return True
        # in key order, as record_cell adds them: two PostgreSQL transactions adding the same
        # keys in opposite orders each wait for a key the other holds (a deadlock, one aborted)
        rows = sorted(rows, key=lambda r: (r[0], r[1]))
        try:
            with self.tx() as db:
                if self.backend == "postgresql":
                    _copy_grades(db, rules, rows)
                    return True
                stmt = self._insert(grade_cache).on_conflict_do_nothing()
                # a few thousand rows per execute: SQLAlchemy's batching of 100,000 parameter
                # sets at once held ~50 MB more than the rows themselves (100,000 rows)
                for i in range(0, len(rows), GRADE_CACHE_WRITE_CHUNK):
                    db.execute(stmt, [dict(rules=rules, reply_key=r[0], question_key=r[1],
                                           verdict=r[2], checks=r[3])
                                      for r in rows[i:i + GRADE_CACHE_WRITE_CHUNK]])
        except OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def prune_grade_cache(self, rules: str) -> int:
        """Drop the cached grades (and graded runs) of every other set of rules; how many
        cached grades went."""
        with self.tx() as db:
            db.execute(delete(graded_runs).where(graded_runs.c.rules != rules))
            return db.execute(delete(grade_cache).where(grade_cache.c.rules != rules)).rowcount

    def cell_marks(self, run_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """{run id: (its cells, its earlier cells)}: a mark that changes whenever a run's cells
        do. Cells are only ever added, or moved to earlier_cells (never updated, never deleted
        from there), so no change can bring back a mark seen before."""
        out = {i: [0, 0] for i in run_ids}
        if not out:
            return {}
        for run_id, n, count in self._rows(_read_sql("marks"), {"ids": list(out)}):
            out[run_id][int(n)] = count
        return {i: (a, b) for i, (a, b) in out.items()}

    def graded_runs(self, keys: dict[int, str]) -> dict[int, str]:
        """{run id: cells JSON} of the graded runs kept under exactly these keys."""
        if not keys:
            return {}
        rows = self._rows(_read_sql("graded_runs"), {"ids": list(keys)})
        return {r[0]: r[2] for r in rows if keys[r[0]] == r[1]}

    def graded_run_heads(self, keys: dict[int, str]) -> dict[int, str]:
        """{run id: the first line of its kept text} under exactly these keys: the counts a
        report reads without fetching every kept cell (the database cuts the line)."""
        if not keys:
            return {}
        g = graded_runs.c
        # the first HEAD_PROBE characters: PostgreSQL decompresses only that much of each kept
        # text (cutting at the first line break read every text whole: 24 runs of 100,000
        # cells, 70–310 ms against 8–27 ms); a head longer than that is read with its text
        rows = self._rows(select(g.run_id, g.key, func.substr(g.cells, 1, HEAD_PROBE))
                          .where(g.run_id.in_(list(keys))))
        out, longer = {}, []
        for run_id, key, start in rows:
            if keys[run_id] != key:
                continue
            head, cut, _ = start.partition("\n")
            if cut or len(start) < HEAD_PROBE:
                out[run_id] = head
            else:
                longer.append(run_id)
        for run_id, key, whole in self._rows(select(g.run_id, g.key, g.cells)
                                             .where(g.run_id.in_(longer))) if longer else ():
            if keys[run_id] == key:
                out[run_id] = whole.partition("\n")[0]
        return out

    def keep_graded_run(self, run_id: int, rules: str, key: str, cells_json: str) -> bool:
        """Keep (or replace) a run's graded cells; False when the store cannot be written."""
        stmt = self._insert(graded_runs).values(run_id=run_id, rules=rules, key=key,
                                                cells=cells_json)
        stmt = stmt.on_conflict_do_update(index_elements=[graded_runs.c.run_id],
                                          set_={"rules": rules, "key": key, "cells": cells_json})
        try:
            with self.tx() as db:
                db.execute(stmt)
        except OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def cell_texts(self, run_ids: Sequence[int]) -> dict[tuple[int, str, int], str | None]:
        """{(run id, case, repeat): reply text} of these runs' cells."""
        if not run_ids:
            return {}
        c = cells.c
        return {(r[0], r[1], r[2]): r[3] for r in self._rows(
            select(c.run_id, c.case_no, c.repeat, c.text).where(c.run_id.in_(list(run_ids))))}

    def grade_cache_counts(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self._rows(
            select(grade_cache.c.rules, func.count()).group_by(grade_cache.c.rules))}

    def attempts(self, run_id: int, case_no: str, repeat: int) -> list[AttemptRow]:
        a = _attempts.c
        rows = self._rows(select(_attempts).where(a.run_id == run_id, a.case_no == case_no,
                                                  a.repeat == repeat).order_by(a.n))
        return [AttemptRow(r.n, r.started_at, r.http_status, r.latency_ms, r.error,
                           r.content_type, r.body, r.body_bytes, bool(r.body_cut))
                for r in rows]

    def last_bodies(self, keys: Sequence[tuple[int, str, int]]
                    ) -> dict[tuple[int, str, int], tuple[str | None, bool]]:
        """{(run id, case, repeat): (body, whether it was cut)} of each cell's last attempt,
        in one query (a cell with no attempt is left out): field checks read these bodies
        again, a few hundred cells at a time (``exam.pipeline.reading.replies_of``)."""
        if not keys:
            return {}
        a = _attempts.c
        b = _attempts.alias("last")
        last = select(func.max(b.c.n)).where(
            b.c.run_id == a.run_id, b.c.case_no == a.case_no, b.c.repeat == a.repeat
        ).scalar_subquery()
        stmt = select(a.run_id, a.case_no, a.repeat, a.body, a.body_cut).where(
            tuple_(a.run_id, a.case_no, a.repeat).in_(list(dict.fromkeys(keys))), a.n == last)
        return {(r[0], r[1], r[2]): (r[3], bool(r[4])) for r in self._rows(stmt)}

    def count_cells(self, run_id: int, run_status: str | None = None) -> int:
        return self._value(_read_sql("count", run_status is not None),
                           {"rid": run_id, "status": run_status})

    # -- notifications and LINE events ------------------------------------------------

    def add_notification(self, *, batch: str, channel: str, target: str, run_ids: Sequence[int],
                         retry_key: str, payload: list[dict[str, Any]]) -> int:
        with self.tx() as db:
            return int(db.execute(insert(notifications).values(
                batch=batch, channel=channel, target=target, run_ids=json.dumps(list(run_ids)),
                retry_key=retry_key, payload=json.dumps(payload, ensure_ascii=False),
                status="pending", created_at=time.time()).returning(notifications.c.id)
            ).scalar_one())

    def update_notification(self, nid: int, status: str, attempts: int,
                            error: str | None = None) -> None:
        n = notifications.c
        values: dict[str, Any] = dict(status=status, attempts=n.attempts + attempts,
                                      last_error=error)
        if status == "delivered":
            values["delivered_at"] = time.time()
        with self.tx() as db:
            db.execute(update(notifications).where(n.id == nid).values(**values))

    def notifications(self, status: str | None = None, batch: str | None = None,
                      ids: Sequence[int] = ()) -> list[dict[str, Any]]:
        n = notifications.c
        stmt = select(notifications).order_by(n.id)
        if status:
            stmt = stmt.where(n.status == status)
        if batch:
            stmt = stmt.where(n.batch == batch)
        if ids:
            stmt = stmt.where(n.id.in_(list(ids)))
        return [{**dict(r._mapping), "run_ids": json.loads(r.run_ids),
                 "payload": json.loads(r.payload)} for r in self._rows(stmt)]

    def record_line_events(self, events: Sequence[tuple[str, str, str | None]], claim_s: float
                           ) -> dict[str, float]:
        """Record LINE webhook events, ``(webhookEventId, type, event JSON without its reply
        token, or None for an event not worth handling again)``, before they are handled, each
        held by the caller for ``claim_s``: {id recorded now: the end of its hold}
        (``hold_line_event`` renews it). An id seen before (a redelivery, or the same event
        posted to another service instance sharing this store) is not recorded again and not
        returned."""
        now = time.time()
        new: dict[str, float] = {}
        with self.tx() as db:
            for event_id, kind, event in events:
                # held until the store's clock + claim_s, as every claim (exam/db/clock.py)
                until = db.execute(self._insert(line_events).values(
                    webhook_event_id=event_id, type=kind, received_at=now, event=event,
                    claimed_until=store_now() + claim_s).on_conflict_do_nothing()
                    .returning(line_events.c.claimed_until)).scalar()
                if until is not None:
                    new[event_id] = until
        return new

    def hold_line_event(self, event_id: str, held_until: float, claim_s: float) -> float | None:
        """Renew the caller's hold on an event it recorded or claimed (``held_until``: the end
        of that hold), just before handling it: the new end, or None when the event is no
        longer the caller's to handle (handled, or claimed by another instance once the hold
        ran out: that instance answers it)."""
        e = line_events.c
        with self.tx() as db:
            return db.execute(update(line_events).where(
                e.webhook_event_id == event_id, e.handled_at.is_(None),
                e.claimed_until == held_until).values(claimed_until=store_now() + claim_s)
                .returning(e.claimed_until)).scalar()

    def line_event_handled(self, event_id: str) -> None:
        """Mark an event handled and drop its JSON (people's words and user ids), needed only
        to handle it again: its id (for de-duplication), type and times stay."""
        with self.tx() as db:
            db.execute(update(line_events).where(line_events.c.webhook_event_id == event_id)
                       .values(handled_at=time.time(), event=None))

    def prune_line_events(self, handled_before: float | None) -> int:
        """Delete the events handled before ``handled_before`` (epoch seconds; None: none):
        how many. An event not yet handled is never deleted, however old. A redelivery of a
        deleted id is recorded as new (LINE redelivers within hours, the ids are kept for
        days). Also drops the JSON that events handled by an older version still hold (it is
        dropped as each event is marked handled now)."""
        e = line_events.c
        with self.tx() as db:
            db.execute(update(line_events).where(e.handled_at.is_not(None), e.event.is_not(None))
                       .values(event=None))
            if handled_before is None:
                return 0
            return db.execute(delete(line_events).where(
                e.handled_at.is_not(None), e.handled_at < handled_before)).rowcount

    def claim_unhandled_line_events(self, claim_s: float, limit: int = 20
                                    ) -> list[tuple[str, str, float]]:
        """Recorded events never marked handled whose claim ran out (the instance handling them
        died after answering LINE), oldest first, as ``(id, event JSON, end of the hold)``;
        each is now held by the caller for ``claim_s``. Concurrent claimers take different
        events (FOR UPDATE SKIP LOCKED on PostgreSQL, BEGIN IMMEDIATE on SQLite)."""
        e = line_events.c
        now = time.time()
        stmt = (select(e.webhook_event_id, e.event)
                .where(e.handled_at.is_(None), e.event.is_not(None),
                       e.claimed_until <= store_now())
                .order_by(e.received_at).limit(limit))
        if self.backend == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        with self.tx() as db:
            # an event recorded with nothing to handle again (a chat line, not a command) whose
            # instance died before marking it: nothing is owed, so it is marked handled here
            # (else it stayed unhandled, and kept, for ever)
            db.execute(update(line_events).where(
                e.handled_at.is_(None), e.event.is_(None), e.claimed_until <= store_now())
                .values(handled_at=now))
            found = [(r.webhook_event_id, r.event) for r in db.execute(stmt)]
            if not found:
                return []
            held = dict(db.execute(update(line_events)
                                   .where(e.webhook_event_id.in_([i for i, _ in found]))
                                   .values(claimed_until=store_now() + claim_s)
                                   .returning(e.webhook_event_id, e.claimed_until)).all())
        return [(i, event, held[i]) for i, event in found]

    def line_event_state(self, event_id: str) -> str | None:
        """``handled``, ``pending`` (recorded, not yet handled) or None (never recorded)."""
        e = line_events.c
        row = self._rows(select(e.handled_at).where(e.webhook_event_id == event_id))
        if not row:
            return None
        return "pending" if row[0].handled_at is None else "handled"

    def add_group(self, group_id: str) -> None:
        with self.tx() as db:
            db.execute(self._insert(line_groups).values(group_id=group_id, joined_at=time.time())
                       .on_conflict_do_nothing())

    def now(self) -> float:
        """The store's time (epoch seconds, ``exam/db/clock.py``): what share links are signed
        and judged by, so hosts whose clocks disagree agree on when a link expires."""
        return float(self._value(select(store_now())))

    # -- dashboard sessions -------------------------------------------------------------

    def open_session(self, session_id: str, role: str, lifetime_s: float) -> None:
        """Keep a dashboard login (``session_id``: a digest of the id its cookie holds) until
        ``lifetime_s`` from now by the store's clock; sessions past their end are deleted on
        the way, so the table holds the live ones and a few."""
        v = sessions.c
        with self.tx() as db:
            db.execute(delete(sessions).where(v.until <= store_now()))
            db.execute(insert(sessions).values(id=session_id, role=role, created_at=store_now(),
                                               until=store_now() + lifetime_s))

    def session_role(self, session_id: str) -> str | None:
        """The role of a dashboard login still open (not logged out, not past its end by the
        store's clock), or None."""
        return self._value(_read_sql("session_role"), {"sid": session_id})

    def close_session(self, session_id: str) -> None:
        """Log a dashboard session out, on every instance from their next request."""
        with self.tx() as db:
            db.execute(delete(sessions).where(sessions.c.id == session_id))

    # -- share links revoked ------------------------------------------------------------

    def revoke_share_link(self, link: str, page: str, until: float, reason: str = ""
                          ) -> tuple[Revocation, bool]:
        """Revoke one share link by its id (never its token): the revocation in force, and
        whether it is new (a link revoked before keeps its first revocation). The revocations
        of links expired a day ago go (``_prune_revocations``), here and in
        ``revoke_share_page``."""
        v = share_revocations.c
        with self.tx() as db:
            _prune_revocations(db)
            new = db.execute(self._insert(share_revocations).values(
                link=link, page=page, until=until, revoked_at=time.time(), reason=reason)
                .on_conflict_do_nothing().returning(v.id)).first() is not None
            row = db.execute(select(share_revocations).where(v.link == link)).one()
        return Revocation(**row._mapping), new

    def revoke_share_page(self, page: str, made_before: float, reason: str = "") -> Revocation:
        """Revoke every share link to ``page`` made before ``made_before`` (epoch seconds)."""
        with self.tx() as db:
            _prune_revocations(db)
            row = db.execute(insert(share_revocations).values(
                page=page, made_before=made_before, revoked_at=time.time(), reason=reason)
                .returning(*share_revocations.c)).one()
        return Revocation(**row._mapping)

    def share_revocations(self, links: Sequence[str], pages: Sequence[str]
                          ) -> list[Revocation]:
        """The revocations of these link ids, and of every link to these pages: what a
        request read through share links looks up, one read by two indexes (links and
        pages ≤ MAX_GRANTS)."""
        if not links and not pages:
            return []
        rows = self._rows(_read_sql("share_revocations"),
                          {"links": list(links), "pages": list(pages)})
        return [Revocation(**r._mapping) for r in rows]

    def all_share_revocations(self, page: str | None = None) -> list[Revocation]:
        """Every revocation (of links to ``page``), oldest first (``exam share list``, the
        scorecard page's admin)."""
        stmt = select(share_revocations).order_by(share_revocations.c.id)
        if page is not None:
            stmt = stmt.where(share_revocations.c.page == page)
        return [Revocation(**r._mapping) for r in self._rows(stmt)]

    # -- versions shipped by hand -------------------------------------------------------

    def add_ship_record(self, agent: str, version: str, shipped_by: str = "", reason: str = "",
                        source: str = "cli") -> ShipRecord:
        """Record that ``version`` of ``agent`` shipped (a person's decision); a new row every
        time, never an update: the newest row of an agent is its last decision."""
        with self.tx() as db:
            row = db.execute(insert(shipped).values(
                agent=agent, version=version, shipped_at=time.time(), shipped_by=shipped_by,
                reason=reason, source=source).returning(*shipped.c)).one()
        return ShipRecord(**row._mapping)

    def ship_records(self, agent: str | None = None) -> list[ShipRecord]:
        """Ship decisions made by hand (of ``agent``), oldest first."""
        stmt = select(shipped).order_by(shipped.c.id)
        if agent is not None:
            stmt = stmt.where(shipped.c.agent == agent)
        return [ShipRecord(**r._mapping) for r in self._rows(stmt)]

    def add_settle_round(self, run_id: int, old: str, new: str) -> None:
        """Mark ``run_id`` as a round `exam compare OLD NEW --settle` made."""
        with self.tx() as db:
            db.execute(self._insert(settle_rounds).values(run_id=run_id, old=old, new=new)
                       .on_conflict_do_nothing())

    def settle_rounds_of(self, run_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """run id → (old, new) of the comparison whose --settle made it, for these runs."""
        if not run_ids:
            return {}
        s = settle_rounds.c
        rows = self._rows(select(s.run_id, s.old, s.new).where(s.run_id.in_(list(run_ids))))
        return {r.run_id: (r.old, r.new) for r in rows}

    # -- adjudications ------------------------------------------------------------------

    def add_adjudication(self, *, reply_digest: str, check_name: str, question_digest: str,
                         rule_version: str, decision: str, reason: str, reviewer: str,
                         agent: str, case_no: str) -> None:
        """Record (or replace) a person's decision on what was judged (a replaced decision
        is a new row, the newest)."""
        a = adjudications.c
        with self.tx() as db:
            db.execute(delete(adjudications).where(
                a.reply_digest == reply_digest, a.check_name == check_name,
                a.question_digest == question_digest, a.rule_version == rule_version))
            db.execute(insert(adjudications).values(
                reply_digest=reply_digest, check_name=check_name, question_digest=question_digest,
                rule_version=rule_version, decision=decision, reason=reason, reviewer=reviewer,
                decided_at=time.time(), agent=agent, case_no=case_no))

    def adjudications(self) -> list[dict[str, Any]]:
        return [dict(r._mapping) for r in self._rows(_read_sql("adjudications"))]

    def adjudications_mark(self) -> tuple:
        """A mark that changes whenever the review decisions do, read without reading them
        (the API's kept answers check it on every request: 5,000 decisions read whole took
        117 ms). A decision is never updated: it is inserted, or replaced by deleting it and
        inserting the new one with the time of the decision. So any change raises the count or
        the highest id, except replacing the decision that holds the highest id, which SQLite
        gives the same id again: the mark holds that decision's answer too (decision, reason,
        reviewer), so it changes even when the new one's time equals the replaced one's to
        the last bit (hosts whose clocks read the same). One statement: one snapshot."""
        a = adjudications.c
        latest = select(func.max(a.id)).scalar_subquery()

        def of_latest(column: Any) -> Any:
            return select(column).where(a.id == latest).scalar_subquery()

        row = self._rows(select(func.count(), func.max(a.id), func.sum(a.decided_at),
                                func.max(a.decided_at), of_latest(a.decision),
                                of_latest(a.reason), of_latest(a.reviewer)))[0]
        return tuple(row)

    # -- rebalance snapshots ------------------------------------------------------------

    def add_rebalance_snapshot(self, agent: str, since: str | None,
                               snapshot: dict[str, Any]) -> int:
        """Keep one agent's rebalance; returns its id."""
        with self.tx() as db:
            return int(db.execute(insert(rebalance_snapshots).values(
                agent=agent, created_at=time.time(), since=since,
                snapshot=json.dumps(snapshot, ensure_ascii=False),
            ).returning(rebalance_snapshots.c.id)).scalar_one())

    def rebalance_snapshots(self, agent: str) -> list[dict[str, Any]]:
        """An agent's saved rebalances, oldest first."""
        s = rebalance_snapshots.c
        rows = self._rows(select(rebalance_snapshots).where(s.agent == agent).order_by(s.id))
        return [{**dict(r._mapping), "snapshot": json.loads(r.snapshot)} for r in rows]

    def integrity_check(self) -> str:
        """SQLite's integrity check; on PostgreSQL (which checks its pages itself) "ok" when
        every table can be read."""
        if self.backend == "sqlite":
            return self._value(text("PRAGMA integrity_check"))
        for table in TABLES:
            self._value(select(func.count()).select_from(table))
        return "ok"


for _name, _method in list(vars(Store).items()):
    if callable(_method) and not _name.startswith("_") and _name != "tx":
        setattr(Store, _name, _named_damage(_method))
