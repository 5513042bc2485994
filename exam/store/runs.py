"""Runs: what was asked of an agent (bank, plan, repeats), by whom, and how far it got.

A run's row says its agent and version, the questions planned, its status and who owns it
(``host:pid``); the cells it stored are counted here (``status_counts``) and read in
``cells.py``. Who may write a run (its lease) is ``leases.py``.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, insert, select, update

from exam.db.clock import store_now
from exam.db.schema import cells, run_banks, runs, settle_rounds
from exam.errors import NoSuchRun
from exam.records import RunState
from exam.store.base import StoreBase

MAX_ID = 2**63 - 1  # the largest integer SQLite and PostgreSQL (BIGINT) store: a run id


def host_id() -> str:
    """This machine's name in run owners: EXAM_HOST_ID (``exam worker --host-id``), else the
    host name. Two machines must never share one: a pid is only checked on its own host."""
    return os.environ.get("EXAM_HOST_ID") or socket.gethostname()


def owner_id() -> str:
    return f"{host_id()}:{os.getpid()}"


def owner_alive(owner: str | None) -> bool:
    """Whether the process that owns a run still exists (only knowable on this host)."""
    if not owner or ":" not in owner:
        return False
    return not owner_gone(owner)


def owner_gone(owner: str | None) -> bool:
    """The owner ran on this host and its process no longer exists (known at once, without
    waiting for its lease to run out); False for another host's, which only its lease tells."""
    if not owner or ":" not in owner:
        return False
    host, pid = owner.rsplit(":", 1)
    if host != host_id():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    agent: str
    version: str
    bank_path: str
    bank_digest: str
    repeats: int
    plan: tuple[tuple[str, str], ...]
    settings: dict[str, Any]
    status: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    owner: str | None
    heartbeat_at: float | None
    error: str | None
    source: str
    excluded_reason: str | None = None  # set: left out of every report, still listed
    lease_until: float | None = None  # a worker's claim holds the run until then
    lease_token: int = 0  # raised by every claim; only the holder of the current one writes
    # the store's clock as the row was read (exam/db/clock.py): what lease_until is judged by,
    # never this host's clock (None: a Run not read from a store, judged by this host's)
    read_at: float | None = field(default=None, compare=False, repr=False)

    @property
    def total_cells(self) -> int:
        return len(self.plan) * self.repeats

    @property
    def shown_status(self) -> str:
        """'running' whose lease ran out reads 'interrupted': resumable. A worker takes a
        queued run's over by itself; a run started by `exam run` waits for `exam resume`, and
        reads 'interrupted' at once when its process is gone from this host. (Only the CLI's:
        workers on one machine may share a host id from separate containers, whose process
        ids this process cannot see.)"""
        if self.status != RunState.RUNNING:
            return self.status
        if self.source == "cli" and owner_gone(self.owner):
            return RunState.INTERRUPTED
        if self.lease_until is not None:
            return RunState.RUNNING if self.lease_until > self.now else RunState.INTERRUPTED
        return RunState.RUNNING if owner_alive(self.owner) else RunState.INTERRUPTED

    @property
    def now(self) -> float:
        """The time this run's lease is judged at: the store's clock when it was read."""
        return time.time() if self.read_at is None else self.read_at



def read_runs() -> Any:
    """Runs' rows with the store's clock as they are read (``Run.read_at``)."""
    return select(runs, store_now().label("read_at"))


@functools.cache
def _sql(name: str, *variant: bool) -> Any:
    """A frequent read's statement, built once (bound values by name, ``ids`` a list): a
    service request makes a few small reads, and building a statement costs several times
    what SQLite takes to run it."""
    c, r = cells.c, runs.c
    if name == "run":
        return read_runs().where(r.id == bindparam("rid"))
    if name == "runs":  # variant: by agent, by version, limited
        stmt = read_runs().order_by(r.id.desc())
        if variant[0]:
            stmt = stmt.where(r.agent == bindparam("agent"))
        if variant[1]:
            stmt = stmt.where(r.version == bindparam("version"))
        return stmt.limit(bindparam("limit")) if variant[2] else stmt
    if name == "status_counts":
        return (select(c.run_status, func.count()).where(c.run_id == bindparam("rid"))
                .group_by(c.run_status))
    if name == "status_counts_of":
        return (select(c.run_id, c.run_status, func.count())
                .where(c.run_id.in_(bindparam("ids", expanding=True)))
                .group_by(c.run_id, c.run_status))
    raise KeyError(name)


def run_of(row: Row) -> Run:
    """A Run from its row (``read_runs``: with the store's clock as it was read)."""
    r = row._mapping
    return Run(
        id=r["id"], agent=r["agent"], version=r["version"], bank_path=r["bank_path"],
        bank_digest=r["bank_digest"], repeats=r["repeats"],
        plan=tuple((c, d) for c, d in json.loads(r["plan"])),
        settings=json.loads(r["settings"]), status=r["status"],
        created_at=r["created_at"], started_at=r["started_at"],
        finished_at=r["finished_at"], owner=r["owner"], heartbeat_at=r["heartbeat_at"],
        error=r["error"], source=r["source"], excluded_reason=r["excluded_reason"],
        lease_until=r["lease_until"], lease_token=r["lease_token"],
        read_at=r.get("read_at"),
    )


