"""A cell that cannot be stored: a dropped connection (the store still answers) costs only
the run whose cell was on it, which resumes; a store gone (no read answered either) stops
every run of the process, resumable. On both backends."""

from __future__ import annotations

import threading

import pytest

from exam.errors import StoreError, StoreUnavailable
from exam.pipeline.runner import create_run, execute, job_for
from exam.store import Store
from tests.exam.helpers import agent_for, write_bank
from tests.fakes.agent import FakeAgent

DROPPED = "server closed the connection unexpectedly"


@pytest.fixture
def two_runs(store_url, tmp_path):
    """(store, [(agent, run id) of A, of B]): A with 3 questions, B with 6, one at a time."""
    store = Store(store_url)
    with FakeAgent() as fake:
        runs = []
        for name, n in (("A", 3), ("B", 6)):
            agent = agent_for(fake.url, write_bank(tmp_path, ["ok"] * n, name=name),
                              concurrency=1)
            runs.append((agent, create_run(store, agent, "v1")))
        try:
            yield store, runs
        finally:
            store.close()


def _failing(monkeypatch, fail_run: int, other_run: int, always: bool = False):
    """Store.record_cell raising what the store raises for a dropped connection: for run
    ``fail_run``'s first cell (every cell with ``always``). ``other_run``'s first cell is
    stored only once that has happened, so it has cells left when the failure is met."""
    real = Store.record_cell
    failed = threading.Event()

    def record_cell(self, cell, *args, **kwargs):
        if cell.run_id == fail_run and (always or not failed.is_set()):
            failed.set()
            raise StoreUnavailable(f"{self.path}: {DROPPED}")
        if cell.run_id == other_run:
            assert failed.wait(30)
        return real(self, cell, *args, **kwargs)

    monkeypatch.setattr(Store, "record_cell", record_cell)


def test_a_dropped_connection_costs_only_the_run_on_it_which_resumes(two_runs, monkeypatch):
    store, ((a, a_id), (b, b_id)) = two_runs
    _failing(monkeypatch, a_id, b_id)
    final = execute(store, [job_for(store, a_id, a), job_for(store, b_id, b)])
    assert final == {a_id: "interrupted", b_id: "done"}
    assert DROPPED in store.get_run(a_id).error and "cell(s) not run" in store.get_run(a_id).error
    assert len(store.cells([b_id])) == 6
    monkeypatch.undo()
    assert execute(store, [job_for(store, a_id, a)]) == {a_id: "done"}  # resumed
    assert sorted(c.case_no for c in store.cells([a_id])) == ["A-01", "A-02", "A-03"]


def test_a_store_gone_stops_every_run_resumable(two_runs, monkeypatch):
    store, ((a, a_id), (b, b_id)) = two_runs
    _failing(monkeypatch, a_id, b_id, always=True)

    def gone(self):
        raise StoreError(f"{self.path}: {DROPPED}")

    real_version = Store.schema_version
    monkeypatch.setattr(Store, "schema_version", gone)
    final = execute(store, [job_for(store, a_id, a), job_for(store, b_id, b)])
    monkeypatch.setattr(Store, "schema_version", real_version)
    assert final == {a_id: "interrupted", b_id: "interrupted"}
    assert len(store.cells([b_id])) < 6
    monkeypatch.undo()
    assert execute(store, [job_for(store, a_id, a), job_for(store, b_id, b)]) == {
        a_id: "done", b_id: "done"}
    assert len(store.cells([b_id])) == 6
