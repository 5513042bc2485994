"""``exam worker``: execute runs queued in the database (by the API or LINE), one at a time.

A run is claimed with a row lock and held by a lease that a heartbeat renews every few
seconds. A worker that dies (kill -9, a crash, a deploy, a lost host) leaves its run
``running`` with a lease that runs out; the next worker to look, on any host, claims it and
finishes only the missing cells (EXAM_HOST_ID, ``exam worker --host-id``, names the host in
run owners). A worker that only stalled and comes back finds its lease
token outdated: the store refuses its cells (LeaseLost) and it lets the run go.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from exam.errors import (
    ExamError,
    LeaseLost,
    SchemaTooNew,
    StoreDamaged,
    StoreError,
    StoreUnavailable,
)
from exam.pipeline.lease import beat_every, renewed
from exam.pipeline.registry import load_registry
from exam.pipeline.runner import Interrupted, execute, job_for
from exam.records import RunState
from exam.store import LEASE_S, Run, Store, owner_id

log = logging.getLogger("exam.pipeline.worker")
STALE_AFTER_S = LEASE_S  # the lease: a run not renewed for this long is taken over
RETRY_S, RETRY_MAX_S = 5.0, 60.0  # a store lost while working: tried again, doubling


AfterRun = Callable[[Store, int], object]  # called with each run finished as done


def work_once(store: Store, agents_path: str | None = None,
              stale_after_s: float = STALE_AFTER_S, after: AfterRun | None = None
              ) -> int | None:
    """Claim and finish one run; returns its id, or None when there was nothing to do.
    ``after``: called once the run is done (``exam serve`` and ``exam worker`` keep what its
    pages read: exam/reports/kept.py, which this layer does not import)."""
    run = store.claim_run(owner_id(), stale_after_s)
    if run is None:
        return None
    done = store.count_cells(run.id)
    if done:  # taken over from a worker that died or stopped: only the missing cells are run
        log.info("run %s: %s %s claimed, resuming: %d of %d cells already stored, %d to run",
                 run.id, run.agent, run.version, done, run.total_cells, run.total_cells - done)
    else:
        log.info("run %s: %s %s claimed", run.id, run.agent, run.version)
    every_s = beat_every(stale_after_s)
    with renewed(store, [run.id], every_s):
        final = _work_on(store, run, agents_path)
    if after is not None and final == RunState.DONE:  # the lease given up: others may go on
        after(store, run.id)
    return run.id


def _work_on(store: Store, run: Run, agents_path: str | None) -> str | None:
    """The run's final state (None when it did not get one here)."""
    try:
        job = job_for(store, run.id, load_registry(agents_path).get(run.agent))
        for warning in job.agent.warnings:
            log.warning("run %s: %s: %s", run.id, job.agent.name, warning)
        final = execute(store, [job])
        log.info("run %s: %s", run.id, final.get(run.id))
        # stopped with cells left (the store went away for a moment): the next claim finishes it
        if final.get(run.id) == RunState.INTERRUPTED:
            why = store.get_run(run.id).error
            if store.release_run(run):
                log.warning("run %s: %s; given back to the queue, the next worker finishes it",
                            run.id, why)
        return final.get(run.id)
    except (KeyboardInterrupt, Interrupted):  # told to stop (Ctrl-C, SIGTERM): hand it back
        if store.release_run(run):
            log.warning("run %s: given back to the queue; the next worker finishes it", run.id)
        raise KeyboardInterrupt from None
    except LeaseLost as exc:  # another worker holds the run now: leave it to them
        log.warning("run %s: %s", run.id, exc)
    except StoreUnavailable:  # still away: the run is taken over once its lease runs out
        raise
    except ExamError as exc:
        store.set_run_status(run.id, RunState.FAILED, str(exc))
        log.error("run %s failed: %s", run.id, exc)
    except Exception as exc:  # a bug: fail this run, keep the worker taking the next ones
        log.exception("run %s failed with an unexpected error", run.id)
        try:
            store.set_run_status(run.id, RunState.FAILED, f"harness error: {type(exc).__name__}: "
                                                   f"{' '.join(str(exc).split())[:300]}")
        except Exception:
            log.exception("run %s: could not record the failure", run.id)
    return None


