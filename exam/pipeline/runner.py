"""The runner: POST each (question, repeat) cell to its agent, store it the moment it lands.

One thread pool and one RequestGate per agent; several agents run side by side. The
work order (``input``) is sent verbatim. Ctrl-C stops taking new cells, keeps every
cell that arrived, and leaves the run resumable with ``exam resume``.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from exam import names
from exam.bank import Bank, Item, bank_mismatch, load_bank, placeholders, rubric
from exam.errors import ExamError, LeaseLost, StoreError, StoreUnavailable
from exam.grading.keys import checks_json, question_key, reply_key, rules_key
from exam.grading.stored import cell_reply, last_json
from exam.pipeline import n8n_usage
from exam.pipeline import shard as sharding
from exam.pipeline.gate import RequestGate, Stopped
from exam.pipeline.registry import Agent
from exam.pipeline.transport import Attempt, cell_result, clean_error, redact, send
from exam.records import AttemptRow, CachedGrade, CellRow, RunState
from exam.store import Run, Store
from graders import GRADER_VERSION, grade

ProgressFn = Callable[[int, CellRow], None]
TAKEN_OVER = "taken over"  # a final state of execute(): another process finishes the run
QUEUED_PER_THREAD = 2  # cells handed to a run's pool ahead of its threads
log = logging.getLogger("exam.pipeline.runner")


@dataclass(frozen=True, slots=True)
class Job:
    """One run to execute: the run record, its agent and the bank questions it covers."""

    run: Run
    agent: Agent
    items: dict[str, Item]


def select_items(bank: Bank, only: Sequence[str] = (), category: str | None = None) -> list[Item]:
    items = list(bank.items)
    if only:
        known = bank.by_case()
        unknown = [c for c in only if c not in known]
        if unknown:
            raise ExamError(f"{bank.path}: no question {', '.join(map(repr, unknown))} "
                            f"(--only takes case_no values from the bank)")
        items = [known[c] for c in dict.fromkeys(only)]  # a case named twice is one question
    if category is not None:
        items = [i for i in items if i.category == category]
        if not items:
            cats = sorted({i.category for i in bank.items})
            raise ExamError(f"{bank.path}: no question in category {category!r} "
                            f"(categories: {', '.join(cats)})")
    return items


def refuse_drafts(bank: Bank, items: Sequence[Item]) -> None:
    """A question still holding a ``TODO`` (`exam init`'s starter, `exam capture`'s draft) is
    never sent and graded as if its rubric were written: the run is refused, each one named."""
    found = {i.case_no: placeholders(bank.path, i) for i in items}
    todo = [str(p) for problems in found.values() for p in problems]
    if todo:
        drafts = [case_no for case_no, problems in found.items() if problems]
        raise ExamError("\n".join([*todo, f"{bank.path}: {len(todo)} TODO(s) left in "
                                    f"{', '.join(drafts)}: write them (exam bank check "
                                    f"{bank.path} lists them), or leave the question(s) out "
                                    "with --only"]))


def agent_bank(agent: Agent) -> Bank:
    """The agent's question bank; a missing file says whose bank it is and where it is set."""
    if not Path(agent.bank).is_file():
        raise ExamError(f"{agent.bank}: no such file: the question bank of agent {agent.name} "
                        f"(set 'bank:' for it in the registry, relative to the registry file; the default is "
                        f"bank/<name>.json beside the registry or its folder)")
    return load_bank(agent.bank)


def create_run(store: Store, agent: Agent, version: str, *, repeats: int = 1,
               only: Sequence[str] = (), category: str | None = None,
               status: str = RunState.RUNNING, source: str = "cli",
               marks: Mapping[str, Any] | None = None) -> int:
    """A run of ``agent`` under ``version``; ``marks``: more for its settings to record (a
    watch round's ``watch``: exam/decide/watch.py)."""
    if repeats < 1:
        raise ExamError(f"--repeats: expected a whole number ≥ 1, found {repeats}")
    if not version.strip():
        raise ExamError("--version: give a label for what is being examined, e.g. v2 or prompt-0913")
    names.check("version label", version)  # the CLI, the API and LINE all come through here
    bank = agent_bank(agent)
    items = select_items(bank, only, category)
    refuse_drafts(bank, items)
    return store.create_run(agent=agent.name, version=version, bank_path=bank.path,
                            bank_digest=bank.digest, repeats=repeats,
                            plan=[(i.case_no, i.digest) for i in items],
                            settings={**agent.settings(), **(marks or {})}, status=status,
                            source=source, bank=rubric.snapshot(bank))


