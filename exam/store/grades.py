"""The grade cache and kept graded runs: what re-grading a year of history costs once.

``grade_cache``: a reply's grade under one set of rules and one question, before any review
decision, keyed by ``exam/reports/regrade.py`` (rules, reply key, question key); reports read
it first and grade only what it lacks. ``graded_runs``: a whole run's graded cells under one
key, so a report of finished runs reads one row per run. A grader change makes new keys;
``prune_grade_cache`` drops the old rules' rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, delete, func, select
from sqlalchemy.exc import DBAPIError, OperationalError

from exam.db.schema import grade_cache, graded_runs
from exam.store.base import StoreBase
from exam.store.failures import damaged

GRADE_CACHE_CHUNK = 500  # keys per lookup query (SQLite's bound-variable limit is far above)
GRADE_CACHE_WRITE_CHUNK = 2_000  # rows per INSERT execution when the cache is filled
HEAD_PROBE = 32_768  # characters of a kept run read for its head (graded_run_heads)

_GRADED_RUNS = (select(graded_runs.c.run_id, graded_runs.c.key, graded_runs.c.cells)
                .where(graded_runs.c.run_id.in_(bindparam("ids", expanding=True))))


_GRADE_COLUMNS = "rules, reply_key, question_key, verdict, checks"


def _copy_grades(db: Connection, rules: str, rows: Sequence[tuple[str, str, str, str]]) -> None:
    """PostgreSQL: the rows COPYed into a temporary table, then added to the cache in key
    order, a row already there kept (COPY itself cannot skip one). A report filling the cache
    for 4,000 cells spent ~90 ms of its CPU on SQLAlchemy's and psycopg's executemany of
    the INSERT; this is ~25 ms of the server's time and ~3 ms of ours (docs/performance.md).
    psycopg's errors come out as SQLAlchemy's, as from any other statement."""
    import psycopg

    raw = db.connection.driver_connection
    try:
        with raw.cursor() as cur:
            cur.execute("CREATE TEMPORARY TABLE grade_cache_in (LIKE grade_cache) ON COMMIT DROP")
            with cur.copy(f"COPY grade_cache_in ({_GRADE_COLUMNS}) FROM STDIN") as copy:
                for reply, question, verdict, checks in rows:
                    copy.write_row((rules, reply, question, verdict, checks))
            cur.execute(f"INSERT INTO grade_cache ({_GRADE_COLUMNS}) SELECT {_GRADE_COLUMNS} "
                        f"FROM grade_cache_in ORDER BY rules, reply_key, question_key "
                        f"ON CONFLICT DO NOTHING")
    except psycopg.Error as exc:
        raise DBAPIError.instance("COPY grade_cache_in", None, exc, psycopg.Error) from exc


class Grades(StoreBase):
    """Cached grades looked up, added and pruned; graded runs kept and read."""

    def cached_grades(self, rules: str, keys: Sequence[tuple[str, str]]
                      ) -> dict[tuple[str, str], tuple[str, str]]:
        """{(reply_key, question_key): (verdict, checks JSON)} of the keys cached under ``rules``."""
        wanted = set(keys)
        replies = sorted({r for r, _ in wanted})
        found: dict[tuple[str, str], tuple[str, str]] = {}
        gc = grade_cache.c
        for i in range(0, len(replies), GRADE_CACHE_CHUNK):
            part = replies[i:i + GRADE_CACHE_CHUNK]
            for r in self._rows(select(gc.reply_key, gc.question_key, gc.verdict, gc.checks)
                                .where(gc.rules == rules, gc.reply_key.in_(part))):
                key = (r[0], r[1])
                if key in wanted:
                    found[key] = (r[2], r[3])
        return found

    def cache_grades(self, rules: str, rows: Sequence[tuple[str, str, str, str]]) -> bool:
        """Add (reply_key, question_key, verdict, checks JSON) rows; a row already there (another
        process filled it) is kept. False when the store cannot be written (read-only, busy):
        the grades are still right, only not kept."""
        if not rows:
            return True
        # in key order, as record_cell adds them: two PostgreSQL transactions adding the same
        # keys in opposite orders each wait for a key the other holds (a deadlock, one aborted)
        rows = sorted(rows, key=lambda r: (r[0], r[1]))
        try:
            with self.tx() as db:
                if self.backend == "postgresql":
                    _copy_grades(db, rules, rows)
                    return True
                stmt = self._insert(grade_cache).on_conflict_do_nothing()
                # a few thousand rows per execute: SQLAlchemy's batching of 100,000 parameter
                # sets at once held ~50 MB more than the rows themselves (100,000 rows)
                for i in range(0, len(rows), GRADE_CACHE_WRITE_CHUNK):
                    db.execute(stmt, [dict(rules=rules, reply_key=r[0], question_key=r[1],
                                           verdict=r[2], checks=r[3])
                                      for r in rows[i:i + GRADE_CACHE_WRITE_CHUNK]])
        except OperationalError as exc:
            if damaged(exc):
                raise
            return False
        return True

    def prune_grade_cache(self, rules: str) -> int:
        """Drop the cached grades (and graded runs) of every other set of rules; how many
        cached grades went."""
        with self.tx() as db:
            db.execute(delete(graded_runs).where(graded_runs.c.rules != rules))
            return db.execute(delete(grade_cache).where(grade_cache.c.rules != rules)).rowcount


    def graded_runs(self, keys: dict[int, str]) -> dict[int, str]:
        """{run id: cells JSON} of the graded runs kept under exactly these keys."""
        if not keys:
            return {}
        rows = self._rows(_GRADED_RUNS, {"ids": list(keys)})
        return {r[0]: r[2] for r in rows if keys[r[0]] == r[1]}

    def graded_run_heads(self, keys: dict[int, str]) -> dict[int, str]:
        """{run id: the first line of its kept text} under exactly these keys: the counts a
        report reads without fetching every kept cell (the database cuts the line)."""
        if not keys:
            return {}
        g = graded_runs.c
        # the first HEAD_PROBE characters: PostgreSQL decompresses only that much of each kept
        # text (cutting at the first line break read every text whole: 24 runs of 100,000
        # cells, 70–310 ms against 8–27 ms); a head longer than that is read with its text
        rows = self._rows(select(g.run_id, g.key, func.substr(g.cells, 1, HEAD_PROBE))
                          .where(g.run_id.in_(list(keys))))
        out, longer = {}, []
        for run_id, key, start in rows:
            if keys[run_id] != key:
                continue
            head, cut, _ = start.partition("\n")
            if cut or len(start) < HEAD_PROBE:
                out[run_id] = head
            else:
                longer.append(run_id)
        for run_id, key, whole in self._rows(select(g.run_id, g.key, g.cells)
                                             .where(g.run_id.in_(longer))) if longer else ():
            if keys[run_id] == key:
                out[run_id] = whole.partition("\n")[0]
        return out

    def graded_run_parts(self, keys: dict[int, str], spans: dict[int, tuple[int, int]]
                         ) -> dict[int, str]:
        """{run id: the characters [start, start + length) of its kept text} under exactly
        these keys (``spans``: run id → (start, length), 0-based): a question's block, cut
        out by the database rather than the whole run read."""
        g = graded_runs.c
        out = {}
        for run_id, (start, length) in spans.items():
            row = self._rows(select(func.substr(g.cells, start + 1, length))
                             .where(g.run_id == run_id, g.key == keys[run_id]))
            if row:
                out[run_id] = row[0][0]
        return out

    def keep_graded_run(self, run_id: int, rules: str, key: str, cells_json: str) -> bool:
        """Keep (or replace) a run's graded cells; False when the store cannot be written."""
        stmt = self._insert(graded_runs).values(run_id=run_id, rules=rules, key=key,
                                                cells=cells_json)
        return self._keep(stmt.on_conflict_do_update(
            index_elements=[graded_runs.c.run_id],
            set_={"rules": rules, "key": key, "cells": cells_json}))

    def grade_cache_counts(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self._rows(
            select(grade_cache.c.rules, func.count()).group_by(grade_cache.c.rules))}

