"""The group commit of finished cells: a cell, its attempts and its grade in one transaction.

A finished cell is committed before its thread goes on; the cells that finish while one
thread writes wait, and the next thread writes them together (``record_cell``), fenced by
the run's lease (``leases.py``) inside the same transaction. So a run killed with
``kill -9`` loses only the cells in flight, and the primary key makes a duplicate
impossible when ``exam resume`` or the next worker redoes them.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Double, bindparam, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError

from exam.db.clock import store_now
from exam.db.engine import pg_text
from exam.db.schema import attempts as _attempts
from exam.db.schema import cells, grade_cache, grades, runs
from exam.errors import LeaseLost, StoreError
from exam.records import AttemptRow, CachedGrade, CellRow, cap_text
from exam.store.leases import LEASE_S, Leases

CELL_BATCH = 64  # cells written per transaction at most (group commit in record_cell)



def _same(value: str | None) -> str | None:
    return value


@functools.cache
def _cell_sql(backend: str) -> dict[str, Any]:
    """record_cell's statements, built once per backend: a run stores thousands of cells, and
    building a statement costs more than SQLite takes to run it."""
    ins = sqlite_insert if backend == "sqlite" else pg_insert
    r = runs.c
    grade = ins(grades)
    return {
        "beat": update(runs).where(r.id == bindparam("rid")).values(heartbeat_at=store_now()),
        "beat_lease": update(runs).where(r.id == bindparam("rid"),
                                         r.lease_token == bindparam("token")).values(
            heartbeat_at=store_now(),
            lease_until=store_now() + bindparam("lease_s", type_=Double)),
        "fence": select(r.lease_token).where(r.id == bindparam("rid")).with_for_update(
            read=True),
        "cell": ins(cells).on_conflict_do_nothing().returning(
            cells.c.run_id, cells.c.case_no, cells.c.repeat),
        "attempts": insert(_attempts),
        "cache": ins(grade_cache).on_conflict_do_nothing(),
        "grade": grade.on_conflict_do_update(
            index_elements=["run_id", "case_no", "repeat", "grader_version"],
            set_={k: grade.excluded[k] for k in ("question_digest", "verdict", "checks",
                                                 "graded_at")}),
    }


def _pg_copy_in(db: Connection, table: str, rows: Sequence[dict[str, Any]]) -> None:
    """PostgreSQL: ``rows`` (dicts with the same keys) COPYed into ``table``, as a plain
    INSERT of them would add them (a row already there fails both). The group commit's
    attempts: psycopg's COPY costs half the CPU of its executemany, which sends a statement
    per row (a 10,000-cell run spent ~2% of its CPU there). Errors come out as SQLAlchemy's."""
    import psycopg

    columns = list(rows[0])
    try:
        with db.connection.driver_connection.cursor() as cur, cur.copy(
                f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(tuple(row.values()))
    except psycopg.Error as exc:
        raise DBAPIError.instance(f"COPY {table}", None, exc, psycopg.Error) from exc


def _pg_new_cells(db: Connection, rows: Sequence[dict[str, Any]]) -> set[tuple[int, str, int]]:
    """PostgreSQL: insert the cells (a cell already there is left as it was) and return the
    keys of those added, by psycopg's executemany with RETURNING: one statement text, parsed
    once, each row sent in one pipeline. SQLAlchemy's insertmanyvalues wrote a VALUES row per
    cell into one statement instead, whose text (17 parameters a cell) is too long for
    psycopg to keep parsed: ~7% of a 10,000-cell run's CPU went to parsing it again for
    every batch. psycopg's errors come out as SQLAlchemy's, as from any other statement."""
    import psycopg

    columns = list(rows[0])
    query = (f"INSERT INTO cells ({', '.join(columns)}) VALUES "
             f"({', '.join(f'%({c})s' for c in columns)}) ON CONFLICT DO NOTHING "
             f"RETURNING run_id, case_no, repeat")
    added: set[tuple[int, str, int]] = set()
    try:
        with db.connection.driver_connection.cursor() as cur:
            cur.executemany(query, rows, returning=True)
            while True:
                added.update((r[0], r[1], r[2]) for r in cur.fetchall())
                if not cur.nextset():
                    break
    except psycopg.Error as exc:
        raise DBAPIError.instance(query, None, exc, psycopg.Error) from exc
    return added


class _PendingCell:
    """A cell handed to ``Store.record_cell``, waiting to be written (group commit)."""

    __slots__ = ("cell", "attempts", "grade", "cached", "ready", "lead", "added", "error")

    def __init__(self, cell: CellRow, attempts: Sequence[AttemptRow],
                 grade: tuple[str, str | None, list[dict]] | None,
                 cached: CachedGrade | None = None) -> None:
        self.cell, self.attempts, self.grade, self.cached = cell, attempts, grade, cached
        self.ready = threading.Lock()  # held until the cell is written or handed the writing
        self.ready.acquire()
        self.lead = False  # handed the writing of the cells waiting
        self.added: bool | None = None
        self.error: BaseException | None = None


class CellCommit(Leases):
    """``record_cell``: the runner's threads store their finished cells through it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the cells waiting to be written, and whether a thread is writing them
        self._cells_lock = threading.Lock()
        self._cells_waiting: list[_PendingCell] = []
        self._cells_writing = False

    def record_cell(self, cell: CellRow, attempts: Sequence[AttemptRow],
                    grade: tuple[str, str | None, list[dict]] | None = None,
                    cached: CachedGrade | None = None) -> bool:
        """Store a finished cell, its attempts and (optionally) its grade.

        ``grade`` is (grader version, verdict, checks); ``cached``, the same grade as a row of
        the grade cache, added in the cell's transaction (a row already there is kept, as
        ``cache_grades`` does). Returns False if the cell was there,
        once the cell is committed (never before). Raises LeaseLost when this Store held the
        run's lease and another worker took it.

        Group commit: the runner's threads finish cells faster than one transaction each can
        be committed, so the cells that arrive while one thread writes wait and are written by
        the next thread in one transaction (fenced like one cell: the lease is checked inside
        it). If that transaction fails, each of its cells is tried again on its own, so one
        cell that cannot be stored never costs the others theirs.
        """
        entry = _PendingCell(cell, attempts, grade, cached)
        with self._cells_lock:
            self._cells_waiting.append(entry)
            lead = not self._cells_writing
            self._cells_writing = True
        if not lead:
            try:
                entry.ready.acquire()  # written by another thread, or handed the writing
            except BaseException:  # interrupted while waiting (Ctrl-C in a main-thread caller)
                self._give_up_waiting(entry)
                raise
        if entry.lead or lead:
            self._write_waiting()
        if entry.error is not None:
            raise entry.error
        return bool(entry.added)

    def _give_up_waiting(self, entry: _PendingCell) -> None:
        """A caller stops waiting for its cell: still waiting, it is taken out (never written,
        and the caller knows); handed the writing meanwhile, it writes what waits first, so the
        cells queued behind it are never left with nobody to write them."""
        with self._cells_lock:
            if not entry.lead and entry in self._cells_waiting:
                self._cells_waiting.remove(entry)
                return
            handed = entry.lead
        if handed:
            self._write_waiting()

    def _write_waiting(self) -> None:
        """The writing thread: store the cells waiting (its own first: nobody else waits on
        it), then hand the writing to the first cell that came in meanwhile, if any."""
        try:
            with self._cells_lock:
                batch = self._cells_waiting[:CELL_BATCH]
                del self._cells_waiting[:CELL_BATCH]
            todo = batch
            while todo:
                try:
                    added = self._write_cells(todo)
                except LeaseLost as lost:
                    # that run's cells are refused; the batch's other runs still hold theirs
                    refused = [e for e in todo if e.cell.run_id in (lost.run_id, None)]
                    for e in refused or todo:
                        e.error = self._lost(e.cell.run_id)  # each thread its own object
                    todo = [e for e in todo if e not in refused] if refused else []
                    continue
                except Exception as exc:
                    if len(todo) == 1:
                        todo[0].error = exc
                    else:
                        for e in todo:  # one bad cell must not lose the others: one at a time
                            try:
                                e.added = self._write_cells([e])[0]
                            except Exception as each:
                                e.error = each
                else:
                    for e, was_added in zip(todo, added, strict=True):
                        e.added = was_added
                break
        finally:
            with self._cells_lock:
                for i, e in enumerate(batch):
                    if e.added is None and e.error is None:  # interrupted while writing
                        e.error = StoreError(f"{self.path}: run {e.cell.run_id}: cell "
                                             f"{e.cell.case_no} #{e.cell.repeat} was not stored")
                    if i:  # (a Lock, not an Event: waking 64 threads is cheaper so)
                        e.ready.release()
                if self._cells_waiting:
                    nxt = self._cells_waiting[0]
                    nxt.lead = True
                    nxt.ready.release()
                else:
                    self._cells_writing = False

    def _write_cells(self, batch: Sequence[_PendingCell]) -> list[bool]:
        """One transaction: the lease check of each run in ``batch``, then its cells (a cell
        already there is left as it was: False)."""
        sql = _cell_sql(self.backend)
        text_of = pg_text if self.backend == "postgresql" else _same
        added: list[bool] = []
        with self.tx() as db:
            for run_id in dict.fromkeys(e.cell.run_id for e in batch):
                token = self._leases.get(run_id)
                # fencing first. PostgreSQL: a shared lock on the run's row, which a claim's
                # UPDATE waits for (and which sees a committed claim's new token), while other
                # writers store their cells alongside; the lease is renewed by the heartbeat.
                # SQLite (one writer at a time anyway): the UPDATE renews the lease as it checks.
                if self.backend == "postgresql":
                    if token is not None and db.execute(sql["fence"], {"rid": run_id}
                                                        ).scalar() != token:
                        raise self._lost(run_id)
                elif token is None:
                    db.execute(sql["beat"], {"rid": run_id})
                elif db.execute(sql["beat_lease"], {
                        "rid": run_id, "token": token,
                        "lease_s": self._lease_s.get(run_id, LEASE_S)}).rowcount == 0:
                    raise self._lost(run_id)
            rows, attempts, grades, cached = [], [], [], []
            for e in batch:
                cell = e.cell
                key = dict(run_id=cell.run_id, case_no=cell.case_no, repeat=cell.repeat)
                rows.append(dict(
                    key, question_digest=cell.question_digest, run_status=cell.run_status,
                    error=text_of(cell.error), text=text_of(cap_text(cell.text)[0]),
                    status=text_of(cell.status), truncated=int(cell.truncated),
                    steps=None if cell.steps is None else text_of(
                        json.dumps(cell.steps, ensure_ascii=False)),
                    attempts=cell.attempts, model_calls=cell.model_calls, tokens=cell.tokens,
                    latency_ms=cell.latency_ms, completed_at=cell.completed_at,
                    tokens_estimated=int(cell.tokens_estimated),
                    usage_note=text_of(cell.usage_note)))
            # one statement for all the cells (a round trip each would serialise PostgreSQL's
            # writers); RETURNING names the cells that were not there yet
            new = (_pg_new_cells(db, rows) if self.backend == "postgresql" else
                   {(r[0], r[1], r[2]) for r in db.execute(sql["cell"], rows)})
            now = time.time()
            for e in batch:
                cell = e.cell
                k = (cell.run_id, cell.case_no, cell.repeat)
                added.append(k in new)
                if k not in new:
                    continue
                key = dict(run_id=cell.run_id, case_no=cell.case_no, repeat=cell.repeat)
                attempts += [dict(
                    key, n=a.n, started_at=a.started_at, http_status=a.http_status,
                    latency_ms=a.latency_ms, error=text_of(a.error),
                    content_type=text_of(a.content_type), body=text_of(a.body),
                    body_bytes=a.body_bytes, body_cut=int(a.body_cut)) for a in e.attempts]
                if e.grade is not None:
                    version, verdict, checks = e.grade
                    grades.append(dict(
                        key, grader_version=version, question_digest=cell.question_digest,
                        verdict=verdict, checks=text_of(json.dumps(checks, ensure_ascii=False)),
                        graded_at=now))
                if e.cached is not None:
                    cached.append(dict(rules=e.cached.rules, reply_key=e.cached.reply_key,
                                       question_key=e.cached.question_key,
                                       verdict=e.cached.verdict,
                                       checks=e.cached.checks))
            if attempts and self.backend == "postgresql":
                _pg_copy_in(db, "attempts", attempts)
            elif attempts:
                db.execute(sql["attempts"], attempts)
            if grades:
                db.execute(sql["grade"], grades)
            if cached:
                # in key order (see cache_grades): another transaction adding the same keys
                # then waits for this one instead of each holding what the other waits for
                cached.sort(key=lambda r: (r["rules"], r["reply_key"], r["question_key"]))
                db.execute(sql["cache"], cached)
        return added

