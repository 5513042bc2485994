"""``exam store copy SRC DST``: move a store between SQLite and PostgreSQL with nothing lost.

Every table is copied in one DST transaction (all or nothing), then both sides are read again
and compared per table: row count and a content digest. The digest is order-free (the sum of
each row's SHA-256, mod 2²⁵⁶), so SQLite's and PostgreSQL's different text orders cannot make
equal tables differ, and values are compared by the column's declared type (an integer SQLite
kept in a REAL column equals PostgreSQL's double).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Double,
    Integer,
    Table,
    delete,
    func,
    literal_column,
    select,
    text,
)

from exam.db.engine import is_postgres
from exam.db.schema import SCHEMA_VERSION, TABLES
from exam.errors import StoreError

BATCH = 500  # rows per INSERT: bodies are up to 1 MB each, memory stays bounded


@dataclass(frozen=True, slots=True)
class TableCopy:
    table: str
    src_rows: int
    dst_rows: int
    src_digest: str
    dst_digest: str

    @property
    def same(self) -> bool:
        return self.src_rows == self.dst_rows and self.src_digest == self.dst_digest


def _canonical(table: Table, row: Any) -> bytes:
    values = []
    for column, value in zip(table.columns, row, strict=True):
        if value is None:
            values.append(None)
        elif isinstance(column.type, Integer | BigInteger):
            values.append(int(value))
        elif isinstance(column.type, Double):
            values.append(repr(float(value)))
        else:  # text: PostgreSQL cannot hold NUL, the store writes U+FFFD there (see exam.store)
            values.append(str(value).replace("\x00", "\ufffd"))
    return json.dumps(values, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _rows(conn: Connection, table: Table) -> Iterator[Any]:
    stmt = select(table)
    if table.name == "cells":  # in the order they were stored (reports read them in chunks)
        stmt = stmt.order_by(literal_column("rowid" if conn.dialect.name == "sqlite" else "seq"))
    yield from conn.execution_options(stream_results=True, yield_per=BATCH).execute(stmt)


def _writable(row: Any, to_postgres: bool) -> dict[str, Any]:
    values = dict(row._mapping)
    if to_postgres:  # PostgreSQL text cannot hold NUL: U+FFFD, as the store writes it there
        for k, v in values.items():
            if isinstance(v, str) and "\x00" in v:
                values[k] = v.replace("\x00", "\ufffd")
    return values


def digest(conn: Connection, table: Table) -> tuple[int, str]:
    """(rows, order-free digest) of one table."""
    n, total = 0, 0
    for row in _rows(conn, table):
        n += 1
        total = (total + int.from_bytes(hashlib.sha256(_canonical(table, row)).digest())) % 2**256
    return n, f"{total:064x}"


def counts(conn: Connection) -> dict[str, int]:
    return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in TABLES}


def _snapshot(conn: Connection) -> None:
    """Read every table as of one moment. SQLite's write transaction already does (and keeps
    writers out); PostgreSQL's default READ COMMITTED would let each table move on."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def copy_store(src: str, dst: str, *, replace: bool = False) -> list[TableCopy]:
    """Copy every table of ``src`` into ``dst`` (both brought to today's schema first).

    Refuses a ``dst`` holding any row unless ``replace``, which deletes them first (in the
    same transaction as the copy). Raises StoreError when a table's count or digest differs.

    A SQLite ``src`` is never changed: one at an older schema, or that this user cannot
    write (a backup on read-only storage), is copied into a temporary snapshot first
    (SQLite's online backup, read-only), which is brought to today's schema and copied
    from; the original stays as it was, readable by the agent-exam that wrote it.
    """
    if not is_postgres(src) and not is_postgres(dst) and \
            Path(src).resolve() == Path(dst).resolve():
        raise StoreError(f"{src}: SRC and DST are the same store")
    if is_postgres(src) or not _needs_snapshot(src):
        return _copy(src, dst, replace=replace)
    with tempfile.TemporaryDirectory(prefix="exam-copy-") as tmp:
        snapshot = str(Path(tmp) / "source.db")
        _sqlite_snapshot(src, snapshot)
        return _copy(snapshot, dst, replace=replace, shown_src=src)


def _needs_snapshot(path: str) -> bool:
    """A SQLite source that opening would change (an older schema: migrated) or cannot
    open as a store (not writable: WAL and the store's write transaction need to write)."""
    file = Path(path)
    if not file.is_file():
        return False  # Store() says what is wrong with it
    if not (os.access(file, os.W_OK) and os.access(file.parent, os.W_OK)):
        return True
    try:
        with closing(sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error:
        return False  # not a SQLite file: Store() says so
    return version != SCHEMA_VERSION


def _sqlite_snapshot(src: str, snapshot: str) -> None:
    """A consistent copy of a SQLite store, opened read-only (``immutable`` when even its
    WAL index cannot be made: then nothing can be writing it)."""
    uri = Path(src).resolve().as_uri()
    last: sqlite3.Error | None = None
    for mode in ("mode=ro", "mode=ro&immutable=1"):
        try:
            with closing(sqlite3.connect(f"{uri}?{mode}", uri=True)) as source, \
                    closing(sqlite3.connect(snapshot)) as copy:
                source.backup(copy)
            return
        except sqlite3.Error as exc:
            last = exc
            Path(snapshot).unlink(missing_ok=True)
    raise StoreError(f"{src}: cannot be read for a copy: {last}")


def _copy(src: str, dst: str, *, replace: bool, shown_src: str | None = None
          ) -> list[TableCopy]:
    from exam.store import Store

    source, target = Store(src), Store(dst)
    source_path = shown_src or source.path
    try:
        if source.backend == target.backend and source.path == target.path:
            raise StoreError(f"{source_path}: SRC and DST are the same store")
        with source.tx() as s, target.tx() as d:
            _snapshot(s)
            there = {t: n for t, n in counts(d).items() if n}
            if there and not replace:
                listed = ", ".join(f"{n} in {t}" for t, n in there.items())
                raise StoreError(f"{target.path}: DST is not empty ({listed} rows): copy into an "
                                 f"empty store, or pass --replace to delete them first")
            for table in reversed(TABLES):
                d.execute(delete(table))
            for table in TABLES:
                batch: list[dict[str, Any]] = []
                for row in _rows(s, table):
                    batch.append(_writable(row, target.backend == "postgresql"))
                    if len(batch) >= BATCH:
                        d.execute(table.insert(), batch)
                        batch = []
                if batch:
                    d.execute(table.insert(), batch)
            if target.backend == "postgresql":  # the next run, notification... gets a new id
                for table in TABLES:
                    if "id" in table.c and table.c.id.primary_key:
                        d.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'),"
                                       f" COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1,"
                                       f" false)"))
        with source.tx() as s, target.tx() as d:
            _snapshot(s)
            out = []
            for table in TABLES:
                (sn, sd), (dn, dd) = digest(s, table), digest(d, table)
                out.append(TableCopy(table.name, sn, dn, sd, dd))
    finally:
        source.close()
        target.close()
    bad = [c.table for c in out if not c.same]
    if bad:
        raise StoreError(f"{target.path}: the copy differs from {source_path} in "
                         f"{', '.join(bad)}")
    return out
