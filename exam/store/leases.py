"""Leases: which process may write a run, and for how long without a word from it.

A worker claims a queued run (``claim_run``), or ``exam run``/``exam resume`` takes a named
one (``hold_run``); the claim holds the run until its lease runs out (``LEASE_S``, renewed
by ``heartbeat``) and raises the run's lease token. Every write to the run is fenced by the
token this Store holds (``_fenced``; the cells' group commit checks it too), so a process
whose lease was taken over is refused (``LeaseLost``), never writes beside the new holder.
Leases are judged by the store's clock, never a host's (``exam/db/clock.py``).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import and_, func, or_, select, update

from exam.db.clock import store_now
from exam.db.engine import refuse_newer
from exam.db.schema import runs
from exam.errors import LeaseLost, RunBusy
from exam.records import RunState
from exam.store.runs import Run, Runs, owner_id, read_runs, run_of

LEASE_S = 30.0  # how long a worker's claim holds a run without a heartbeat


def held_elsewhere(run: Run) -> str | None:
    """Why another process holds ``run`` now, or None: it reads ``running`` (``shown_status``:
    a live lease; for a run written by a version without leases, its owner alive) and is not
    this process's own."""
    if run.owner == owner_id() or run.shown_status != RunState.RUNNING:
        return None
    holder = f"process {run.owner}" if run.owner else "another process"
    if run.lease_until is None:
        return f"run {run.id} is still running in {holder}"
    return (f"run {run.id} is still running in {holder} (it renews its lease while it works; "
            f"if that process is gone, the lease runs out within "
            f"{max(1, round(run.lease_until - run.now))} s)")


