"""New SQLite stores made from one migrated once per test session, not by Alembic each time.

Opening a new store runs Alembic's revisions on it (~50 ms of CPU); the fast tier opens one in
most of its tests. A session migrates one store the real way, and every new, empty SQLite
store after that is given that store's schema and rows instead: the CREATE statements SQLite
kept, replayed in order in the opener's own transaction (~1 ms). A store that is not empty, not
SQLite, or not migrated to head goes through Alembic as before; so does every store of a test
that asks for ``real_migrations``. tests/exam/store/test_template.py holds the copy equal to a
migration.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from alembic import command

_UPGRADE = command.upgrade  # Alembic's own, which exam.db.engine.migrate calls


@dataclass(frozen=True, slots=True)
class Template:
    """What a store migrated to head holds: its schema, its rows, its header numbers."""

    statements: tuple[str, ...]  # CREATE TABLE / INDEX / TRIGGER / VIEW, in the order made
    rows: tuple[tuple[str, tuple[tuple, ...]], ...]  # (table, its rows) for tables with rows
    pragmas: tuple[tuple[str, int], ...]  # user_version (SQLite's schema mark), application_id


PRAGMAS = ("user_version", "application_id")


def read_template(path: str | Path) -> Template:
    """The schema, rows and header numbers of the SQLite store at ``path``."""
    con = sqlite3.connect(path)
    try:
        master = con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
        statements = tuple(sql for _, name, sql in master
                           if sql is not None and not name.startswith("sqlite_"))
        tables = [name for kind, name, _ in master if kind == "table"]  # sqlite_sequence too
        rows = tuple((t, tuple(con.execute(f'SELECT * FROM "{t}"'))) for t in tables)
        pragmas = tuple((p, con.execute(f"PRAGMA {p}").fetchone()[0]) for p in PRAGMAS)
    finally:
        con.close()
    return Template(statements, tuple((t, r) for t, r in rows if r), pragmas)


def replay(conn, template: Template) -> None:
    """Give the empty store behind ``conn`` (a SQLAlchemy connection in a transaction) the
    template's schema, rows and header numbers, on its sqlite3 connection (inside the same
    transaction; SQLAlchemy's own statement machinery took half the time)."""
    db = conn.connection.dbapi_connection
    for sql in template.statements:
        db.execute(sql)
    for table, rows in template.rows:
        db.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
    for name, value in template.pragmas:
        db.execute(f"PRAGMA {name}={int(value)}")


class _Copier:
    """Alembic's ``command.upgrade`` as exam.db.engine.migrate calls it, answered from the
    template when the store is a new SQLite one and copying is on."""

    def __init__(self) -> None:
        self.template: Template | None = None
        self.on = True
        self.copied = 0  # how many stores were made from the template (tests read it)

    def upgrade(self, config, revision, *args, **kwargs):
        conn = config.attributes.get("connection")
        if (self.on and self.template is not None and revision == "head" and not args
                and not kwargs and conn is not None and conn.dialect.name == "sqlite"
                and conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar() == 0):
            replay(conn, self.template)
            self.copied += 1
            return None
        return _UPGRADE(config, revision, *args, **kwargs)


COPIER = _Copier()
RUN_FOLDER: list[Path] = []  # set by tests/conftest.py when the session starts


def run_folder() -> Path:
    """A folder every pytest-xdist worker of this test run shares (pytest's base folder of the
    run; a worker's own is inside it), for what the run makes once (tests/exam/helpers.py:
    the demo's store)."""
    return RUN_FOLDER[0]


@contextmanager
def new_stores_copied(folder: Path) -> Iterator[_Copier]:
    """Within the block, new SQLite stores are copies of one migrated in ``folder`` now."""
    from exam.store import Store

    made = folder / "template.db"
    Store(made).close()  # Alembic, the real way, once
    COPIER.template = read_template(made)
    command.upgrade = COPIER.upgrade
    try:
        yield COPIER
    finally:
        command.upgrade = _UPGRADE
        COPIER.template = None


@contextmanager
def real_migrations() -> Iterator[None]:
    """Within the block, every new store is migrated by Alembic (what a test of migrations
    needs to see)."""
    was, COPIER.on = COPIER.on, False
    try:
        yield
    finally:
        COPIER.on = was
