"""Group commit: cells finished while another is being written share the next transaction,
and what that transaction cannot store costs only the cell it belongs to. On both backends."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from exam.errors import LeaseLost
from exam.store import Store
from tests.exam.store.test_backends import attempt, cell, new_run

CASES = [f"Q-{i:02d}" for i in range(1, 13)]


def record_together(store: Store, cells: list, monkeypatch) -> tuple[list, list[int]]:
    """Record ``cells`` from a thread each while the first write is held until all the others
    are waiting: (each thread's result or exception, the size of each transaction's batch)."""
    real = Store._write_cells
    sizes: list[int] = []
    first = threading.Event()

    def held(self, batch):
        if not first.is_set():
            first.set()
            deadline = time.monotonic() + 30
            while len(self._cells_waiting) < len(cells) - 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        sizes.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(Store, "_write_cells", held)
    out: list = [None] * len(cells)

    def go(i: int) -> None:
        try:
            out[i] = store.record_cell(*cells[i])
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=go, args=(0,))]
    threads[0].start()
    assert first.wait(30)
    threads += [threading.Thread(target=go, args=(i,)) for i in range(1, len(cells))]
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(60)
    return out, sizes


def test_cells_that_finish_together_are_stored_in_one_transaction(store, monkeypatch):
    run_id = new_run(store)
    out, sizes = record_together(
        store, [(cell(run_id, c), [attempt(1), attempt(2)]) for c in CASES], monkeypatch)
    assert out == [True] * len(CASES)
    assert sizes == [1, len(CASES) - 1]
    assert store.count_cells(run_id) == len(CASES)
    assert [a.n for a in store.attempts(run_id, "Q-12", 1)] == [1, 2]


def test_a_cell_that_cannot_be_stored_costs_the_others_nothing(store, monkeypatch):
    run_id = new_run(store)
    bad = replace(attempt(1), http_status=2**70)  # no INTEGER column holds it
    cells = [(cell(run_id, c), [bad if c == "Q-07" else attempt(1)]) for c in CASES]
    out, sizes = record_together(store, cells, monkeypatch)
    assert isinstance(out[6], Exception)
    assert [o for i, o in enumerate(out) if i != 6] == [True] * (len(CASES) - 1)
    stored = {c.case_no for c in store.cells([run_id])}
    assert stored == set(CASES) - {"Q-07"}
    assert store.attempts(run_id, "Q-08", 1)[0].http_status == 200


def test_a_cell_stored_already_is_reported_so_in_a_shared_transaction(store, monkeypatch):
    run_id = new_run(store)
    assert store.record_cell(cell(run_id, "Q-05"), [attempt(1)])
    out, _ = record_together(store, [(cell(run_id, c), [attempt(2)]) for c in CASES],
                             monkeypatch)
    assert out == [c != "Q-05" for c in CASES]
    assert [a.n for a in store.attempts(run_id, "Q-05", 1)] == [1]  # the first one kept


def test_a_shared_transaction_whose_lease_was_taken_stores_nothing(store_target, monkeypatch):
    a, b = Store(store_target), Store(store_target)
    try:
        run_id = new_run(a, status="queued", source="api")
        assert a.claim_run("host-a:1", 0.0).id == run_id  # a lease that runs out at once
        assert b.claim_run("host-b:1", 30.0).id == run_id  # taken over
        out, _ = record_together(a, [(cell(run_id, c), [attempt(1)]) for c in CASES],
                                 monkeypatch)
        assert all(isinstance(o, LeaseLost) for o in out)
        assert b.count_cells(run_id) == 0
    finally:
        a.close()
        b.close()


def test_a_lost_lease_refuses_only_its_own_runs_cells_in_a_shared_transaction(
        store_target, monkeypatch):
    """One process holding two runs (one taken over meanwhile): the cells of the run it still
    holds are stored; only the other run's are refused."""
    a, b = Store(store_target), Store(store_target)
    try:
        kept = new_run(a, status="queued", source="api")
        lost = new_run(a, status="queued", source="api")
        assert a.claim_run("host-a:1", 30.0).id == kept
        assert a.claim_run("host-a:1", 0.0).id == lost  # a lease that runs out at once
        assert b.claim_run("host-b:1", 30.0).id == lost  # taken over
        mixed = [(cell(run_id, c), [attempt(1)]) for c in CASES[:6] for run_id in (lost, kept)]
        out, _ = record_together(a, mixed, monkeypatch)
        for (c, _attempts), o in zip(mixed, out, strict=True):
            assert (isinstance(o, LeaseLost) if c.run_id == lost else o is True), (c.run_id, o)
        assert b.count_cells(kept) == 6 and b.count_cells(lost) == 0
    finally:
        a.close()
        b.close()


def test_a_caller_interrupted_while_it_waits_leaves_no_cell_without_a_writer(store, monkeypatch):
    """Ctrl-C in a caller waiting for its cell: taken out while still waiting; handed the
    writing meanwhile, it writes the cells queued behind it before it goes."""
    import exam.store.commit

    run_id = new_run(store)
    real = exam.store.commit._PendingCell

    class Interrupted(real):
        """Its wait ends in KeyboardInterrupt, once it has been handed the writing."""

        def __init__(self, *a):
            super().__init__(*a)
            entry, lock = self, self.ready

            class Ready:
                def acquire(self):
                    lock.acquire()
                    if entry.lead:
                        raise KeyboardInterrupt

                def release(self):
                    lock.release()

            self.ready = Ready()

    first, later = threading.Event(), threading.Event()
    real_write = Store._write_cells

    def held(self, batch):  # the first write waits until two more cells queue behind it
        if not first.is_set():
            first.set()
            assert later.wait(30)
        return real_write(self, batch)

    monkeypatch.setattr(Store, "_write_cells", held)
    out = {}

    def record(case, kind=real):
        monkeypatch.setattr(exam.store.commit, "_PendingCell", kind)
        try:
            out[case] = store.record_cell(cell(run_id, case), [attempt(1)])
        except BaseException as exc:
            out[case] = exc

    writer = threading.Thread(target=record, args=("Q-01",))
    writer.start()
    assert first.wait(30)
    interrupted = threading.Thread(target=record, args=("Q-02", Interrupted))
    interrupted.start()
    while len(store._cells_waiting) < 1:
        time.sleep(0.01)
    behind = threading.Thread(target=record, args=("Q-03",))
    behind.start()
    while len(store._cells_waiting) < 2:
        time.sleep(0.01)
    # the writer's batch was taken before Q-02 came: Q-02 is handed the writing, and interrupted
    later.set()
    for t in (writer, interrupted, behind):
        t.join(30)
        assert not t.is_alive(), "a cell was left with nobody to write it"
    assert out["Q-01"] is True and out["Q-03"] is True
    assert isinstance(out["Q-02"], KeyboardInterrupt)
    assert store.record_cell(cell(run_id, "Q-04"), [attempt(1)]) is True  # nothing stuck
    assert store.count_cells(run_id) == 4  # Q-02 was written with Q-03 before it gave up
