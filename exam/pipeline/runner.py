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
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

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
               only: Sequence[str] = (), category: str | None = None, status: str = RunState.RUNNING,
               source: str = "cli") -> int:
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
                            settings=agent.settings(), status=status, source=source,
                            bank=rubric.snapshot(bank))


def queue_run(store: Store, agent: Agent, version: str, *, repeats: int = 1,
              only: Sequence[str] = (), source: str = "api") -> int:
    """A run for a worker to execute: the API and LINE commands start runs this way."""
    return create_run(store, agent, version, repeats=repeats, only=only, status=RunState.QUEUED,
                      source=source)


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
    stop = stop or threading.Event()
    jobs = list(jobs)
    # each run's own stop; one run alone uses the caller's (nothing to tell apart)
    halted = {job.run.id: stop if len(jobs) == 1 else threading.Event() for job in jobs}
    pools: list[ThreadPoolExecutor] = []
    futures: dict[Future, Job] = {}
    errors: dict[int, str] = {}
    lost: dict[int, str] = {}  # runs stopped because the store went away: resumable, not failed
    taken: set[int] = set()  # runs another process took over (LeaseLost): theirs now
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()

    def guarded(job: Job, case_no: str, repeat: int, gate: RequestGate) -> CellRow | None:
        if halted[job.run.id].is_set():
            return None
        return run_cell(store, job, case_no, repeat, gate)

    todo: dict[int, tuple[ThreadPoolExecutor, RequestGate, Iterator[tuple[str, int]]]] = {}
    helpers: dict[int, sharding.Helper] = {}
    for job in jobs:
        cells = missing_cells(store, job.run)
        concurrency = job.agent.concurrency
        shard_here = shard
        if shard is None:
            store.set_run_status(job.run.id, RunState.RUNNING)
            helper = _start_helper(store, job, len(cells), progress)
            if helper is not None:
                helpers[job.run.id] = helper
                concurrency -= helper.concurrency
                shard_here = (0, 2)
        if shard_here is not None:
            cells = [(c, r) for c, r in cells if sharding.shard_of(c, r, shard_here[1])
                     == shard_here[0]]
        gate = RequestGate(concurrency, job.agent.min_interval_s, halted[job.run.id])
        pool = ThreadPoolExecutor(max_workers=pool_threads(concurrency),
                                  thread_name_prefix=f"exam-{job.agent.name}")
        pools.append(pool)
        todo[job.run.id] = (pool, gate, iter(cells))

    def halt(run_id: int | None = None) -> None:
        """Stop taking cells of one run (None: of every run), here and in its helper (its share
        stops now, not at the end)."""
        if run_id is None:
            stop.set()
        for rid, event in halted.items():
            if run_id is None or rid == run_id:
                event.set()
                if rid in helpers:
                    helpers[rid].stop()

    def check_helpers() -> None:
        """A helper that failed (a bug, a crash at start) fails its run now, not once this
        process has run its own share. One killed (out of memory) leaves its cells to
        resume: this process goes on with its share."""
        for rid, helper in helpers.items():
            code = helper.proc.poll()
            if code is not None and code > 0 and not halted[rid].is_set() and code not in (
                    sharding.TAKEN, sharding.STORE_LOST):  # those two this process meets itself
                log.warning("run %s: its second process failed (exit status %s): the run stops",
                            rid, code)
                halt(rid)

    def submit(job: Job) -> None:
        """Hand the job's next cell to its pool, if it has one left and nothing said stop."""
        pool, gate, cells = todo[job.run.id]
        cell = None if halted[job.run.id].is_set() else next(cells, None)
        if cell is not None:
            fut = pool.submit(guarded, job, *cell, gate)
            futures[fut] = job
            fut.add_done_callback(finished.put)

    ended: list[tuple[int, int, str]] = []  # (run id, exit status, last words) of each helper
    # a few cells per thread are queued at a time, the next one as one finishes: 10,000 cells
    # submitted at once held 10,000 futures (~15 MB) until they ran
    for job in jobs:
        for _ in range(QUEUED_PER_THREAD * pool_threads(job.agent.concurrency)):
            submit(job)
    try:
        # each finished cell is handed over once: waiting on the set of pending futures would
        # walk all of them at every completion (10,000 cells: seconds of the main thread's CPU)
        unlooked = 0  # cells handed over since the helpers were last looked at
        while futures:
            if stop.is_set() and not all(e.is_set() for e in halted.values()):
                halt()  # the caller's stop: every run's (once: it signals the helpers)
            if helpers and unlooked % 64 == 0:  # every 64 cells, and whenever none came
                check_helpers()
            try:
                fut = finished.get(timeout=0.5)
            except queue.Empty:
                unlooked = 0
                continue
            unlooked += 1
            job = futures.pop(fut)  # a finished cell is let go: memory stays flat however many
            submit(job)
            try:
                cell = fut.result()
            except Stopped:  # told to stop while it waited for a slot: never sent, run later
                continue
            except LeaseLost as exc:  # another process took the run over: it runs the rest
                log.warning("run %s: %s", job.run.id, exc)
                taken.add(job.run.id)
                halt(job.run.id)
                continue
            except StoreUnavailable as exc:  # this run stops, resumable
                lost.setdefault(job.run.id, f"the store could not be used: {exc}")
                # one connection dropped (a backend ended, a socket reset): the store still
                # answers, so only the runs whose cells were on it stop; gone (PostgreSQL
                # restarting, SQLite locked for good): every run, as their writes would fail
                halt(job.run.id if _answers(store) else None)
                continue
            except Exception as exc:  # a bug, not the agent: this run fails, resumable
                errors.setdefault(job.run.id,
                                  clean_error(job.agent, f"{type(exc).__name__}: {exc}"))
                halt(job.run.id)
                continue
            if cell is not None and progress:
                progress(job.run.id, cell)
        # inside the try: Ctrl-C while this process waits for its helpers' share is an
        # interruption like any other (the runs read interrupted at once, not at the lease's end)
        ended += _wait_helpers(helpers, halted)
    except KeyboardInterrupt:
        halt()
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        _wait_helpers(helpers, halted)  # Ctrl-C reached them too: their cells first
        if shard is None:
            for job in jobs:
                _finish(store, job.run.id, RunState.INTERRUPTED, "stopped by Ctrl-C")
        raise Interrupted() from None
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
        # a helper's share is stopped with this process's (a lost lease, a lost store, a bug)
        ended += _wait_helpers(helpers, halted)
        for run_id, code, words in ended:
            if code == sharding.TAKEN:
                taken.add(run_id)
            elif code == sharding.STORE_LOST:
                lost.setdefault(run_id, "the store could not be used (the run's second "
                                        "process)")
            elif code < 0:  # killed (kill -9, out of memory): its cells are left to resume
                lost.setdefault(run_id, f"the run's second process was killed (signal "
                                        f"{-code})")
            elif code != sharding.OK:
                errors.setdefault(run_id, f"the run's second process failed: {words}")
    if shard is not None:
        for error in errors.values():
            print(error, file=sys.stderr, flush=True)
        return {job.run.id: TAKEN_OVER if job.run.id in taken else RunState.FAILED
                if job.run.id in errors else "lost" if job.run.id in lost else RunState.DONE
                for job in jobs}
    final = {}
    for job in jobs:
        if job.run.id in taken:  # another process holds the run now: its status is theirs
            final[job.run.id] = TAKEN_OVER
            continue
        left = len(missing_cells(store, job.run))
        if job.run.id in errors:
            status, error = RunState.FAILED, errors[job.run.id]
        elif left:
            why = f"{lost[job.run.id]}; " if job.run.id in lost else ""
            status, error = RunState.INTERRUPTED, f"{why}{left} cell(s) not run"
        else:
            harness = store.count_cells(job.run.id, "harness_error")
            status = RunState.DONE
            error = (f"{harness} cell(s) hit a harness error (see their errors)"
                     if harness else None)
        final[job.run.id] = status if _finish(store, job.run.id, status, error) else TAKEN_OVER
    return final


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