def queue_run(store: Store, agent: Agent, version: str, *, repeats: int = 1,
              only: Sequence[str] = (), source: str = "api",
              marks: Mapping[str, Any] | None = None) -> int:
    """A run for a worker to execute: the API and LINE commands start runs this way."""
    return create_run(store, agent, version, repeats=repeats, only=only,
                      status=RunState.QUEUED, source=source, marks=marks)


def job_for(store: Store, run_id: int, agent: Agent) -> Job:
    """The run's job; a bank naming another agent adds a warning to the job's agent."""
    run = store.get_run(run_id)
    bank = load_bank(run.bank_path)
    if (mismatch := bank_mismatch(bank.path, bank.agent, agent.name)) is not None:
        agent = replace(agent, warnings=(*agent.warnings, mismatch))
    current = bank.by_case()
    missing = [c for c, _ in run.plan if c not in current]
    if missing:
        raise ExamError(f"run {run_id}: question(s) {', '.join(missing)} are no longer in "
                        f"{run.bank_path}; start a new run instead of resuming")
    return Job(run, agent, {c: current[c] for c, _ in run.plan})


def missing_cells(store: Store, run: Run) -> list[tuple[str, int]]:
    done = store.done_cells(run.id)
    # repeat-major: every question once before any question twice, so an interrupted
    # run still covers the whole bank evenly
    return [(c, r) for r in range(1, run.repeats + 1) for c, _ in run.plan if (c, r) not in done]


def run_cell(store: Store, job: Job, case_no: str, repeat: int, gate: RequestGate) -> CellRow:
    """Ask, classify, grade and store one cell. Whatever goes wrong inside it (a bug, not the
    agent) is stored on the cell as ``harness_error`` and the run goes on."""
    outcomes: list[Attempt] = []
    try:
        return _run_cell(store, job, case_no, repeat, gate, outcomes)
    # another process holds the run now, the store is away for a moment, or the run was told
    # to stop before this cell's request was sent: none of them is the cell's error
    except (LeaseLost, StoreUnavailable, Stopped):
        raise
    except Exception as exc:
        log.debug("run %s %s #%s: harness error", job.run.id, case_no, repeat, exc_info=True)
        return _harness_error(store, job, case_no, repeat, exc, outcomes)


def _harness_error(store: Store, job: Job, case_no: str, repeat: int, exc: Exception,
                   outcomes: list[Attempt]) -> CellRow:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    error = f"harness error (not the agent's answer): {redact(job.agent, text)}"
    cell = CellRow(
        run_id=job.run.id, case_no=case_no, repeat=repeat,
        question_digest=job.items[case_no].digest, run_status="harness_error", error=error,
        text=None, status=None, truncated=False, steps=None, attempts=len(outcomes),
        model_calls=None, tokens=None,
        latency_ms=round(sum(o.row.latency_ms for o in outcomes), 1), completed_at=time.time())
    rows = [o.row for o in outcomes]
    try:
        store.record_cell(cell, rows)
    except Exception:  # the attempts themselves may be what cannot be stored: keep the figures
        store.record_cell(cell, [AttemptRow(r.n, r.started_at, r.http_status, r.latency_ms,
                                            "", None, None, r.body_bytes, False) for r in rows])
    return cell


