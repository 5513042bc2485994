"""The store's tables as they are today (schema ``SCHEMA_VERSION``), for queries and copies.

The migrations under ``exam/db/migrations/versions`` are frozen snapshots of how each schema was
reached; this module is the current shape they lead to, on both backends. SQLite's implicit
``rowid`` orders cells; PostgreSQL has no rowid, so its ``cells`` table carries a ``seq``
identity column instead (not part of this metadata: see ``exam.store.cells._order``).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)

SCHEMA_VERSION = 18  # the newest Alembic revision's number; SQLite also keeps it in user_version

metadata = MetaData()


def _cell_columns() -> list[Column]:
    return [
        Column("run_id", Integer, nullable=False),
        Column("case_no", Text, nullable=False),
        Column("repeat", Integer, nullable=False),
        Column("question_digest", Text, nullable=False),
        Column("run_status", Text, nullable=False),
        Column("error", Text, nullable=False, server_default=""),
        Column("text", Text),
        Column("status", Text),
        Column("truncated", Integer, nullable=False, server_default="0"),
        Column("steps", Text),
        Column("attempts", Integer, nullable=False),
        Column("model_calls", Integer),
        Column("tokens", BigInteger),
        Column("latency_ms", Double),
        Column("completed_at", Double, nullable=False),
        Column("tokens_estimated", Integer, nullable=False, server_default="0"),
        Column("usage_note", Text, nullable=False, server_default=""),
    ]


def _attempt_columns() -> list[Column]:
    return [
        Column("run_id", Integer, nullable=False),
        Column("case_no", Text, nullable=False),
        Column("repeat", Integer, nullable=False),
        Column("n", Integer, nullable=False),
        Column("started_at", Double, nullable=False),
        Column("http_status", Integer),
        Column("latency_ms", Double, nullable=False),
        Column("error", Text, nullable=False, server_default=""),
        Column("content_type", Text),
        Column("body", Text),
        Column("body_bytes", BigInteger),
        Column("body_cut", Integer, nullable=False, server_default="0"),
    ]


runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("agent", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("bank_path", Text, nullable=False),
    Column("bank_digest", Text, nullable=False),
    Column("repeats", Integer, nullable=False),
    Column("plan", Text, nullable=False),
    Column("settings", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("started_at", Double),
    Column("finished_at", Double),
    Column("owner", Text),
    Column("heartbeat_at", Double),
    Column("error", Text),
    Column("source", Text, nullable=False, server_default="cli"),
    Column("excluded_reason", Text),
    Column("excluded_at", Double),
    Column("lease_until", Double),  # 8: the claiming worker holds the run until then
    Column("lease_token", Integer, nullable=False, server_default=text("0")),  # 8: +1 per claim
    Index("runs_agent_version", "agent", "version"),
)

# one live cell per (run, case, repeat): the primary key is the store's promise that no cell
# is stored twice; cells retried by --retry-failed move to earlier_cells first
cells = Table("cells", metadata,
              *[c if c.name != "run_id" else Column("run_id", Integer, ForeignKey("runs.id"),
                                                    nullable=False) for c in _cell_columns()],
              PrimaryKeyConstraint("run_id", "case_no", "repeat"),
              # each run's cells counted by status without reading them (the runs page)
              Index("cells_run_status", "run_id", "run_status"))

attempts = Table("attempts", metadata, *_attempt_columns(),
                 PrimaryKeyConstraint("run_id", "case_no", "repeat", "n"))

grades = Table(
    "grades", metadata,
    Column("run_id", Integer, nullable=False),
    Column("case_no", Text, nullable=False),
    Column("repeat", Integer, nullable=False),
    Column("grader_version", Text, nullable=False),
    Column("question_digest", Text, nullable=False),
    Column("verdict", Text),
    Column("checks", Text, nullable=False),
    Column("graded_at", Double, nullable=False),
    PrimaryKeyConstraint("run_id", "case_no", "repeat", "grader_version"),
)

notifications = Table(
    "notifications", metadata,
    Column("id", Integer, primary_key=True),
    Column("batch", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("run_ids", Text, nullable=False),
    Column("retry_key", Text, nullable=False, unique=True),
    Column("payload", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    Column("created_at", Double, nullable=False),
    Column("delivered_at", Double),
)

line_events = Table(
    "line_events", metadata,
    Column("webhook_event_id", Text, primary_key=True),
    Column("type", Text, nullable=False),
    Column("received_at", Double, nullable=False),
    # schema 10: kept until handled; an event whose handler died is claimed again after
    # claimed_until (exam/web/line.py). ``event`` is LINE's JSON without its reply token,
    # dropped (NULL) once handled; handled rows are deleted after LINE_EVENTS_KEEP_DAYS.
    Column("event", Text),
    Column("claimed_until", Double),
    Column("handled_at", Double),
    # schema 11: the few events not yet handled, which every process looks for every few
    # seconds, without reading every event ever received
    Index("line_events_unhandled", "received_at", sqlite_where=text("handled_at IS NULL"),
          postgresql_where=text("handled_at IS NULL")),
)

line_groups = Table(
    "line_groups", metadata,
    Column("group_id", Text, primary_key=True),
    Column("joined_at", Double, nullable=False),
)

adjudications = Table(
    "adjudications", metadata,
    Column("id", Integer, primary_key=True),
    Column("reply_digest", Text, nullable=False),
    Column("check_name", Text, nullable=False),
    Column("question_digest", Text, nullable=False),
    Column("rule_version", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    Column("reviewer", Text, nullable=False),
    Column("decided_at", Double, nullable=False),
    Column("agent", Text, nullable=False),
    Column("case_no", Text, nullable=False),
    UniqueConstraint("reply_digest", "check_name", "question_digest", "rule_version"),
)

rebalance_snapshots = Table(
    "rebalance_snapshots", metadata,
    Column("id", Integer, primary_key=True),
    Column("agent", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("since", Text),
    Column("snapshot", Text, nullable=False),
    Index("rebalance_snapshots_agent", "agent", "id"),
)

# SQLite made these with CREATE TABLE AS (schema 6): same columns, no constraints
earlier_cells = Table(
    "earlier_cells", metadata,
    *[Column(c.name, c.type) for c in _cell_columns()], Column("retried_at", Double),
    Index("earlier_cells_run", "run_id", "case_no", "repeat"),
)
earlier_attempts = Table("earlier_attempts", metadata,
                         *[Column(c.name, c.type) for c in _attempt_columns()],
                         Column("retried_at", Double))

grade_cache = Table(
    "grade_cache", metadata,
    Column("rules", Text, nullable=False),
    Column("reply_key", Text, nullable=False),
    Column("question_key", Text, nullable=False),
    Column("verdict", Text, nullable=False),
    Column("checks", Text, nullable=False),
    PrimaryKeyConstraint("rules", "reply_key", "question_key"),
)

graded_runs = Table(  # schema 9: each finished run's graded cells (exam.reports.graded_runs)
    "graded_runs", metadata,
    Column("run_id", Integer, primary_key=True, autoincrement=False),
    Column("rules", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("cells", Text, nullable=False),
)

# schema 12: the bank's rubric at run time, JSON {"fold_script", "questions": {case_no: the
# question's graded fields}}: what a question read when the run was made (exam.reports.rubric)
run_banks = Table(
    "run_banks", metadata,
    Column("run_id", Integer, ForeignKey("runs.id"), primary_key=True, autoincrement=False),
    Column("questions", Text, nullable=False),
)

# schema 13: share links revoked (exam/share.py): one link by its id (a digest of what its
# token signs, never the token), or, with link NULL, every link to page made before made_before
share_revocations = Table(
    "share_revocations", metadata,
    Column("id", Integer, primary_key=True),
    Column("link", Text),
    Column("page", Text, nullable=False),
    Column("until", Double),  # the link's own expiry: after it, the row refuses nothing new
    Column("made_before", Double),
    Column("revoked_at", Double, nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    Index("share_revocations_link", "link", unique=True),
    Index("share_revocations_page", "page", "link"),
)

# schema 15: dashboard logins (exam/web/auth.py): ``id`` a digest of the session id the
# browser's cookie holds, its role, and its end by the store's clock; logging out deletes it
sessions = Table(
    "sessions", metadata,
    Column("id", Text, primary_key=True),
    Column("role", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("until", Double, nullable=False),
    Index("sessions_until", "until"),
)

# schema 14: versions shipped by hand (`exam ship`), who, when and why; one row per decision,
# the newest an agent's last (exam/reports/baseline.py)
shipped = Table(
    "shipped", metadata,
    Column("id", Integer, primary_key=True),
    Column("agent", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("shipped_at", Double, nullable=False),
    Column("shipped_by", Text, nullable=False, server_default=""),
    Column("reason", Text, nullable=False, server_default=""),
    Column("source", Text, nullable=False, server_default="cli"),
    Index("shipped_agent", "agent", "id"),
)

# schema 14 too: the runs `exam compare --settle` made, and the comparison (old → new) that
# asked for them: run lists group them under it
settle_rounds = Table(
    "settle_rounds", metadata,
    Column("run_id", Integer, ForeignKey("runs.id"), primary_key=True, autoincrement=False),
    Column("old", Text, nullable=False),
    Column("new", Text, nullable=False),
)

# schema 16: the change verdict of each version of an agent as the overview shows it (the
# baseline walk, exam/reports/changes.py), kept under the key of everything it is made of;
# one row per agent, replaced when its key no longer holds
kept_changes = Table(
    "kept_changes", metadata,
    Column("agent", Text, primary_key=True),
    Column("key", Text, nullable=False),
    Column("changes", Text, nullable=False),
)

kept_answers = Table(
    "kept_answers", metadata,
    Column("slot", Text, primary_key=True),  # a digest of the report and its arguments
    Column("key", Text, nullable=False),
    Column("answer", Text, nullable=False),
)

# every table, parents first (the order a copy writes them in)
TABLES: tuple[Table, ...] = (runs, cells, attempts, grades, notifications, line_events,
                             line_groups, adjudications, rebalance_snapshots, earlier_cells,
                             earlier_attempts, grade_cache, graded_runs, run_banks,
                             share_revocations, shipped, settle_rounds, sessions, kept_changes,
                             kept_answers)
