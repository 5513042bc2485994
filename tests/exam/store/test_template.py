"""The fast tier's new SQLite stores are copies of one migrated per session (tests/templates.py):
a copy must be the store Alembic makes, byte for byte in what SQLite keeps of it."""

from __future__ import annotations

import sqlite3

from exam.store import Store
from tests import templates


def kept(path) -> tuple:
    """What a SQLite store holds: its schema as SQLite keeps it, every row, its header numbers."""
    con = sqlite3.connect(path)
    try:
        master = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                             "ORDER BY type, name").fetchall()
        rows = {name: sorted(con.execute(f'SELECT * FROM "{name}"'))
                for kind, name, _, _ in master if kind == "table"}
        pragmas = [con.execute(f"PRAGMA {p}").fetchone()[0] for p in templates.PRAGMAS]
    finally:
        con.close()
    return master, rows, pragmas


def test_a_copied_store_is_the_store_alembic_makes(tmp_path, _store_template):
    with templates.real_migrations():
        Store(tmp_path / "migrated.db").close()
    before = _store_template.copied
    Store(tmp_path / "copied.db").close()
    assert _store_template.copied == before + 1  # made from the template, not by Alembic
    migrated, copied = kept(tmp_path / "migrated.db"), kept(tmp_path / "copied.db")
    assert copied == migrated
    assert migrated[0] and migrated[2][0] > 0  # a schema, and SQLite's mark of its version


def test_a_store_that_is_not_empty_is_migrated_by_alembic(tmp_path, _store_template):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (x TEXT)")
    con.commit()
    con.close()
    before = _store_template.copied
    Store(path).close()
    assert _store_template.copied == before
    assert "notes" in kept(path)[1] and "runs" in kept(path)[1]
