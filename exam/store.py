"""The SQLite store: runs, cells (question × repeat), attempts with raw bodies, grades.

WAL mode so readers never block the runner; every finished cell is one transaction,
so a run killed with ``kill -9`` loses only the cells in flight, and ``exam resume``
redoes exactly those (the primary key makes a duplicate impossible). The schema is
versioned with ``PRAGMA user_version`` and migrated forward on open.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam.errors import StoreError

DEFAULT_DB = "results/exam.db"
BODY_CAP_BYTES = 1_000_000  # raw bodies stored up to this size; a note marks a cut body
TEXT_CAP_CHARS = 200_000  # a cell's reply text; a longer one is a bad_reply, its start kept

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
    # 8: each finished run's graded cells as one row, so a report over many runs reads one row
    # per run instead of every cell (exam/reports/regrade.py makes the key and the JSON)
    """
    CREATE TABLE graded_runs (
        run_id INTEGER PRIMARY KEY,
        rules TEXT NOT NULL,              -- the grade cache's rules key (prune drops the others)
        key TEXT NOT NULL,                -- rules, today's questions, the run's cells mark
        cells TEXT NOT NULL               -- JSON: the graded cells before any review decision
    )
    """,
)
GRADE_CACHE_CHUNK = 500  # keys per lookup query (SQLite's bound-variable limit is far above)

RETRY_STATUSES = ("blocked", "timeout", "http_error", "harness_error")


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str | None) -> bool:
    """Whether the process that owns a run still exists (only knowable on this host)."""
    if not owner or ":" not in owner:
        return False
    host, pid = owner.rsplit(":", 1)
    if host != socket.gethostname():
        return True  # another machine: assume alive, the heartbeat tells
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


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

    @property
    def total_cells(self) -> int:
        return len(self.plan) * self.repeats

    @property
    def shown_status(self) -> str:
        """'running' whose process is gone reads 'interrupted': resumable."""
        if self.status == "running" and not owner_alive(self.owner):
            return "interrupted"
        return self.status


@dataclass(frozen=True, slots=True)
class AttemptRow:
    n: int
    started_at: float
    http_status: int | None
    latency_ms: float
    error: str
    content_type: str | None
    body: str | None
    body_bytes: int | None
    body_cut: bool


@dataclass(frozen=True, slots=True)
class CellRow:
    run_id: int
    case_no: str
    repeat: int
    question_digest: str
    run_status: str
    error: str
    text: str | None
    status: str | None
    truncated: bool
    steps: list[dict[str, Any]] | None
    attempts: int
    model_calls: int | None
    tokens: int | None
    latency_ms: float | None
    completed_at: float
    tokens_estimated: bool = False  # the tokens are n8n's estimate, not the provider's count
    usage_note: str = ""  # where model calls and tokens came from, or why they are unknown


def _select(table: str, **equal: Any) -> tuple[str, list[Any]]:
    """SELECT * with an equality condition for each filter that is set (None/"" = any)."""
    sql, args = f"SELECT * FROM {table} WHERE 1=1", []
    for column, value in equal.items():
        if value:
            sql += f" AND {column}=?"
            args.append(value)
    return sql, args


def cap_body(body: str | None) -> tuple[str | None, int | None, bool]:
    if body is None:
        return None, None, False
    raw = body.encode("utf-8", "replace")
    if len(raw) <= BODY_CAP_BYTES:
        return body, len(raw), False
    return raw[:BODY_CAP_BYTES].decode("utf-8", "ignore"), len(raw), True


def cap_text(text: str | None) -> tuple[str | None, bool]:
    """(the text kept, whether it was cut) under TEXT_CAP_CHARS."""
    if text is None or len(text) <= TEXT_CAP_CHARS:
        return text, False
    return text[:TEXT_CAP_CHARS], True


def damaged(exc: sqlite3.Error) -> bool:
    """SQLite says the file is corrupt or not a database (overwritten pages, a truncated copy)."""
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(exc) for s in ("malformed", "not a database"))


def damage_message(path: str, exc: sqlite3.Error) -> str:
    return (f"{path}: the store is damaged ({exc}): restore it from a backup, or save what can "
            f"be read with: sqlite3 {path} .recover | sqlite3 recovered.db")


def _named_damage(method: Callable[..., Any]) -> Callable[..., Any]:
    """A damaged file raises StoreError naming the store, not a bare sqlite3.DatabaseError."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                raise StoreError(damage_message(self.path, exc)) from None
            raise

    return wrapper