def _run_cell(store: Store, job: Job, case_no: str, repeat: int, gate: RequestGate,
              outcomes: list[Attempt]) -> CellRow:
    agent, item = job.agent, job.items[case_no]
    if agent.blocked:
        cell = CellRow(job.run.id, case_no, repeat, item.digest, "blocked", agent.blocked, None,
                       None, False, None, 0, None, None, None, time.time())
        store.record_cell(cell, [])
        return cell
    send(agent, item.question.input, gate, outcomes)
    result = cell_result(agent, outcomes)
    read = result.read
    model_calls, tokens, estimated, usage_note = result.model_calls, result.tokens, False, ""
    if agent.n8n is not None:  # the registry says: usage comes from n8n's executions
        usage = n8n_usage.measure(agent.n8n, [
            (o.row.n, o.row.error, o.body if o.body is not None else o.row.body)
            for o in outcomes])
        model_calls, tokens = usage.model_calls, usage.tokens
        # the note names the n8n API's URL, whose path may hold a ${VAR}
        estimated, usage_note = usage.estimated, clean_error(agent, usage.note)
    latency = sum(o.row.latency_ms for o in outcomes)
    steps = None
    if read is not None and read.steps is not None:
        steps = [{"tool": s.tool, "args": dict(s.args)} for s in read.steps]
    cell = CellRow(
        run_id=job.run.id, case_no=case_no, repeat=repeat, question_digest=item.digest,
        run_status=result.run_status, error=result.error,
        text=read.text if read else None, status=read.status if read else None,
        truncated=bool(read and read.truncated), steps=steps, attempts=len(outcomes),
        model_calls=model_calls, tokens=tokens, latency_ms=round(latency, 1),
        completed_at=time.time(), tokens_estimated=estimated, usage_note=usage_note,
    )
    attempts: list[AttemptRow] = [o.row for o in outcomes]
    record = cached = None
    if read is not None:  # what the grader said at the time; reports re-grade anyway
        record, cached = _graded(job, item, cell, attempts)
    store.record_cell(cell, attempts, record, cached)
    return cell


def _graded(job: Job, item: Item, cell: CellRow, attempts: Sequence[AttemptRow]
            ) -> tuple[tuple[str, str | None, list[dict]], CachedGrade | None]:
    """The cell's grade as stored with it, and (for a reply that arrived as ok) the same grade
    as a row of the grade cache: the reply is built from the cell as the store keeps it and
    the reports read it back (``cell_reply``), so the scorecard that ends the run, and every
    later report, read this grade instead of grading the reply again. A reply the store keeps
    differently (a text over the cap) only gets another key there: a re-grade, never a wrong
    grade, since the key is a digest of every field graded."""
    budget = job.run.settings.get("budget") or {}
    raw = last_json(attempts) if item.question.fields and cell.run_status == "ok" else None
    reply = cell_reply(job.run, cell, raw, item)
    g = grade(item.question, reply, budget=budget)
    record = (GRADER_VERSION, g.verdict, [c.as_dict() for c in g.checks])
    if cell.run_status != "ok":  # the reports grade only what arrived as ok
        return record, None
    return record, CachedGrade(rules_key(), reply_key(reply, budget), question_key(item),
                               g.verdict or "", checks_json(g.checks))