class Runs(StoreBase):
    """Runs made, read, counted and excluded; the rounds ``exam compare --settle`` made."""

    def create_run(self, *, agent: str, version: str, bank_path: str, bank_digest: str,
                   repeats: int, plan: Sequence[tuple[str, str]], settings: dict[str, Any],
                   status: str = RunState.RUNNING, source: str = "cli",
                   bank: Mapping[str, Any] | None = None) -> int:
        """``bank``: the rubric of every question in the bank as the run is made (the
        reports read what changed since, and what the run left out: ``run_banks``)."""
        now = time.time()
        running = status == RunState.RUNNING
        with self.tx() as db:
            run_id = int(db.execute(insert(runs).values(
                agent=agent, version=version, bank_path=bank_path, bank_digest=bank_digest,
                repeats=repeats, plan=json.dumps([list(p) for p in plan], ensure_ascii=False),
                settings=json.dumps(settings, ensure_ascii=False), status=status,
                created_at=now, started_at=now if running else None,
                owner=owner_id() if running else None,
                heartbeat_at=store_now() if running else None,
                source=source).returning(runs.c.id)).scalar_one())
            if bank is not None:
                db.execute(insert(run_banks).values(
                    run_id=run_id, questions=json.dumps(bank, ensure_ascii=False)))
            return run_id

    def run_banks(self, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The bank each run was made with (``create_run``'s ``bank``); runs made before
        schema 12 have none."""
        ids, out = list(dict.fromkeys(run_ids)), {}
        for start in range(0, len(ids), 500):  # bound the statement's parameters
            rows = self._rows(select(run_banks).where(
                run_banks.c.run_id.in_(ids[start:start + 500])))
            out.update({r.run_id: json.loads(r.questions) for r in rows})
        return out

    def get_run(self, run_id: int) -> Run:
        if not 0 <= run_id <= MAX_ID:  # the database would refuse the number, not find no run
            raise NoSuchRun(f"{self.path}: no run {run_id}")
        rows = self._rows(_sql("run"), {"rid": run_id})
        if not rows:
            raise NoSuchRun(f"{self.path}: no run {run_id}")
        return run_of(rows[0])

    def list_runs(self, agent: str | None = None, version: str | None = None,
                  limit: int | None = None) -> list[Run]:
        stmt = _sql("runs", bool(agent), bool(version), bool(limit))
        params = {"agent": agent, "version": version, "limit": int(limit) if limit else None}
        return [run_of(r) for r in self._rows(stmt, params)]

    def runs_in(self, conn: Connection) -> list[Run]:
        """Every run as ``conn`` (a transaction of this store's) reads them, newest first: what
        another reader sees as of that transaction's snapshot (``exam store copy``)."""
        return [run_of(r) for r in conn.execute(_sql("runs", False, False, False),
                                                   {"agent": None, "version": None,
                                                    "limit": None})]

    def set_excluded(self, run_id: int, reason: str | None) -> None:
        """Exclude a run from every report (``reason``), or include it again (None)."""
        self.get_run(run_id)
        with self.tx() as db:
            db.execute(update(runs).where(runs.c.id == run_id).values(
                excluded_reason=reason, excluded_at=time.time() if reason else None))

    def status_counts(self, run_id: int) -> dict[str, int]:
        """run status → cells of this run."""
        return {r[0]: r[1] for r in self._rows(_sql("status_counts"), {"rid": run_id})}

    def status_counts_of(self, run_ids: Sequence[int]) -> dict[int, dict[str, int]]:
        """``status_counts`` of each run, in one query (a list of 100 runs made 300)."""
        out: dict[int, dict[str, int]] = {i: {} for i in run_ids}
        if out:
            for run_id, status, n in self._rows(_sql("status_counts_of"),
                                                {"ids": list(out)}):
                out[run_id][status] = n
        return out
    def add_settle_round(self, run_id: int, old: str, new: str) -> None:
        """Mark ``run_id`` as a round `exam compare OLD NEW --settle` made."""
        with self.tx() as db:
            db.execute(self._insert(settle_rounds).values(run_id=run_id, old=old, new=new)
                       .on_conflict_do_nothing())

    def settle_rounds_of(self, run_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """run id → (old, new) of the comparison whose --settle made it, for these runs."""
        if not run_ids:
            return {}
        s = settle_rounds.c
        rows = self._rows(select(s.run_id, s.old, s.new).where(s.run_id.in_(list(run_ids))))
        return {r.run_id: (r.old, r.new) for r in rows}