class Store:
    """One connection per Store, shared by the runner's threads under a lock.

    Every public method turns a damaged file's errors into one StoreError naming the store
    (see ``_named_damage``, applied below the class).
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder: {exc.strerror or exc}"
                             ) from None
        try:
            self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False,
                                       isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            if damaged(exc):
                raise StoreError(damage_message(self.path, exc)) from None
            raise StoreError(f"{self.path}: cannot open the store: {exc}") from None
        self._lock = threading.RLock()
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                self._db.close()
                raise StoreError(damage_message(self.path, exc)) from None
            raise

    @classmethod
    def open(cls, path: str | Path | None = None) -> Store:
        return cls(path or os.environ.get("EXAM_DB") or DEFAULT_DB)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front (BEGIN IMMEDIATE), so it never deadlocks."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self.tx() as db:
            current = db.execute("PRAGMA user_version").fetchone()[0]
            if current > len(MIGRATIONS):
                raise StoreError(f"{self.path}: schema version {current} is newer than this "
                                 f"agent-exam understands ({len(MIGRATIONS)}): upgrade agent-exam")
            for version, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={version}")

    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    # -- runs ---------------------------------------------------------------------------

    def create_run(self, *, agent: str, version: str, bank_path: str, bank_digest: str,
                   repeats: int, plan: Sequence[tuple[str, str]], settings: dict[str, Any],
                   status: str = "running", source: str = "cli") -> int:
        now = time.time()
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO runs (agent, version, bank_path, bank_digest, repeats, plan, settings,"
                " status, created_at, started_at, owner, heartbeat_at, source)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (agent, version, bank_path, bank_digest, repeats,
                 json.dumps([list(p) for p in plan], ensure_ascii=False),
                 json.dumps(settings, ensure_ascii=False), status, now,
                 now if status == "running" else None,
                 owner_id() if status == "running" else None,
                 now if status == "running" else None, source))
            return int(cur.lastrowid)

    def _run(self, row: sqlite3.Row) -> Run:
        return Run(
            id=row["id"], agent=row["agent"], version=row["version"], bank_path=row["bank_path"],
            bank_digest=row["bank_digest"], repeats=row["repeats"],
            plan=tuple((c, d) for c, d in json.loads(row["plan"])),
            settings=json.loads(row["settings"]), status=row["status"],
            created_at=row["created_at"], started_at=row["started_at"],
            finished_at=row["finished_at"], owner=row["owner"], heartbeat_at=row["heartbeat_at"],
            error=row["error"], source=row["source"], excluded_reason=row["excluded_reason"],
        )

    def get_run(self, run_id: int) -> Run:
        with self._lock:
            row = self._db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id}")
        return self._run(row)

    def list_runs(self, agent: str | None = None, version: str | None = None,
                  limit: int | None = None) -> list[Run]:
        sql, args = _select("runs", agent=agent, version=version)
        sql += " ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            return [self._run(r) for r in self._db.execute(sql, args)]

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        now = time.time()
        with self.tx() as db:
            if status == "running":
                db.execute("UPDATE runs SET status=?, owner=?, heartbeat_at=?, error=NULL,"
                           " started_at=COALESCE(started_at, ?), finished_at=NULL WHERE id=?",
                           (status, owner_id(), now, now, run_id))
            elif status in ("done", "failed", "interrupted"):
                db.execute("UPDATE runs SET status=?, finished_at=?, error=? WHERE id=?",
                           (status, now, error, run_id))
            else:
                db.execute("UPDATE runs SET status=?, error=? WHERE id=?", (status, error, run_id))

    def set_excluded(self, run_id: int, reason: str | None) -> None:
        """Exclude a run from every report (``reason``), or include it again (None)."""
        self.get_run(run_id)
        with self.tx() as db:
            db.execute("UPDATE runs SET excluded_reason=?, excluded_at=? WHERE id=?",
                       (reason, time.time() if reason else None, run_id))

    def status_counts(self, run_id: int) -> dict[str, int]:
        """run status → cells of this run."""
        with self._lock:
            rows = self._db.execute("SELECT run_status, COUNT(*) FROM cells WHERE run_id=?"
                                    " GROUP BY run_status", (run_id,)).fetchall()
        return {r[0]: r[1] for r in rows}

    def retire_failed_cells(self, run_id: int, statuses: Sequence[str] = RETRY_STATUSES) -> int:
        """Move cells that did not arrive (and their attempts) to the earlier_* tables, so a
        resume runs them again; returns how many. Nothing is deleted from the record."""
        marks = ",".join("?" * len(statuses))
        now = time.time()
        with self.tx() as db:
            keys = db.execute(f"SELECT case_no, repeat FROM cells WHERE run_id=? AND run_status"
                              f" IN ({marks})", (run_id, *statuses)).fetchall()
            # the columns both tables have, so a later migration of cells cannot break this
            shared = {}
            for table in ("cells", "attempts"):
                mine = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
                theirs = {r[1] for r in db.execute(f"PRAGMA table_info(earlier_{table})")}
                shared[table] = ", ".join(c for c in mine if c in theirs)
            for case_no, repeat in keys:
                where = "run_id=? AND case_no=? AND repeat=?"
                args = (run_id, case_no, repeat)
                for table in ("cells", "attempts"):
                    cols = shared[table]
                    db.execute(f"INSERT INTO earlier_{table} ({cols}, retried_at)"
                               f" SELECT {cols}, ? FROM {table} WHERE {where}", (now, *args))
                db.execute(f"DELETE FROM attempts WHERE {where}", args)
                db.execute(f"DELETE FROM cells WHERE {where}", args)
        return len(keys)

    def earlier_cells(self, run_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._db.execute(
                "SELECT * FROM earlier_cells WHERE run_id=? ORDER BY retried_at, case_no, repeat",
                (run_id,))]

    def claim_run(self, worker: str, stale_after_s: float = 30.0) -> Run | None:
        """Take the oldest queued run, or a running one whose worker is gone.

        A worker is gone when its process no longer exists on this host, or (elsewhere) when
        its heartbeat is older than ``stale_after_s``.
        """
        now = time.time()
        with self.tx() as db:
            # a run started from the CLI belongs to its user (`exam resume`), not to workers
            rows = db.execute("SELECT * FROM runs WHERE status='queued' OR (status='running'"
                              " AND source != 'cli') ORDER BY id").fetchall()
            for row in rows:
                if row["status"] == "running":
                    fresh = row["heartbeat_at"] is not None and \
                        row["heartbeat_at"] >= now - stale_after_s
                    if fresh and owner_alive(row["owner"]):
                        continue
                db.execute("UPDATE runs SET status='running', owner=?, heartbeat_at=?,"
                           " started_at=COALESCE(started_at, ?), finished_at=NULL WHERE id=?",
                           (worker, now, now, row["id"]))
                return self._run(db.execute("SELECT * FROM runs WHERE id=?",
                                            (row["id"],)).fetchone())
        return None

    def heartbeat(self, run_id: int) -> None:
        with self.tx() as db:
            db.execute("UPDATE runs SET heartbeat_at=? WHERE id=?", (time.time(), run_id))

    # -- cells --------------------------------------------------------------------------

    def record_cell(self, cell: CellRow, attempts: Sequence[AttemptRow],
                    grade: tuple[str, str | None, list[dict]] | None = None) -> bool:
        """Store a finished cell, its attempts and (optionally) its grade in one transaction.

        ``grade`` is (grader version, verdict, checks). Returns False if the cell was there.
        """
        with self.tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO cells (run_id, case_no, repeat, question_digest, run_status,"
                " error, text, status, truncated, steps, attempts, model_calls, tokens, latency_ms,"
                " completed_at, tokens_estimated, usage_note)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (cell.run_id, cell.case_no, cell.repeat, cell.question_digest, cell.run_status,
                 cell.error, cap_text(cell.text)[0], cell.status, int(cell.truncated),
                 None if cell.steps is None else json.dumps(cell.steps, ensure_ascii=False),
                 cell.attempts, cell.model_calls, cell.tokens, cell.latency_ms,
                 cell.completed_at, int(cell.tokens_estimated), cell.usage_note))
            if cur.rowcount == 0:
                return False
            db.executemany(
                "INSERT INTO attempts (run_id, case_no, repeat, n, started_at, http_status,"
                " latency_ms, error, content_type, body, body_bytes, body_cut)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(cell.run_id, cell.case_no, cell.repeat, a.n, a.started_at, a.http_status,
                  a.latency_ms, a.error, a.content_type, a.body, a.body_bytes, int(a.body_cut))
                 for a in attempts])
            if grade is not None:
                version, verdict, checks = grade
                db.execute("INSERT OR REPLACE INTO grades VALUES (?,?,?,?,?,?,?,?)",
                           (cell.run_id, cell.case_no, cell.repeat, version,
                            cell.question_digest, verdict, json.dumps(checks, ensure_ascii=False),
                            time.time()))
            db.execute("UPDATE runs SET heartbeat_at=? WHERE id=?", (time.time(), cell.run_id))
        return True

    def done_cells(self, run_id: int) -> set[tuple[str, int]]:
        with self._lock:
            rows = self._db.execute("SELECT case_no, repeat FROM cells WHERE run_id=?", (run_id,))
            return {(r[0], r[1]) for r in rows}

    def cell_rowids(self, run_ids: Sequence[int]) -> tuple[int, int, int]:
        """(count, lowest rowid, highest rowid) of the cells of these runs."""
        marks = ",".join("?" * len(run_ids))
        with self._lock:
            n, lo, hi = self._db.execute(
                f"SELECT COUNT(*), MIN(rowid), MAX(rowid) FROM cells WHERE run_id IN ({marks})",
                list(run_ids)).fetchone()
        return n, lo or 0, hi or 0

    def cells(self, run_ids: Sequence[int], rowids: tuple[int, int] | None = None) -> list[CellRow]:
        """Cells of these runs (optionally only rowids in [lo, hi)), by run, case and repeat."""
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        where, args = f"run_id IN ({marks})", list(run_ids)
        if rowids is not None:
            where += " AND rowid >= ? AND rowid < ?"
            args += list(rowids)
        with self._lock:
            rows = self._db.execute(
                f"SELECT * FROM cells WHERE {where} ORDER BY run_id, case_no, repeat",
                args).fetchall()
        return [CellRow(
            run_id=r["run_id"], case_no=r["case_no"], repeat=r["repeat"],
            question_digest=r["question_digest"], run_status=r["run_status"], error=r["error"],
            text=r["text"], status=r["status"], truncated=bool(r["truncated"]),
            steps=None if r["steps"] is None else json.loads(r["steps"]),
            attempts=r["attempts"], model_calls=r["model_calls"], tokens=r["tokens"],
            latency_ms=r["latency_ms"], completed_at=r["completed_at"],
            tokens_estimated=bool(r["tokens_estimated"]), usage_note=r["usage_note"])
            for r in rows]

    # -- the grade cache ----------------------------------------------------------------

    def cached_grades(self, rules: str, keys: Sequence[tuple[str, str]]
                      ) -> dict[tuple[str, str], tuple[str, str]]:
        """{(reply_key, question_key): (verdict, checks JSON)} of the keys cached under ``rules``."""
        wanted = set(keys)
        replies = sorted({r for r, _ in wanted})
        found: dict[tuple[str, str], tuple[str, str]] = {}
        with self._lock:
            for i in range(0, len(replies), GRADE_CACHE_CHUNK):
                part = replies[i:i + GRADE_CACHE_CHUNK]
                rows = self._db.execute(
                    "SELECT reply_key, question_key, verdict, checks FROM grade_cache"
                    f" WHERE rules=? AND reply_key IN ({','.join('?' * len(part))})",
                    [rules, *part]).fetchall()
                for r in rows:
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
        try:
            with self.tx() as db:
                db.executemany("INSERT OR IGNORE INTO grade_cache VALUES (?,?,?,?,?)",
                               [(rules, *r) for r in rows])
        except sqlite3.OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def prune_grade_cache(self, rules: str) -> int:
        """Drop the cached grades (and graded runs) of every other set of rules; how many
        cached grades went."""
        with self.tx() as db:
            db.execute("DELETE FROM graded_runs WHERE rules != ?", (rules,))
            return db.execute("DELETE FROM grade_cache WHERE rules != ?", (rules,)).rowcount

    def cell_marks(self, run_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """{run id: (its cells, its earlier cells)}: a mark that changes whenever a run's cells
        do. Cells are only ever added, or moved to earlier_cells (never updated, never deleted
        from there), so no change can bring back a mark seen before."""
        if not run_ids:
            return {}
        marks = ",".join("?" * len(run_ids))
        out = {i: [0, 0] for i in run_ids}
        with self._lock:
            for n, table in enumerate(("cells", "earlier_cells")):
                for run_id, count in self._db.execute(
                        f"SELECT run_id, COUNT(*) FROM {table} WHERE run_id IN ({marks})"
                        " GROUP BY run_id", list(run_ids)):
                    out[run_id][n] = count
        return {i: (a, b) for i, (a, b) in out.items()}

    def graded_runs(self, keys: dict[int, str]) -> dict[int, str]:
        """{run id: cells JSON} of the graded runs kept under exactly these keys."""
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        with self._lock:
            rows = self._db.execute(f"SELECT run_id, key, cells FROM graded_runs"
                                    f" WHERE run_id IN ({marks})", list(keys)).fetchall()
        return {r[0]: r[2] for r in rows if keys[r[0]] == r[1]}

    def keep_graded_run(self, run_id: int, rules: str, key: str, cells: str) -> bool:
        """Keep (or replace) a run's graded cells; False when the store cannot be written."""
        try:
            with self.tx() as db:
                db.execute("INSERT OR REPLACE INTO graded_runs VALUES (?,?,?,?)",
                           (run_id, rules, key, cells))
        except sqlite3.OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def cell_texts(self, run_ids: Sequence[int]) -> dict[tuple[int, str, int], str | None]:
        """{(run id, case, repeat): reply text} of these runs' cells."""
        if not run_ids:
            return {}
        marks = ",".join("?" * len(run_ids))
        with self._lock:
            return {(r[0], r[1], r[2]): r[3] for r in self._db.execute(
                f"SELECT run_id, case_no, repeat, text FROM cells WHERE run_id IN ({marks})",
                list(run_ids))}

    def grade_cache_counts(self) -> dict[str, int]:
        with self._lock:
            return {r[0]: r[1] for r in self._db.execute(
                "SELECT rules, COUNT(*) FROM grade_cache GROUP BY rules")}

    def attempts(self, run_id: int, case_no: str, repeat: int) -> list[AttemptRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM attempts WHERE run_id=? AND case_no=? AND repeat=? ORDER BY n",
                (run_id, case_no, repeat)).fetchall()
        return [AttemptRow(r["n"], r["started_at"], r["http_status"], r["latency_ms"], r["error"],
                           r["content_type"], r["body"], r["body_bytes"], bool(r["body_cut"]))
                for r in rows]

    def count_cells(self, run_id: int, run_status: str | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM cells WHERE run_id=?", [run_id]
        if run_status is not None:
            sql, args = sql + " AND run_status=?", args + [run_status]
        with self._lock:
            return self._db.execute(sql, args).fetchone()[0]

    # -- notifications and LINE events ------------------------------------------------

    def add_notification(self, *, batch: str, channel: str, target: str, run_ids: Sequence[int],
                         retry_key: str, payload: list[dict[str, Any]]) -> int:
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO notifications (batch, channel, target, run_ids, retry_key, payload,"
                " status, created_at) VALUES (?,?,?,?,?,?, 'pending', ?)",
                (batch, channel, target, json.dumps(list(run_ids)), retry_key,
                 json.dumps(payload, ensure_ascii=False), time.time()))
            return int(cur.lastrowid)

    def update_notification(self, nid: int, status: str, attempts: int,
                            error: str | None = None) -> None:
        with self.tx() as db:
            db.execute("UPDATE notifications SET status=?, attempts=attempts+?, last_error=?,"
                       " delivered_at=CASE WHEN ?='delivered' THEN ? ELSE delivered_at END"
                       " WHERE id=?", (status, attempts, error, status, time.time(), nid))

    def notifications(self, status: str | None = None, batch: str | None = None,
                      ids: Sequence[int] = ()) -> list[dict[str, Any]]:
        sql, args = _select("notifications", status=status, batch=batch)
        if ids:
            sql += f" AND id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [{**dict(r), "run_ids": json.loads(r["run_ids"]), "payload": json.loads(r["payload"])}
                for r in rows]

    def first_sight_of_event(self, event_id: str, kind: str) -> bool:
        """Record a LINE webhook event id; False when it was seen before (a redelivery)."""
        with self.tx() as db:
            cur = db.execute("INSERT OR IGNORE INTO line_events VALUES (?,?,?)",
                             (event_id, kind, time.time()))
            return cur.rowcount == 1

    def add_group(self, group_id: str) -> None:
        with self.tx() as db:
            db.execute("INSERT OR IGNORE INTO line_groups VALUES (?,?)", (group_id, time.time()))

    # -- adjudications ------------------------------------------------------------------

    def add_adjudication(self, *, reply_digest: str, check_name: str, question_digest: str,
                         rule_version: str, decision: str, reason: str, reviewer: str,
                         agent: str, case_no: str) -> None:
        """Record (or replace) a person's decision on what was judged."""
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO adjudications (reply_digest, check_name, question_digest,"
                " rule_version, decision, reason, reviewer, decided_at, agent, case_no)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (reply_digest, check_name, question_digest, rule_version, decision, reason,
                 reviewer, time.time(), agent, case_no))

    def adjudications(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._db.execute("SELECT * FROM adjudications ORDER BY id")]

    # -- rebalance snapshots ------------------------------------------------------------

    def add_rebalance_snapshot(self, agent: str, since: str | None,
                               snapshot: dict[str, Any]) -> int:
        """Keep one agent's rebalance; returns its id."""
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO rebalance_snapshots (agent, created_at, since, snapshot)"
                " VALUES (?,?,?,?)",
                (agent, time.time(), since, json.dumps(snapshot, ensure_ascii=False)))
            return int(cur.lastrowid)

    def rebalance_snapshots(self, agent: str) -> list[dict[str, Any]]:
        """An agent's saved rebalances, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM rebalance_snapshots WHERE agent=? ORDER BY id",
                                    (agent,)).fetchall()
        return [{**dict(r), "snapshot": json.loads(r["snapshot"])} for r in rows]

    def integrity_check(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0]


for _name, _method in list(vars(Store).items()):
    if callable(_method) and not _name.startswith("_") and _name != "tx":
        setattr(Store, _name, _named_damage(_method))
