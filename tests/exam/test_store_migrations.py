"""A store written by an older agent-exam opens with today's code, its data intact.

Each older schema is built with the DDL of its time (the prefix of ``MIGRATIONS``), filled
with rows as that version wrote them, then opened: migrated to the newest schema, every old
row unchanged, and today's reads and re-grade work on it.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from exam.bank import load_bank
from exam.db.legacy import MIGRATIONS
from exam.db.schema import SCHEMA_VERSION
from exam.reports.regrade import regrade
from exam.store import Store
from tests.exam.helpers import write_bank

NOW = 1764400000.0
ROWS_BY_VERSION = {
    1: {
        "runs": [dict(id=1, agent="T", version="v1", bank_path="", bank_digest="", repeats=1,
                      plan="", settings='{"header_names": ["X-Exam-Token"]}', status="done",
                      created_at=NOW, started_at=NOW, finished_at=NOW + 5, owner="host:1",
                      heartbeat_at=NOW + 5, error=None, source="cli")],
        "cells": [dict(run_id=1, case_no="T-01", repeat=1, question_digest="", run_status="ok",
                       error="", text="訂單 A10302 目前備貨中", status="ok", truncated=0,
                       steps=None, attempts=1, model_calls=2, tokens=1000, latency_ms=210.0,
                       completed_at=NOW + 1)],
        "attempts": [dict(run_id=1, case_no="T-01", repeat=1, n=1, started_at=NOW,
                          http_status=200, latency_ms=210.0, error="",
                          content_type="application/json",
                          body='{"answer": "訂單 A10302 目前備貨中", "status": "ok"}',
                          body_bytes=60, body_cut=0)],
        "grades": [dict(run_id=1, case_no="T-01", repeat=1, grader_version="1.0.0",
                        question_digest="", verdict="pass", checks="[]", graded_at=NOW + 1)],
    },
    2: {
        "notifications": [dict(id=1, batch="b1", channel="line", target="Cgroup", run_ids="[1]",
                               retry_key="00000000-0000-4000-8000-000000000001",
                               payload='[{"type": "text", "text": "T v1"}]',
                               status="delivered", attempts=1, last_error=None,
                               created_at=NOW, delivered_at=NOW + 1)],
        "line_events": [dict(webhook_event_id="01JOLD", type="MessageEvent", received_at=NOW)],
        "line_groups": [dict(group_id="Cgroup", joined_at=NOW)],
    },
    3: {
        "adjudications": [dict(id=1, reply_digest="d" * 64, check_name="forbidden[0]",
                               question_digest="", rule_version="1", decision="pass",
                               reason="a disclaimer", reviewer="Mei", decided_at=NOW,
                               agent="T", case_no="T-01")],
    },
}


def old_store(tmp_path, version: int) -> tuple[str, dict[str, tuple[list[str], list[tuple]]]]:
    """A store at schema ``version`` with rows, and a snapshot of every table's rows."""
    bank_path = write_bank(tmp_path, ["ok"])
    item = load_bank(bank_path).items[0]
    db = str(tmp_path / f"v{version}.db")
    con = sqlite3.connect(db)
    try:
        for script in MIGRATIONS[:version]:
            con.executescript(script)
        con.execute(f"PRAGMA user_version={version}")
        for v in range(1, version + 1):
            for table, rows in ROWS_BY_VERSION.get(v, {}).items():
                for row in rows:
                    row = {**row}
                    if table == "runs":
                        row.update(bank_path=str(bank_path), bank_digest=load_bank(bank_path).digest,
                                   plan=json.dumps([[item.case_no, item.digest]]))
                    if "question_digest" in row:
                        row["question_digest"] = item.digest
                    con.execute(f"INSERT INTO {table} ({','.join(row)}) VALUES "
                                f"({','.join('?' * len(row))})", list(row.values()))
        con.commit()
        return db, snapshot(con)
    finally:
        con.close()


def snapshot(con, columns: dict[str, list[str]] | None = None):
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    out = {}
    for table in (columns or tables):
        cols = (columns or {}).get(table) or [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        out[table] = (cols, con.execute(f"SELECT {','.join(cols)} FROM {table} ORDER BY rowid"
                                        ).fetchall())
    return out


# every older schema, and today's (reopening a current store must change nothing either)
@pytest.mark.parametrize("version", range(1, len(MIGRATIONS) + 1))
def test_an_older_store_is_migrated_with_its_data_intact(tmp_path, version):
    db, before = old_store(tmp_path, version)
    assert sum(len(rows) for _, rows in before.values()) > 0

    store = Store(db)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        run = store.get_run(1)
        assert (run.agent, run.version, run.status, run.total_cells) == ("T", "v1", "done", 1)
        assert run.settings == {"header_names": ["X-Exam-Token"]}
        (cell,) = store.cells([1])
        assert (cell.case_no, cell.run_status, cell.text) == ("T-01", "ok", "訂單 A10302 目前備貨中")
        (attempt,) = store.attempts(1, "T-01", 1)
        assert attempt.http_status == 200 and "備貨中" in attempt.body
        # today's re-grade reads the old rows: the stored reply still passes
        (graded,) = regrade(store, [run]).cells
        assert (graded.verdict, graded.changed) == ("pass", False)
        assert [r.id for r in store.list_runs()] == [1]
        if version >= 2:
            assert [n["run_ids"] for n in store.notifications()] == [[1]]
            assert store.line_event_state("01JOLD") == "handled"  # still remembered, never redone
            assert not store.record_line_events([("01JOLD", "MessageEvent", "{}")], 60)
        if version >= 3:
            assert [a["reviewer"] for a in store.adjudications()] == ["Mei"]
        # new tables are there and usable
        assert set(store.record_line_events([("01JNEW", "MessageEvent", "{}")], 60)) == {"01JNEW"}
        assert store.integrity_check() == "ok"
    finally:
        store.close()

    con = sqlite3.connect(db)
    try:
        after = snapshot(con, {t: cols for t, (cols, _) in before.items()})
    finally:
        con.close()
    for table, (_, rows) in before.items():  # every old row, every old column, unchanged
        # the event above, the re-grade's grades and its graded run
        if table not in ("line_events", "grade_cache", "graded_runs"):
            assert after[table][1] == rows, table
        else:
            assert after[table][1][: len(rows)] == rows


def test_opening_a_migrated_store_again_changes_nothing(tmp_path):
    db, _ = old_store(tmp_path, 1)
    Store(db).close()
    con = sqlite3.connect(db)
    try:
        once = snapshot(con)
    finally:
        con.close()
    Store(db).close()
    con = sqlite3.connect(db)
    try:
        assert snapshot(con) == once
    finally:
        con.close()


def test_a_workers_run_keeps_its_old_heartbeat_grace_as_its_lease(tmp_path):
    """Schema 8 gives a run a worker was running 30 s from its last heartbeat, as before."""
    db, _ = old_store(tmp_path, 7)
    con = sqlite3.connect(db)
    try:
        con.execute("UPDATE runs SET status='running', source='api', heartbeat_at=?", (NOW,))
        con.commit()
    finally:
        con.close()
    store = Store(db)
    try:
        run = store.get_run(1)
        assert (run.lease_until, run.lease_token, run.shown_status) == (NOW + 30, 0, "interrupted")
        assert store.claim_run("host-b:1", 30.0).lease_token == 1  # long expired: taken over
    finally:
        store.close()
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (str(SCHEMA_VERSION),)]
    finally:
        con.close()