def work_forever(db: str | None, agents_path: str | None, poll_s: float = 1.0,
                 stop: threading.Event | None = None,
                 stale_after_s: float = STALE_AFTER_S, after: AfterRun | None = None) -> None:
    """Claim and finish runs until ``stop`` is set. A store that cannot be opened at the start
    for good (a wrong ``EXAM_DB``) raises at once, one that cannot be reached yet is waited for
    (``_opened``); one lost later (PostgreSQL restarting, a failover,
    SQLite busy past its timeout) is tried again, ``RETRY_S`` doubling to ``RETRY_MAX_S``,
    logged when it starts failing and when it is back, so a short outage does not stop every
    worker (systemd gives up on a unit that fails 5 times in 10 s). A store migrated past this
    code (``SchemaTooNew``) or damaged (``StoreDamaged``) stops the worker: retrying would
    never help."""
    stop = stop or threading.Event()
    store = _opened(db, stop)
    if store is None:  # told to stop while the store could not be reached
        return
    log.info("worker %s watching %s", owner_id(), store.path)
    outage = _Outage(stop)
    try:
        while not stop.is_set():
            try:
                # a store migrated past this code since it was opened (a worker left running
                # through an upgrade) is refused here, as at the start: nothing is claimed
                # with old code
                store.check_schema()
                did = work_once(store, agents_path, stale_after_s, after)
                # given back because the store went away mid-run: wait as for a lost store
                # before claiming it again (each claim sends cells to the agent)
                if did is not None and store.get_run(did).status == RunState.QUEUED:
                    raise StoreUnavailable(f"run {did} was given back to the queue")
            except (SchemaTooNew, StoreDamaged):  # retrying would never help
                raise
            except StoreError as exc:
                outage.failed(f"the store cannot be used: {exc}")
                continue
            outage.over()
            if did is None:
                stop.wait(poll_s)
    finally:
        store.close()


def _opened(db: str | None, stop: threading.Event) -> Store | None:
    """The store, once it can be reached: a worker started before PostgreSQL (a reboot, the
    server restarting, too many connections) waits for it, tried again as a lost store is and
    logged once, instead of exiting (systemd gives up on a unit that keeps failing). One that
    cannot be opened for another reason (no such database, a refused login, a wrong path)
    raises at once. None: told to stop meanwhile."""
    outage = _Outage(stop)
    while not stop.is_set():
        try:
            store = Store.open(db)
        except StoreUnavailable as exc:
            outage.failed(str(exc))
            continue
        outage.over()
        return store
    return None


class _Outage:
    """The store away: said once as it starts (its message changes as PostgreSQL restarts)
    and once as it ends, waited out meanwhile, ``RETRY_S`` doubling to ``RETRY_MAX_S``."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop, self.wait_s, self.on = stop, RETRY_S, False

    def failed(self, message: str) -> None:
        if not self.on:
            log.error("%s; trying again every %g–%g s", message, RETRY_S, RETRY_MAX_S)
            self.on = True
        self.stop.wait(self.wait_s)
        self.wait_s = min(self.wait_s * 2, RETRY_MAX_S)

    def over(self) -> None:
        if self.on:
            log.info("the store can be used again")
            self.on, self.wait_s = False, RETRY_S


def start_in_thread(db: str | None, agents_path: str | None,
                    after: AfterRun | None = None) -> threading.Event:
    """For ``exam serve``: a worker in this process; set the returned event to stop it."""
    stop = threading.Event()

    def work() -> None:
        try:
            work_forever(db, agents_path, 1.0, stop, after=after)
        except ExamError as exc:  # a damaged store: one line in the log, not a traceback
            log.error("worker stopped: %s", exc)

    threading.Thread(target=work, daemon=True, name="exam-worker").start()
    return stop
