"""Grade-cache rows are inserted in key order, so two PostgreSQL transactions adding the same
keys never wait on each other crosswise (a deadlock: one of them aborted after a second).

PostgreSQL only: SQLite takes its write lock up front (BEGIN IMMEDIATE) and cannot deadlock.
The interleaving is forced, not hoped for: a third connection holds one "gate" key of each
writer uncommitted, so each writer stops mid-insert, after the keys it adds before its gate,
until the gate is let go. Added in opposite orders ([a, gate, b] and [b, gate, a]) each writer
then holds the key the other waits for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from sqlalchemy import text

from exam.records import CachedGrade
from exam.store import Store
from tests.exam.store.conftest import empty_postgres
from tests.exam.store.test_backends import attempt, cell, new_run

RULES = "rules-1"


def waiting_on_locks(db) -> int:
    """How many other sessions of this database wait for a lock (read afresh: a transaction
    sees one snapshot of pg_stat_activity)."""
    try:
        return db.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")).scalar()
    finally:
        db.rollback()


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, f"never came: {what}"
        time.sleep(0.01)


def gated(url: str, first: Callable[[], object], second: Callable[[], object]) -> list:
    """Run ``first`` until it waits on its gate, then ``second`` until it waits too, then
    open the gates: what each returned (or raised)."""
    from exam.db.engine import engine_for

    out: list = [None, None]

    def go(i: int, fn: Callable[[], object]) -> None:
        try:
            out[i] = fn()
        except Exception as exc:  # the test reads it
            out[i] = exc

    with engine_for(url).connect() as gate, engine_for(url).connect() as watch:
        gate.begin()
        gate.execute(text("INSERT INTO grade_cache VALUES (:rules, 'g1', 'q', 'pass', '[]'), "
                          "(:rules, 'g2', 'q', 'pass', '[]')"), {"rules": RULES})
        threads = [threading.Thread(target=go, args=(i, fn))
                   for i, fn in enumerate((first, second))]
        threads[0].start()
        until(lambda: waiting_on_locks(watch) == 1, "the first writer at its gate")
        threads[1].start()
        until(lambda: waiting_on_locks(watch) == 2, "the second writer waiting")
        gate.rollback()  # the gates open: each writer goes on to the rest of its keys
        for t in threads:
            t.join(30)
            assert not t.is_alive()
    return out


@pytest.fixture
def pg_target(postgres_url):
    return empty_postgres(postgres_url)


def test_cache_grades_in_opposite_orders_never_deadlock(pg_target):
    a, b = Store(pg_target), Store(pg_target)
    try:
        out = gated(pg_target,
                    lambda: a.cache_grades(RULES, [("a", "q", "pass", "[]"),
                                                   ("g1", "q", "pass", "[]"),
                                                   ("b", "q", "pass", "[]")]),
                    lambda: b.cache_grades(RULES, [("b", "q", "pass", "[]"),
                                                   ("g2", "q", "pass", "[]"),
                                                   ("a", "q", "pass", "[]")]))
        assert out == [True, True]  # False: a deadlock aborted one, its grades not kept
        assert a.grade_cache_counts() == {RULES: 4}
    finally:
        a.close()
        b.close()


def batch_of(store: Store, run_id: int, cases: list[str], keys: list[str]) -> Callable[[], list]:
    """Record one cell per key in one group-commit transaction, their cached grades in the
    order given: a cell held in writing first, then the others queued behind it one by one."""
    def record(case: str, key: str | None, out: list) -> None:
        cached = None if key is None else CachedGrade(RULES, key, "q", "pass", "[]")
        try:
            out.append(store.record_cell(cell(run_id, case), [attempt(1)], cached=cached))
        except Exception as exc:  # the test reads it
            out.append(exc)

    def run() -> list:
        out: list = []
        store._cells_writing = True  # as if a cell were being written: the others queue
        threads = []
        for i, (case, key) in enumerate(zip(cases, keys, strict=True)):
            threads.append(threading.Thread(target=record, args=(case, key, out)))
            threads[-1].start()
            until(lambda n=i + 1: len(store._cells_waiting) == n, "the cell queued")
        # the writing is handed to the first cell queued, as the writer does when it is done
        with store._cells_lock:
            store._cells_waiting[0].lead = True
            store._cells_waiting[0].ready.release()
        for t in threads:
            t.join(30)
        return out
    return run


def test_a_group_commit_adding_cached_grades_in_opposite_orders_never_deadlocks(
        pg_target, monkeypatch):
    a, b = Store(pg_target), Store(pg_target)
    failed: list[BaseException] = []
    real = Store._write_cells

    def spied(self, batch):
        try:
            return real(self, batch)
        except Exception as exc:  # the batch is tried again cell by cell: count it
            failed.append(exc)
            raise

    monkeypatch.setattr(Store, "_write_cells", spied)
    try:
        run_id = new_run(a)
        out = gated(pg_target,
                    batch_of(a, run_id, ["Q-01", "Q-02", "Q-03"], ["a", "g1", "b"]),
                    batch_of(b, run_id, ["Q-04", "Q-05", "Q-06"], ["b", "g2", "a"]))
        assert out == [[True] * 3, [True] * 3]
        assert failed == []  # a deadlock would show here: one batch aborted, then retried
        assert a.grade_cache_counts() == {RULES: 4}
    finally:
        a.close()
        b.close()
