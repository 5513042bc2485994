"""Workers on several hosts: claims take row locks, leases expire and are taken over, a worker
whose lease was taken is fenced out, and no cell is stored twice. On both backends."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import update

from exam.db.schema import runs
from exam.errors import LeaseLost, RunBusy
from exam.pipeline.runner import missing_cells
from exam.store import Store, held_elsewhere, host_id
from exam.store import leases as store_leases
from tests.exam.store.test_backends import at_once, attempt, cell, new_run


def queued(store: Store, n: int = 1) -> list[int]:
    return [new_run(store, status="queued", source="api") for _ in range(n)]


def test_a_claim_takes_the_oldest_queued_run_and_holds_it(store, hosts):
    first, second = queued(store, 2)
    a, b = hosts
    run = a.claim_run("host-a:1", 30.0)
    assert (run.id, run.status, run.owner, run.lease_token) == (first, "running", "host-a:1", 1)
    assert run.lease_until > run.heartbeat_at and run.shown_status == "running"
    assert b.claim_run("host-b:1", 30.0).id == second
    assert a.claim_run("host-a:1", 30.0) is None  # both held: nothing to take


def test_a_run_started_from_the_cli_is_never_taken_by_a_worker(store, hosts):
    new_run(store)  # `exam run`: running, its user's
    assert hosts[0].claim_run("host-a:1", 0.0) is None


def test_an_expired_lease_is_taken_over_and_the_old_holder_is_fenced_out(store, hosts):
    (run_id,) = queued(store)
    a, b = hosts
    assert a.claim_run("host-a:1", 0.0).lease_token == 1  # a lease that runs out at once
    assert a.record_cell(cell(run_id, "Q-01"), [attempt()])
    assert store.get_run(run_id).shown_status == "interrupted"  # nobody renewed it

    taken = b.claim_run("host-b:7", 30.0)  # another host takes it over
    assert (taken.id, taken.owner, taken.lease_token) == (run_id, "host-b:7", 2)
    # the old holder comes back from a stall: nothing it sends is stored
    with pytest.raises(LeaseLost, match="taken over"):
        a.record_cell(cell(run_id, "Q-02"), [attempt()])
    assert not a.heartbeat(run_id)
    with pytest.raises(LeaseLost):
        a.set_run_status(run_id, "failed", "it thought the run was its own")
    # the new holder finishes only the missing cells, and closes the run
    assert missing_cells(b, taken) == [("Q-02", 1), ("Q-10", 1), ("Q-01", 2), ("Q-02", 2),
                                       ("Q-10", 2)]
    for case_no, repeat in missing_cells(b, taken):
        assert b.record_cell(cell(run_id, case_no, repeat), [attempt()])
    assert b.heartbeat(run_id)
    b.set_run_status(run_id, "done")
    run = store.get_run(run_id)
    assert (run.status, run.owner, run.lease_until, run.error) == ("done", "host-b:7", None, None)
    assert store.count_cells(run_id) == 6


def test_a_renewed_lease_is_not_taken(store, hosts):
    (run_id,) = queued(store)
    a, b = hosts
    a.claim_run("host-a:1", 30.0)
    assert a.heartbeat(run_id)
    assert b.claim_run("host-b:1", 30.0) is None


def test_concurrent_claimers_each_take_different_runs(store_target, store):
    runs = queued(store, 12)
    workers = [Store(store_target) for _ in range(4)]
    try:
        def claim_all(s: Store, name: str) -> list[int]:
            got = []
            while (run := s.claim_run(name, 30.0)) is not None:
                got.append(run.id)
            return got

        taken = at_once([functools.partial(claim_all, s, f"host-{i}:1")
                         for i, s in enumerate(workers)])
    finally:
        for s in workers:
            s.close()
    flat = [r for got in taken for r in got]
    assert sorted(flat) == runs  # every run claimed, none twice
    assert {store.get_run(r).lease_token for r in runs} == {1}


def test_a_cell_is_stored_once_when_two_workers_send_it_at_once(store_target, store):
    """The store's unique key decides, not a hope: one insert wins, the other is told so."""
    (run_id,) = queued(store)
    writers = [Store(store_target) for _ in range(4)]
    try:
        for repeat in (1, 2):
            for case_no in ("Q-01", "Q-02", "Q-10"):
                stored = at_once([functools.partial(s.record_cell, cell(run_id, case_no, repeat),
                                                    [attempt(1), attempt(2)]) for s in writers])
                assert sorted(stored) == [False, False, False, True]
    finally:
        for s in writers:
            s.close()
    assert store.count_cells(run_id) == 6
    assert len(store.attempts(run_id, "Q-01", 1)) == 2


def test_a_takeover_racing_the_old_holders_write_stores_the_cell_at_most_once(store_target, store):
    (run_id,) = queued(store)
    for repeat in range(1, 7):
        a, b = Store(store_target), Store(store_target)
        try:
            assert a.claim_run("host-a:1", 0.0).id == run_id  # runs out at once
            stored, claimed = at_once([
                functools.partial(_try, a.record_cell, cell(run_id, "Q-10", repeat), []),
                functools.partial(_try, claim_when_free, b),
            ])
        finally:
            a.close()
            b.close()
        assert claimed.id == run_id
        # the write came first (stored, then the run was taken) or the claim did (refused):
        # never a refused cell in the store, never a stored one missing
        assert stored in (True, "LeaseLost")
        assert (("Q-10", repeat) in store.done_cells(run_id)) == (stored is True)


def claim_when_free(s: Store):
    """Claim like a polling worker: PostgreSQL's SKIP LOCKED passes over a run whose row a
    write holds at this instant; the next poll takes it."""
    while (run := s.claim_run("host-b:1", 0.0)) is None:
        pass
    return run


