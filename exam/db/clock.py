"""The store's clock: the one clock every lease and claim is set and judged by.

Workers and service instances on several hosts share a PostgreSQL store, and their clocks
disagree: a lease written by one host's clock and read by another's is taken over early or
kept too long. So a lease's end is never a number a host computes: it is ``now()`` + a
duration inside the statement that writes it, and it is compared with ``now()`` inside the
statement that reads it, where ``now()`` is the database server's clock on PostgreSQL (its
``statement_timestamp()``: one value for the whole statement, and stable, so an index still
serves a comparison with it) and SQLite's (the one host's) on SQLite, to the millisecond.
Both in epoch seconds, as every time column holds.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Double
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement


class store_now(FunctionElement):
    """The store's time, epoch seconds, as of the statement it is part of."""

    type = Double()
    inherit_cache = True
    name = "store_now"


@compiles(store_now, "postgresql")
def _postgresql(element: store_now, compiler: Any, **kw: Any) -> str:
    return "CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS DOUBLE PRECISION)"


@compiles(store_now, "sqlite")
def _sqlite(element: store_now, compiler: Any, **kw: Any) -> str:
    # 'now' is the same for the whole statement (one sqlite3_step), to the millisecond
    return "((julianday('now') - 2440587.5) * 86400.0)"