def pool_threads(concurrency: int) -> int:
    """Threads in an agent's pool: its concurrency and a quarter more (at least 2).

    The gate (``RequestGate``) bounds the requests in flight, not the threads. A thread whose
    reply has come in still classifies, grades and stores its cell (waiting for the group
    commit); with only ``concurrency`` threads, those cells' slots stayed empty meanwhile: at
    concurrency 64 against a 50 ms agent about one slot in six, so a run took ~1.2× longer
    than the agent needed. The extra threads start the next requests while others store.
    """
    return concurrency + max(2, concurrency // 4)


class Interrupted(Exception):
    """Ctrl-C: what arrived is stored; the runs are resumable."""


def execute(store: Store, jobs: Iterable[Job], progress: ProgressFn | None = None,
            stop: threading.Event | None = None, shard: tuple[int, int] | None = None
            ) -> dict[int, str]:
    """Run every missing cell of every job; returns run id → final status.

    A large run held under a lease is split with a helper process (exam/pipeline/shard.py:
    half the cells, half the concurrency); this process waits for it and sets the final
    status. ``shard`` (index, count): this process is such a helper, and runs only its share
    of the cells, never setting a run's status (returned: done, failed, lost or taken over).

    Each run stops on its own: a run taken over by another process, failing on a bug, or whose
    cell could not be stored while the store still answers (a dropped connection) ends while
    the others of the same call go on. ``stop`` (the caller's), Ctrl-C and a store gone away
    (it answers no read either) stop them all.
    """
    return _Execution(store, list(jobs), progress, stop or threading.Event(), shard).run()


class _Execution:
    """One call of ``execute``: per run a pool, a gate, the cells left to hand it and perhaps
    a helper process; the cells in flight; and what ended each run early (a bug: failed; the
    store lost: resumable; taken over: another process's now)."""

    def __init__(self, store: Store, jobs: list[Job], progress: ProgressFn | None,
                 stop: threading.Event, shard: tuple[int, int] | None):
        self.store, self.jobs, self.progress, self.stop, self.shard = (
            store, jobs, progress, stop, shard)
        # each run's own stop; one run alone uses the caller's (nothing to tell apart)
        self.halted = {job.run.id: stop if len(jobs) == 1 else threading.Event()
                       for job in jobs}
        self.pools: list[ThreadPoolExecutor] = []
        self.todo: dict[int, tuple[ThreadPoolExecutor, RequestGate,
                                   Iterator[tuple[str, int]]]] = {}
        self.helpers: dict[int, sharding.Helper] = {}
        self.futures: dict[Future, Job] = {}  # the cells handed to a pool and not yet looked at
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.errors: dict[int, str] = {}  # runs a bug stopped: failed (resumable)
        self.lost: dict[int, str] = {}  # runs stopped because the store went away: resumable
        self.taken: set[int] = set()  # runs another process took over (LeaseLost): theirs now
        self.ended: list[tuple[int, int, str]] = []  # (run id, exit status, last words) of helpers

    def run(self) -> dict[int, str]:
        for job in self.jobs:
            self._start(job)
        # a few cells per thread are queued at a time, the next one as one finishes: 10,000
        # cells submitted at once held 10,000 futures (~15 MB) until they ran
        for job in self.jobs:
            for _ in range(QUEUED_PER_THREAD * pool_threads(job.agent.concurrency)):
                self._submit(job)
        try:
            self._collect()
            # inside the try: Ctrl-C while this process waits for its helpers' share is an
            # interruption like any other (the runs read interrupted at once, not at the
            # lease's end)
            self.ended += _wait_helpers(self.helpers, self.halted)
        except KeyboardInterrupt:
            self._interrupted()
            raise Interrupted() from None
        finally:
            self._wind_up()
        return self._statuses()

    def _start(self, job: Job) -> None:
        """The run's pool, gate and cells (its share of them, when a helper takes the rest)."""
        cells = missing_cells(self.store, job.run)
        concurrency = job.agent.concurrency
        shard = self.shard
        if self.shard is None:
            self.store.set_run_status(job.run.id, RunState.RUNNING)
            helper = _start_helper(self.store, job, len(cells), self.progress)
            if helper is not None:
                self.helpers[job.run.id] = helper
                concurrency -= helper.concurrency
                shard = (0, 2)
        if shard is not None:
            cells = [(c, r) for c, r in cells if sharding.shard_of(c, r, shard[1]) == shard[0]]
        gate = RequestGate(concurrency, job.agent.min_interval_s, self.halted[job.run.id])
        pool = ThreadPoolExecutor(max_workers=pool_threads(concurrency),
                                  thread_name_prefix=f"exam-{job.agent.name}")
        self.pools.append(pool)
        self.todo[job.run.id] = (pool, gate, iter(cells))

    def _cell(self, job: Job, case_no: str, repeat: int, gate: RequestGate) -> CellRow | None:
        """One cell, on a pool's thread; None when its run was stopped before its turn."""
        if self.halted[job.run.id].is_set():
            return None
        return run_cell(self.store, job, case_no, repeat, gate)

    def _submit(self, job: Job) -> None:
        """Hand the job's next cell to its pool, if it has one left and nothing said stop."""
        pool, gate, cells = self.todo[job.run.id]
        cell = None if self.halted[job.run.id].is_set() else next(cells, None)
        if cell is not None:
            fut = pool.submit(self._cell, job, *cell, gate)
            self.futures[fut] = job
            fut.add_done_callback(self.finished.put)

    def _halt(self, run_id: int | None = None) -> None:
        """Stop taking cells of one run (None: of every run), here and in its helper (its
        share stops now, not at the end)."""
        if run_id is None:
            self.stop.set()
        for rid, event in self.halted.items():
            if run_id is None or rid == run_id:
                event.set()
                if rid in self.helpers:
                    self.helpers[rid].stop()

    def _check_helpers(self) -> None:
        """A helper that failed (a bug, a crash at start) fails its run now, not once this
        process has run its own share. One killed (out of memory) leaves its cells to
        resume: this process goes on with its share."""
        for rid, helper in self.helpers.items():
            code = helper.proc.poll()
            if code is not None and code > 0 and not self.halted[rid].is_set() and code not in (
                    sharding.TAKEN, sharding.STORE_LOST):  # those two this process meets itself
                log.warning("run %s: its second process failed (exit status %s): the run stops",
                            rid, code)
                self._halt(rid)

    def _collect(self) -> None:
        """Take each finished cell as it comes, hand its run's next one to the pool, until
        none is in flight. Each finished cell is handed over once: waiting on the set of
        pending futures would walk all of them at every completion (10,000 cells: seconds of
        the main thread's CPU)."""
        unlooked = 0  # cells handed over since the helpers were last looked at
        while self.futures:
            if self.stop.is_set() and not all(e.is_set() for e in self.halted.values()):
                self._halt()  # the caller's stop: every run's (once: it signals the helpers)
            if self.helpers and unlooked % 64 == 0:  # every 64 cells, and whenever none came
                self._check_helpers()
            try:
                fut = self.finished.get(timeout=0.5)
            except queue.Empty:
                unlooked = 0
                continue
            unlooked += 1
            job = self.futures.pop(fut)  # a finished cell is let go: memory stays flat
            self._submit(job)
            self._took(job, fut)

    def _took(self, job: Job, fut: Future) -> None:
        """A finished cell: its progress, or what it says of its run."""
        try:
            cell = fut.result()
        except Stopped:  # told to stop while it waited for a slot: never sent, run later
            return
        except LeaseLost as exc:  # another process took the run over: it runs the rest
            log.warning("run %s: %s", job.run.id, exc)
            self.taken.add(job.run.id)
            self._halt(job.run.id)
            return
        except StoreUnavailable as exc:  # this run stops, resumable
            self.lost.setdefault(job.run.id, f"the store could not be used: {exc}")
            # one connection dropped (a backend ended, a socket reset): the store still
            # answers, so only the runs whose cells were on it stop; gone (PostgreSQL
            # restarting, SQLite locked for good): every run, as their writes would fail
            self._halt(job.run.id if _answers(self.store) else None)
            return
        except Exception as exc:  # a bug, not the agent: this run fails, resumable
            self.errors.setdefault(job.run.id,
                                   clean_error(job.agent, f"{type(exc).__name__}: {exc}"))
            self._halt(job.run.id)
            return
        if cell is not None and self.progress:
            self.progress(job.run.id, cell)

    def _interrupted(self) -> None:
        """Ctrl-C: nothing more is sent; the helpers' cells are stored first, then every run
        reads interrupted (a helper's own runs are left to its main process)."""
        self._halt()
        for pool in self.pools:
            pool.shutdown(wait=False, cancel_futures=True)
        _wait_helpers(self.helpers, self.halted)  # Ctrl-C reached them too: their cells first
        if self.shard is None:
            for job in self.jobs:
                _finish(self.store, job.run.id, RunState.INTERRUPTED, "stopped by Ctrl-C")

    def _wind_up(self) -> None:
        """Every pool drained and every helper waited for (a helper's share is stopped with
        this process's: a lost lease, a lost store, a bug); what each helper's exit status
        says of its run."""
        for pool in self.pools:
            pool.shutdown(wait=True, cancel_futures=True)
        self.ended += _wait_helpers(self.helpers, self.halted)
        for run_id, code, words in self.ended:
            if code == sharding.TAKEN:
                self.taken.add(run_id)
            elif code == sharding.STORE_LOST:
                self.lost.setdefault(run_id, "the store could not be used (the run's second "
                                             "process)")
            elif code < 0:  # killed (kill -9, out of memory): its cells are left to resume
                self.lost.setdefault(run_id, f"the run's second process was killed (signal "
                                             f"{-code})")
            elif code != sharding.OK:
                self.errors.setdefault(run_id, f"the run's second process failed: {words}")

    def _statuses(self) -> dict[int, str]:
        """Each run's final status, set in the store (a helper only says what became of its
        share: its errors on stderr, for its main process's log)."""
        if self.shard is not None:
            for error in self.errors.values():
                print(error, file=sys.stderr, flush=True)
            return {job.run.id: TAKEN_OVER if job.run.id in self.taken else RunState.FAILED
                    if job.run.id in self.errors else "lost" if job.run.id in self.lost
                    else RunState.DONE for job in self.jobs}
        return {job.run.id: self._final(job.run) for job in self.jobs}

    def _final(self, run: Run) -> str:
        run_id = run.id
        if run_id in self.taken:  # another process holds the run now: its status is theirs
            return TAKEN_OVER
        left = len(missing_cells(self.store, run))
        if run_id in self.errors:
            status, error = RunState.FAILED, self.errors[run_id]
        elif left:
            why = f"{self.lost[run_id]}; " if run_id in self.lost else ""
            status, error = RunState.INTERRUPTED, f"{why}{left} cell(s) not run"
        else:
            harness = self.store.count_cells(run_id, "harness_error")
            status = RunState.DONE
            error = (f"{harness} cell(s) hit a harness error (see their errors)"
                     if harness else None)
        return status if _finish(self.store, run_id, status, error) else TAKEN_OVER


def _answers(store: Store) -> bool:
    """The store answers a read now (on PostgreSQL a fresh connection from the pool, which
    pings what it hands out): a write that failed lost its connection, not the store."""
    try:
        store.schema_version()
    except StoreError:
        return False
    return True


def _start_helper(store: Store, job: Job, cells: int, progress: ProgressFn | None
                  ) -> sharding.Helper | None:
    """The second process of ``job``'s run, started when the run is to be split
    (exam/pipeline/shard.py); None when it runs here alone."""
    lease = store.lease_of(job.run.id)
    if sharding.processes_for(job.agent, cells, lease is not None, store.backend) < 2:
        return None
    assert lease is not None  # processes_for splits only a run held under a lease
    try:
        helper = sharding.Helper(store.target, job, *lease, progress)
    except OSError as exc:  # no second process here: this one runs them all
        log.warning("run %s: cannot start a second process (%s); running its cells in "
                    "this one", job.run.id, exc)
        return None
    log.info("run %s: a second process (pid %s) runs half of its %d cells, at concurrency "
             "%d; this one the rest at %d", job.run.id, helper.proc.pid, cells,
             helper.concurrency, job.agent.concurrency - helper.concurrency)
    return helper


def _wait_helpers(helpers: dict, halted: dict[int, threading.Event]
                  ) -> list[tuple[int, int, str]]:
    """Wait for each run's helper process (told to stop first when its run was stopped): (run
    id, exit status, its last words) of each, once; a run's status is set only after its
    helper has stored what it sent."""
    out = []
    for run_id, helper in list(helpers.items()):
        if halted[run_id].is_set():
            helper.stop()
        code = helper.wait()
        out.append((run_id, code, helper.last_words()))
        del helpers[run_id]
    return out


def _finish(store: Store, run_id: int, status: str, error: str | None) -> bool:
    """Set a run's final status; False when another process took the run over meanwhile (its
    status is theirs to set)."""
    try:
        store.set_run_status(run_id, status, error)
    except LeaseLost as exc:
        log.warning("run %s: %s", run_id, exc)
        return False
    return True