class Leases(Runs):
    """Claims, holds, heartbeats and releases of runs, and the status a holder sets."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._leases: dict[int, int] = {}  # run id → the lease token this Store holds
        self._lease_s: dict[int, float] = {}

    def _fenced(self, stmt: Any, run_id: int) -> Any:
        """Limit an UPDATE of a run to this Store's lease on it, if it holds one."""
        token = self._leases.get(run_id)
        return stmt if token is None else stmt.where(runs.c.lease_token == token)

    def _lost(self, run_id: int) -> LeaseLost:
        # the outdated token stays: everything this Store still tries on the run is refused
        return LeaseLost(f"{self.path}: run {run_id}: this process's lease was taken over (by "
                         f"a worker or `exam resume`); it stores nothing more for this run",
                         run_id)

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's status. A worker holding the run's lease keeps it while ``running`` and
        gives it up with a final status; one whose lease was taken gets LeaseLost."""
        now = time.time()
        held = run_id in self._leases
        stmt = self._fenced(update(runs).where(runs.c.id == run_id), run_id)
        if status == RunState.RUNNING:
            values: dict[str, Any] = dict(status=status, heartbeat_at=store_now(), error=None,
                                          started_at=func.coalesce(runs.c.started_at, now),
                                          finished_at=None)
            if not held:
                values["owner"] = owner_id()
        elif status in RunState.FINISHED:
            values = dict(status=status, finished_at=now, error=error, lease_until=None)
        else:
            values = dict(status=status, error=error)
        with self.tx() as db:
            changed = db.execute(stmt.values(**values)).rowcount
        if held and not changed:
            raise self._lost(run_id)
        if status in RunState.FINISHED:
            self._leases.pop(run_id, None)

    def claim_run(self, worker: str, stale_after_s: float = LEASE_S) -> Run | None:
        """Take the oldest queued run, or a worker's run whose lease has run out.

        The claim holds the run for ``stale_after_s`` (the lease, renewed by ``heartbeat``)
        and raises its lease token, which fences out the worker that held it before. Rows are
        locked as they are read (PostgreSQL: FOR UPDATE SKIP LOCKED, so concurrent claimers
        take different runs; SQLite: the BEGIN IMMEDIATE transaction).
        """
        now = time.time()
        # a run started from the CLI belongs to its user (`exam resume`), not to workers; a
        # lease is judged by the store's clock, never this host's (exam/db/clock.py)
        stmt = select(runs.c.id).where(or_(
            runs.c.status == RunState.QUEUED,
            and_(runs.c.status == RunState.RUNNING, runs.c.source != "cli",
                 or_(runs.c.lease_until.is_(None), runs.c.lease_until <= store_now())),
        )).order_by(runs.c.id).limit(1)
        if self.backend == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        with self.tx() as db:
            # under the schema read in this transaction: a migration landing after the
            # worker's own check (worker.work_forever) is seen here, and nothing is claimed
            refuse_newer(db, self.path)
            run_id = db.execute(stmt).scalar()
            if run_id is None:
                return None
            db.execute(update(runs).where(runs.c.id == run_id).values(
                status=RunState.RUNNING, owner=worker, heartbeat_at=store_now(),
                lease_until=store_now() + stale_after_s, lease_token=runs.c.lease_token + 1,
                started_at=func.coalesce(runs.c.started_at, now), finished_at=None))
            run = run_of(db.execute(read_runs().where(runs.c.id == run_id)).one())
        self._leases[run.id] = run.lease_token
        self._lease_s[run.id] = stale_after_s
        return run

    def hold_run(self, run_id: int, lease_s: float = LEASE_S) -> Run:
        """Take one named run for this process (``exam run``, ``exam resume``), held by a lease
        as a worker's claim is: renewed by ``heartbeat``, fenced by the raised token (a process
        that stalled and comes back after another took the run over gets LeaseLost).

        Refused (RunBusy) while another process holds it: a live lease, or, for a run started
        by a version without leases, an owner alive on this host. The take is one fenced
        UPDATE, so two ``exam resume`` of one run at once cannot both win, nor can a worker
        and ``exam resume`` of a queued run.
        """
        now = time.time()
        run = self.get_run(run_id)
        why = held_elsewhere(run)
        if why:
            raise RunBusy(why, run_id)
        with self.tx() as db:
            changed = db.execute(update(runs).where(
                runs.c.id == run_id, runs.c.lease_token == run.lease_token).values(
                status=RunState.RUNNING, owner=owner_id(), heartbeat_at=store_now(),
                lease_until=store_now() + lease_s, lease_token=runs.c.lease_token + 1, error=None,
                started_at=func.coalesce(runs.c.started_at, now), finished_at=None)).rowcount
        if not changed:  # taken between the read and the update
            raise RunBusy(held_elsewhere(self.get_run(run_id))
                          or f"run {run_id} was taken by another process just now", run_id)
        run = self.get_run(run_id)
        self._leases[run.id] = run.lease_token
        self._lease_s[run.id] = lease_s
        return run

    def lease_of(self, run_id: int) -> tuple[int, float] | None:
        """(token, seconds) of this Store's lease on a run, if it holds one."""
        token = self._leases.get(run_id)
        return None if token is None else (token, self._lease_s.get(run_id, LEASE_S))

    def share_lease(self, run_id: int, token: int, lease_s: float) -> None:
        """Write a run's cells under a lease another process holds and renews (a run's helper
        process, exam/pipeline/shard.py): fenced by its token like the holder's own writes,
        so a run taken over is refused to both. This Store never sets the run's status."""
        self._leases[run_id] = token
        self._lease_s[run_id] = lease_s

    def heartbeat(self, run_id: int) -> bool:
        """Renew this Store's lease on a run (or, without one, mark the run alive).
        False when the lease was taken over: the caller should stop working on the run."""
        values: dict[str, Any] = {"heartbeat_at": store_now()}
        if run_id in self._leases:
            values["lease_until"] = store_now() + self._lease_s.get(run_id, LEASE_S)
        with self.tx() as db:
            changed = db.execute(self._fenced(update(runs).where(runs.c.id == run_id), run_id)
                                 .values(**values)).rowcount
        return changed == 1 or run_id not in self._leases

    def release_run(self, run: Run) -> bool:
        """Give a claimed run back to the queue at once (its worker was told to stop): the next
        worker on any host claims it without waiting for the lease to run out, and runs only
        the missing cells. Fenced by the claim's token: False when another worker took it."""
        with self.tx() as db:
            changed = db.execute(update(runs).where(
                runs.c.id == run.id, runs.c.lease_token == run.lease_token,
                runs.c.status.in_((RunState.RUNNING, RunState.INTERRUPTED)))
                .values(status=RunState.QUEUED, owner=None, lease_until=None, error=None,
                        finished_at=None)).rowcount
        self._leases.pop(run.id, None)
        return changed == 1

