"""Cells: one question asked once (question × repeat) in a run, its reply and its attempts.

Cells are written by the group commit (``commit.py``) and never updated: a cell retried by
``exam resume --retry-failed`` moves to ``earlier_cells`` (``retire_failed_cells``), so the
record keeps every answer. Here: the reads of cells, attempts and raw bodies.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Double,
    bindparam,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
    tuple_,
    union_all,
)

from exam.db.schema import attempts as _attempts
from exam.db.schema import cells, earlier_attempts, earlier_cells
from exam.records import RETRY_STATUSES, AttemptRow, CellRow
from exam.store.base import StoreBase


@functools.cache
def _sql(name: str, *variant: bool) -> Any:
    """A frequent read's statement, built once (bound values by name, ``ids`` a list): a
    service request makes a few small reads, and building a statement costs several times
    what SQLite takes to run it (cell_marks 290 → 62 µs on the demo store)."""
    c, e = cells.c, earlier_cells.c
    ids = bindparam("ids", expanding=True)
    if name == "marks":  # (run id, 0 for cells or 1 for earlier cells, count)
        return union_all(
            select(c.run_id, literal_column("0"), func.count()).where(c.run_id.in_(ids))
            .group_by(c.run_id),
            select(e.run_id, literal_column("1"), func.count()).where(e.run_id.in_(ids))
            .group_by(e.run_id))
    if name == "count":  # variant: of one run status
        stmt = select(func.count()).select_from(cells).where(c.run_id == bindparam("rid"))
        return stmt.where(c.run_status == bindparam("status")) if variant[0] else stmt
    raise KeyError(name)


@functools.cache
def _order(backend: str) -> Any:
    """Cells in the order they were stored: SQLite's rowid, PostgreSQL's identity column."""
    return literal_column("cells.rowid" if backend == "sqlite" else "cells.seq")


class Cells(StoreBase):
    """Cells, earlier cells, attempts and bodies read; failed cells retired for a resume."""

    def retire_failed_cells(self, run_id: int, statuses: Sequence[str] = RETRY_STATUSES) -> int:
        """Move cells that did not arrive (and their attempts) to the earlier_* tables, so a
        resume runs them again; returns how many. Nothing is deleted from the record."""
        now = time.time()
        with self.tx() as db:
            keys = db.execute(select(cells.c.case_no, cells.c.repeat).where(
                cells.c.run_id == run_id, cells.c.run_status.in_(statuses))).all()
            for case_no, repeat in keys:
                for live, earlier in ((cells, earlier_cells), (_attempts, earlier_attempts)):
                    where = (live.c.run_id == run_id, live.c.case_no == case_no,
                             live.c.repeat == repeat)
                    names = [c.name for c in live.columns]
                    db.execute(insert(earlier).from_select(
                        [*names, "retried_at"],
                        select(*live.columns, literal(now, Double)).where(*where)))
                for live in (_attempts, cells):
                    db.execute(delete(live).where(live.c.run_id == run_id,
                                                  live.c.case_no == case_no,
                                                  live.c.repeat == repeat))
        return len(keys)

    def earlier_cells(self, run_id: int) -> list[dict[str, Any]]:
        e = earlier_cells.c
        return [dict(r._mapping) for r in self._rows(select(earlier_cells).where(
            e.run_id == run_id).order_by(e.retried_at, self._by_code_point(e.case_no), e.repeat))]


    def done_cells(self, run_id: int) -> set[tuple[str, int]]:
        rows = self._rows(select(cells.c.case_no, cells.c.repeat).where(cells.c.run_id == run_id))
        return {(r[0], r[1]) for r in rows}

    def cell_rowids(self, run_ids: Sequence[int]) -> tuple[int, int, int]:
        """(count, lowest rowid, highest rowid) of the cells of these runs (on PostgreSQL the
        ``seq`` column stands in for SQLite's rowid)."""
        n, lo, hi = self._rows(select(func.count(), func.min(_order(self.backend)),
                                      func.max(_order(self.backend))).select_from(cells).where(
            cells.c.run_id.in_(list(run_ids))))[0]
        return n, lo or 0, hi or 0

    def cells(self, run_ids: Sequence[int], rowids: tuple[int, int] | None = None,
              case_no: str | None = None, repeat: int | None = None) -> list[CellRow]:
        """Cells of these runs (optionally only rowids in [lo, hi), or one question's, or one
        repeat's), by run, case and repeat."""
        if not run_ids:
            return []
        stmt = select(cells).where(cells.c.run_id.in_(list(run_ids)))
        if case_no is not None:
            stmt = stmt.where(cells.c.case_no == case_no)
        if repeat is not None:
            stmt = stmt.where(cells.c.repeat == repeat)
        if rowids is not None:
            stmt = stmt.where(_order(self.backend) >= rowids[0], _order(self.backend) < rowids[1])
        stmt = stmt.order_by(cells.c.run_id, self._by_code_point(cells.c.case_no), cells.c.repeat)
        out = []
        # each row becomes a CellRow as it is fetched: the rows are never all held at once
        # (100,000 cells: 165 MB at the peak instead of 189, and 10% less CPU)
        with self._begin() as conn:
            for r in conn.execute(stmt).mappings():
                out.append(CellRow(
                    run_id=r["run_id"], case_no=r["case_no"], repeat=r["repeat"],
                    question_digest=r["question_digest"], run_status=r["run_status"],
                    error=r["error"], text=r["text"], status=r["status"],
                    truncated=bool(r["truncated"]),
                    steps=None if r["steps"] is None else json.loads(r["steps"]),
                    attempts=r["attempts"], model_calls=r["model_calls"], tokens=r["tokens"],
                    latency_ms=r["latency_ms"], completed_at=r["completed_at"],
                    tokens_estimated=bool(r["tokens_estimated"]), usage_note=r["usage_note"]))
        return out

    def cell_marks(self, run_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """{run id: (its cells, its earlier cells)}: a mark that changes whenever a run's cells
        do. Cells are only ever added, or moved to earlier_cells (never updated, never deleted
        from there), so no change can bring back a mark seen before."""
        out = {i: [0, 0] for i in run_ids}
        if not out:
            return {}
        for run_id, n, count in self._rows(_sql("marks"), {"ids": list(out)}):
            out[run_id][int(n)] = count
        return {i: (a, b) for i, (a, b) in out.items()}


    def cell_texts(self, run_ids: Sequence[int], case_no: str | None = None
                   ) -> dict[tuple[int, str, int], str | None]:
        """{(run id, case, repeat): reply text} of these runs' cells (of one question)."""
        if not run_ids:
            return {}
        c = cells.c
        stmt = select(c.run_id, c.case_no, c.repeat, c.text).where(c.run_id.in_(list(run_ids)))
        if case_no is not None:
            stmt = stmt.where(c.case_no == case_no)
        return {(r[0], r[1], r[2]): r[3] for r in self._rows(stmt)}


    def attempts(self, run_id: int, case_no: str, repeat: int) -> list[AttemptRow]:
        a = _attempts.c
        rows = self._rows(select(_attempts).where(a.run_id == run_id, a.case_no == case_no,
                                                  a.repeat == repeat).order_by(a.n))
        return [AttemptRow(r.n, r.started_at, r.http_status, r.latency_ms, r.error,
                           r.content_type, r.body, r.body_bytes, bool(r.body_cut))
                for r in rows]

    def last_bodies(self, keys: Sequence[tuple[int, str, int]]
                    ) -> dict[tuple[int, str, int], tuple[str | None, bool]]:
        """{(run id, case, repeat): (body, whether it was cut)} of each cell's last attempt,
        in one query (a cell with no attempt is left out): field checks read these bodies
        again, a few hundred cells at a time (``exam.pipeline.reading.replies_of``)."""
        if not keys:
            return {}
        a = _attempts.c
        b = _attempts.alias("last")
        last = select(func.max(b.c.n)).where(
            b.c.run_id == a.run_id, b.c.case_no == a.case_no, b.c.repeat == a.repeat
        ).scalar_subquery()
        stmt = select(a.run_id, a.case_no, a.repeat, a.body, a.body_cut).where(
            tuple_(a.run_id, a.case_no, a.repeat).in_(list(dict.fromkeys(keys))), a.n == last)
        return {(r[0], r[1], r[2]): (r[3], bool(r[4])) for r in self._rows(stmt)}

    def count_cells(self, run_id: int, run_status: str | None = None) -> int:
        return self._value(_sql("count", run_status is not None),
                           {"rid": run_id, "status": run_status})

