"""`exam store migrate`: brings a store written by an older version up to date, then exits."""

from __future__ import annotations

import sqlite3

from click.testing import CliRunner

from exam.cli.main import main
from exam.db.legacy import MIGRATIONS
from exam.store import Store


def test_an_old_store_is_brought_up_to_date(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:  # the first schema, as the first release wrote it
        con.executescript(MIGRATIONS[0] + "; PRAGMA user_version=1;")
    result = CliRunner().invoke(main, ["store", "migrate", "--db", str(db)])
    assert result.exit_code == 0, result.output
    newest = Store(tmp_path / "new.db").schema_version()
    assert result.output == f"the store is at schema version {newest}\n" and newest > 1
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == newest


def test_a_store_newer_than_this_version_is_refused(tmp_path):
    db = tmp_path / "future.db"
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA user_version=999")
    result = CliRunner().invoke(main, ["store", "migrate", "--db", str(db)])
    assert result.exit_code == 2 and "upgrade agent-exam" in result.output
