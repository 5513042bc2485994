"""The schema is written down three times: the frozen SQLite hand migrations (``MIGRATIONS``,
the path of every store agent-exam wrote before Alembic), the Alembic revisions, and today's
tables in ``exam/db/schema.py``. Migrations are history and never follow today's schema, so a
drift between them is caught here: a store built by the migrations, on each backend and from
the oldest SQLite store, must have exactly the tables, columns, types, keys and indexes that
``schema.py`` declares (Alembic's own comparison, the one ``--autogenerate`` uses)."""

from __future__ import annotations

import sqlite3

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect

from exam.db import engine as db_engine
from exam.db.legacy import MIGRATIONS
from exam.db.schema import metadata
from exam.store import Store


def affinity(type_) -> str:
    """SQLite's type affinity of a declared type (https://sqlite.org/datatype3.html, 3.1)."""
    declared = str(type_.compile(dialect=sqlite_dialect())).upper()
    if "INT" in declared:
        return "INTEGER"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in declared or not declared:
        return "BLOB"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def same_sqlite_storage(context, inspected_column, metadata_column, inspected_type, metadata_type):
    """On SQLite a column stores what its affinity says: REAL and DOUBLE, INTEGER and BIGINT are
    the same column. Elsewhere Alembic's own comparison decides (None)."""
    if context.dialect.name != "sqlite":
        return None
    return affinity(inspected_type) != affinity(metadata_type)


def differences(found: list) -> list:
    """Alembic's diffs, flattened, minus alembic_version (Alembic's own table)."""
    flat = []
    for d in found:
        flat.extend(d if isinstance(d, list) else [d])
    return [d for d in flat if not (d[0] == "remove_table" and d[1].name == "alembic_version")]


def drift(target: str) -> list:
    engine = db_engine.engine_for(target)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": same_sqlite_storage})
        found = differences(compare_metadata(context, metadata))
        dialect = conn.dialect.name
    if dialect == "sqlite":
        # SQLite lets a PRIMARY KEY declared without NOT NULL hold NULL (a documented quirk the
        # first schema kept); the code never writes one, and an INTEGER PRIMARY KEY is the rowid
        found = [d for d in found if not (d[0] == "modify_nullable"
                                          and metadata.tables[d[2]].c[d[3]].primary_key)]
    else:
        # PostgreSQL has no rowid: its cells carry a ``seq`` (identity, unique) in its place,
        # made by the baseline and read through the dialect (exam/db/schema.py says why)
        found = [d for d in found
                 if not (d[0] == "remove_column" and (d[2], d[3].name) == ("cells", "seq"))
                 and not (d[0] == "remove_constraint"
                          and [c.name for c in d[1].columns] == ["seq"])]
    return found


def test_a_new_store_has_the_declared_schema(store_target, real_migrations):
    Store(store_target).close()
    assert drift(store_target) == []


@pytest.mark.parametrize("version", range(1, len(MIGRATIONS) + 1))
def test_every_older_sqlite_store_migrated_has_the_declared_schema(tmp_path, version):
    path = str(tmp_path / f"v{version}.db")
    con = sqlite3.connect(path)
    for script in MIGRATIONS[:version]:
        con.executescript(script)
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.close()
    Store(path).close()
    assert drift(path) == []