def _try(fn, *args):
    try:
        return fn(*args)
    except LeaseLost:
        return "LeaseLost"


def test_a_stopping_worker_gives_its_run_back_only_while_it_holds_it(store, hosts):
    (run_id,) = queued(store)
    a, b = hosts
    stale = a.claim_run("host-a:1", 0.0)  # runs out at once
    taken = b.claim_run("host-b:1", 30.0)
    assert not a.release_run(stale)  # taken over since: the old claim gives nothing back
    assert (store.get_run(run_id).status, store.get_run(run_id).owner) == ("running", "host-b:1")
    assert b.release_run(taken)  # its holder, told to stop: back to the queue at once
    back = store.get_run(run_id)
    assert (back.status, back.owner, back.lease_until) == ("queued", None, None)
    assert a.claim_run("host-a:2", 30.0).id == run_id  # no lease to wait out


# -- runs held by `exam run` and `exam resume` (Store.hold_run) ---------------------------------


def on_host(monkeypatch, name: str) -> None:
    monkeypatch.setenv("EXAM_HOST_ID", name)


def test_a_cli_run_on_another_host_reads_running_while_held_and_interrupted_once_its_lease_runs_out(
        store, hosts, monkeypatch):
    a, b = hosts
    on_host(monkeypatch, "laptop")
    run_id = new_run(a)  # `exam run` on the laptop
    held = a.hold_run(run_id, 30.0)
    assert (held.owner.startswith("laptop:"), held.lease_token, held.status) == (True, 1, "running")
    on_host(monkeypatch, "server")  # what the service and `exam resume` on another host see
    assert store.get_run(run_id).shown_status == "running"
    with pytest.raises(RunBusy, match=rf"run {run_id} is still running in process laptop:\d+ "
                                      r"\(it renews its lease .* runs out within \d+ s\)"):
        b.hold_run(run_id)
    # the laptop is closed: nothing renews the lease (a lease of 0 s runs out at once)
    on_host(monkeypatch, "laptop")
    a.hold_run(run_id, 0.0)
    on_host(monkeypatch, "server")
    assert store.get_run(run_id).shown_status == "interrupted"
    assert held_elsewhere(store.get_run(run_id)) is None
    assert b.hold_run(run_id).lease_token == 3  # `exam resume` on the server takes it over
    on_host(monkeypatch, "laptop")  # the laptop wakes up: everything it still sends is refused
    with pytest.raises(LeaseLost, match="taken over"):
        a.record_cell(cell(run_id, "Q-01"), [attempt()])
    assert not a.heartbeat(run_id)
    assert store.count_cells(run_id) == 0


def test_before_leases_a_cli_run_on_another_host_was_running_for_ever(store, hosts, monkeypatch):
    """What this fixes: no heartbeat for `exam run`, and a run on another host was taken to
    be alive. A run kept by a version without leases (no lease_until) still reads that way."""
    a, _ = hosts
    on_host(monkeypatch, "laptop")
    run_id = new_run(a)
    a.set_run_status(run_id, "running")  # the old `exam run`: an owner, no lease
    on_host(monkeypatch, "server")
    run = store.get_run(run_id)
    assert run.lease_until is None and run.shown_status == "running"
    assert held_elsewhere(run) == f"run {run_id} is still running in process {run.owner}"


def test_a_run_whose_process_is_gone_from_this_host_is_free_at_once_despite_its_lease(store, hosts):
    a, b = hosts
    run_id = new_run(a)
    a.hold_run(run_id, 3600.0)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with store.tx() as db:  # as if the process that holds it had been killed with -9
        db.execute(update(runs).where(runs.c.id == run_id).values(
            owner=f"{host_id()}:{int(gone.stdout)}"))
    run = store.get_run(run_id)
    assert run.lease_until > time.time() + 3000
    assert run.shown_status == "interrupted" and held_elsewhere(run) is None
    assert b.hold_run(run_id).lease_token == 2


def test_two_resumes_of_one_run_at_once_only_one_takes_it(store_target, store, monkeypatch):
    run_id = new_run(store)
    store.hold_run(run_id, 0.0)  # its process is gone: the lease ran out
    # four `exam resume` processes: each thread its own owner id
    monkeypatch.setattr(store_leases, "owner_id",
                        lambda: f"host-{threading.current_thread().name}:1")
    takers = [Store(store_target) for _ in range(4)]
    try:
        def take(s: Store):
            try:
                return s.hold_run(run_id, 30.0).lease_token
            except RunBusy as exc:
                return str(exc)
        results = at_once([functools.partial(take, s) for s in takers])
    finally:
        for s in takers:
            s.close()
    assert sorted(r for r in results if isinstance(r, int)) == [2]
    assert all("still running" in r or "taken by another process" in r
               for r in results if isinstance(r, str))


def test_a_queued_run_taken_by_exam_resume_is_not_claimed_by_a_worker(store, hosts):
    (run_id,) = queued(store)
    a, b = hosts
    assert a.hold_run(run_id, 30.0).status == "running"
    assert b.claim_run("host-b:1", 30.0) is None
    a.hold_run(run_id, 0.0)  # its lease runs out: a queued run's is a worker's to take over
    assert b.claim_run("host-b:1", 30.0).id == run_id


def test_a_run_a_worker_holds_cannot_be_taken_by_exam_resume(store, hosts, monkeypatch):
    (run_id,) = queued(store)
    a, b = hosts
    a.claim_run("host-a:1", 30.0)
    with pytest.raises(RunBusy, match="still running in process host-a:1"):
        b.hold_run(run_id)
