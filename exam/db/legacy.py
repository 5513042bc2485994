"""The SQLite schemas 1..7, as agent-exam's hand-written migrations wrote them before Alembic.

Frozen: the baseline migration (``migrations/versions/0007_baseline.py``) runs them on a
SQLite store from its ``user_version``, so a store written by any earlier agent-exam arrives
at schema 7 with byte for byte the tables it always had. Every later change is an Alembic
revision; the live schema is ``exam.db.schema``.
"""

from __future__ import annotations

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
