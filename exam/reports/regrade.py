"""Re-grade stored replies with today's grader and bank: one rubric across every version.

Every report starts here. A cell whose question changed since it was run is flagged
(``changed``), a question no longer in the bank is counted as ``removed``; neither is
silently mixed with the others. A run whose bank file is gone (moved, deleted) or no longer
loads is left out and listed in ``missing_banks``: every report says so and shows the rest.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields, replace

from exam import review
from exam.bank import Bank, Item, load_bank
from exam.errors import BankError
from exam.grading.keys import checks_json, question_key, questions_key, reply_key, rules_key
from exam.grading.stored import replies_of
from exam.records import CellRow, RunState
from exam.reports import graded_runs
from exam.reports.graded_runs import LazyChecks
from exam.review import reply_digest
from exam.store import Run, Store
from graders import CheckResult, Question, Reply, grade

grading = sys.modules["graders.grade"]  # the module (the package exports its function as grade)


@dataclass(frozen=True, slots=True)
class GradedCell:
    run_id: int
    agent: str
    version: str
    case_no: str
    category: str
    severity: str
    repeat: int
    run_status: str
    verdict: str | None  # None when the reply never arrived as ok
    checks: tuple[CheckResult, ...]  # from a kept run: a LazyChecks, equal to the tuple
    attempts: int
    model_calls: int | None
    tokens: int | None
    latency_ms: float | None
    error: str
    changed: bool  # the question's rubric changed since this cell was run
    text: str | None = None  # kept for needs_human cells always; others unless graded in parallel
    reviewed: bool = False  # a person's stored decision set (part of) this verdict
    reply_digest: str = ""  # what review decisions are keyed by
    tokens_estimated: bool = False  # the tokens are n8n's estimate, not the provider's count
    usage_note: str = ""  # where model calls and tokens came from, or why they are unknown

    def as_dict(self, shared: dict[str, list[dict]] | None = None) -> dict:
        """The cell as the reports' dict. ``shared``: checks decoded from the same stored JSON
        are one list (identical replies to a question grade alike; a report of 10,000 cells
        decoded and escaped the same checks thousands of times): readers must not change it."""
        checks = self.checks
        if isinstance(checks, graded_runs.LazyChecks):
            dicts = None if shared is None else shared.get(checks.raw)
            if dicts is None:
                dicts = checks.as_dicts()
                if shared is not None:
                    shared[checks.raw] = dicts
        else:
            dicts = [c.as_dict() for c in checks]
        return {
            "run_id": self.run_id, "repeat": self.repeat, "run_status": self.run_status,
            "verdict": self.verdict, "attempts": self.attempts, "model_calls": self.model_calls,
            "tokens": self.tokens, "tokens_estimated": self.tokens_estimated,
            "usage_note": self.usage_note, "latency_ms": self.latency_ms, "error": self.error,
            "changed_since_run": self.changed, "reviewed": self.reviewed,
            "checks": dicts,
        }


@dataclass
class Regraded:
    cells: list[GradedCell]
    banks: dict[str, Bank]
    runs: list[Run]
    removed: dict[int, list[str]] = field(default_factory=dict)  # run id → case_nos gone
    # runs left out because their bank cannot be loaded: {run_id, agent, version, bank_path,
    # cells, message}
    missing_banks: list[dict] = field(default_factory=list)
    # run id → the bank's rubric when the run was made (exam.bank.rubric.snapshot); none for runs
    # made before schema 12
    run_banks: dict[int, dict] = field(default_factory=dict)
    # the store they were read from, open while the report is built: a compare re-reads the
    # replies of a question whose rubric changed since the old version ran (rubric_drift)
    store: Store | None = field(default=None, repr=False, compare=False)
    # read before the cells: each run's cells mark and, per agent, the mark of the review
    # decisions that could apply to its cells (``decisions_marks``), which what a report
    # keeps is keyed by (exam/reports/changes.py). Read first, a change made while the cells
    # were read gives a later reader another key, never this one
    marks: dict[int, tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    decisions_marks: dict[str, tuple] | None = field(default=None, repr=False, compare=False)

    def bank_digests(self) -> dict[str, str]:
        return {b.agent: b.digest for b in self.banks.values()}


PARALLEL_MIN = 20_000  # below this, starting processes costs more than it saves


def _grades(store: Store, pending: list[tuple[Question, Reply, Mapping[str, float], str, str]],
            use_cache: bool, read_cache: bool = True) -> list[tuple[str | None, LazyChecks]]:
    """(verdict, checks) of each pending reply: from the cache, else graded (and cached).

    The checks come as their JSON line (``LazyChecks``, decoded on first use; equal lines
    share one): most are never read, and the line is what a kept run and a worker process
    pass on.
    """
    rules = rules_key()
    keys = [(rk, qk) for _, _, _, rk, qk in pending]
    cached = store.cached_grades(rules, keys) if use_cache and read_cache and keys else {}
    known: dict[tuple[str, str], tuple[str | None, LazyChecks]] = {}
    lines: dict[str, LazyChecks] = {}
    new: list[tuple[str, str, str, str]] = []
    out = []
    for (question, reply, budget, rk, qk), key in zip(pending, keys, strict=True):
        got = known.get(key) if use_cache else None  # without the cache: each one afresh
        if got is None:
            hit = cached.get(key)
            if hit is not None:
                checks = lines.get(hit[1])
                if checks is None:
                    checks = lines[hit[1]] = LazyChecks(hit[1])
                got = (hit[0], checks)
            else:
                g = grade(question, reply, budget=budget)
                line = checks_json(g.checks)
                checks = lines.get(line)
                if checks is None:
                    checks = lines[line] = LazyChecks(line, g.checks)
                got = (g.verdict, checks)
                new.append((rk, qk, g.verdict or "", line))
            known[key] = got
        out.append(got)
    if use_cache and new:
        store.cache_grades(rules, new)
    return out


def _graded(store: Store, by_id: dict[int, Run], items: dict[str, dict[str, Item]],
            cells: Sequence[CellRow], keep_text: bool = True, use_cache: bool = True,
            read_cache: bool = True
            ) -> tuple[list[GradedCell], dict[int, list[str]]]:
    """Grade cells with today's bank (review decisions are applied afterwards).

    A reply that arrived as ok is graded once per (rules, question, reply): the grade is read
    from the store's grade cache when there, else graded and added to it.
    """

    out: list[GradedCell] = []
    removed: dict[int, list[str]] = {}
    todo: list[tuple[CellRow, Run, Item]] = []
    arrived: list[tuple[Run, CellRow, Item]] = []
    for cell in cells:
        run = by_id[cell.run_id]
        item = items[run.bank_path].get(cell.case_no)
        if item is None:
            if cell.case_no not in removed.setdefault(run.id, []):
                removed[run.id].append(cell.case_no)
            continue
        todo.append((cell, run, item))
        if cell.run_status == "ok":
            arrived.append((run, cell, item))
    pending = []
    qkeys: dict[int, str] = {}  # by id(item): one key per question, not one per cell
    for (run, _cell, item), reply in zip(arrived, replies_of(store, arrived), strict=True):
        budget = run.settings.get("budget") or {}
        qk = qkeys.get(id(item))
        if qk is None:
            qk = qkeys[id(item)] = question_key(item)
        pending.append((item.question, reply, budget, reply_key(reply, budget), qk))
    grades = iter(_grades(store, pending, use_cache, read_cache))
    for cell, run, item in todo:
        # a reply that never arrived as ok has no checks to run (grade() says the same)
        verdict, checks = next(grades) if cell.run_status == "ok" else (None, ())
        # positional, in GradedCell's order (100,000 cells: keywords cost more than the rest)
        out.append(GradedCell(
            run.id, run.agent, run.version, cell.case_no, item.category,
            item.question.severity, cell.repeat, cell.run_status, verdict, checks,
            cell.attempts, cell.model_calls, cell.tokens, cell.latency_ms, cell.error,
            cell.question_digest != item.digest,
            cell.text if keep_text or verdict == "needs_human" else None, False,
            reply_digest(cell.text), cell.tokens_estimated, cell.usage_note))
    return out, removed


_FIELDS = tuple(f.name for f in fields(GradedCell))
_CHECKS = _FIELDS.index("checks")


def _pack(c: GradedCell) -> tuple:
    """A cell as plain values, its checks as their JSON line (cheap to pickle)."""
    values = [getattr(c, f) for f in _FIELDS]
    values[_CHECKS] = graded_runs.checks_line(c.checks, {})
    return tuple(values)


def _unpack(t: tuple, lines: dict[str, LazyChecks]) -> GradedCell:
    """A packed cell; equal lines of checks share one ``LazyChecks``."""
    values = list(t)
    checks = lines.get(t[_CHECKS])
    if checks is None:
        checks = lines[t[_CHECKS]] = LazyChecks(t[_CHECKS])
    values[_CHECKS] = checks
    return GradedCell(*values)


def _graded_part(args: tuple[str, dict[int, Run], dict[str, dict[str, Item]], tuple[int, int],
                                bool]):
    """In a child process: open the store, load one rowid range of cells, grade it (reading
    and filling the grade cache, as the serial path does) by the questions the report loaded
    (a bank file edited meanwhile is not read: the report's digests and kept runs are of the
    bank as loaded)."""
    path, runs, items, rowids, use_cache = args
    store = Store(path)
    try:
        # reply texts stay behind, and plain tuples travel back: pickling 100,000 frozen
        # dataclasses costs about as much as grading them
        cells, removed = _graded(store, runs, items, store.cells(list(runs), rowids),
                                 keep_text=False, use_cache=use_cache)
        return [_pack(c) for c in cells], removed
    finally:
        store.close()


def _graded_parallel(store: Store, by_id: dict[int, Run], items: dict[str, dict[str, Item]],
                     use_cache: bool = True):
    """The same as _graded over every cell, on every core; None when not worth it."""
    cores = os.cpu_count() or 1
    n, lo, hi = store.cell_rowids(list(by_id))
    if cores < 2 or n < PARALLEL_MIN or store.path == ":memory:" or \
            "fork" not in multiprocessing.get_all_start_methods():
        return None
    step = -(-(hi + 1 - lo) // (cores * 2))
    mine = {r.bank_path: items[r.bank_path] for r in by_id.values()}
    parts = [(store.target, by_id, mine, (a, min(a + step, hi + 1)), use_cache)
             for a in range(lo, hi + 1, step)]
    with ProcessPoolExecutor(max_workers=cores,
                             mp_context=multiprocessing.get_context("fork")) as pool:
        results = list(pool.map(_graded_part, parts))
    lines: dict[str, LazyChecks] = {}
    return _merged([([_unpack(t, lines) for t in part], rem) for part, rem in results])


CHUNK_CELLS = 2_000  # the chunked path reads this many rowids at a time: memory stays flat


def _graded_chunked(store: Store, by_id: dict[int, Run], items: dict[str, dict[str, Item]],
                    use_cache: bool):
    """The same as _graded_parallel, in this process, a rowid range at a time, no texts kept:
    for a store whose grades are cached (nothing left to share out), or too few cells to
    share out (the scorecard that ends an ``exam run``: its cells' texts are never all held
    at once)."""
    ids = list(by_id)
    _, lo, hi = store.cell_rowids(ids)
    return _merged([_graded(store, by_id, items, store.cells(ids, (a, min(a + CHUNK_CELLS, hi + 1))),
                            keep_text=False, use_cache=use_cache)
                    for a in range(lo, hi + 1, CHUNK_CELLS)])


def _merged(results: list[tuple[list[GradedCell], dict[int, list[str]]]]):
    cells = [c for part, _ in results for c in part]
    cells.sort(key=lambda c: (c.run_id, c.case_no, c.repeat))
    removed: dict[int, list[str]] = {}
    for _, rem in results:
        for run_id, cases in rem.items():
            for case in cases:
                if case not in removed.setdefault(run_id, []):
                    removed[run_id].append(case)
    return cells, removed


def _with_served(served: Mapping[int, tuple[list[GradedCell], list[str]]],
                 cells: list[GradedCell], removed: dict[int, list[str]]):
    """Kept runs' cells merged with freshly graded ones, in run, case and repeat order."""
    by_run: dict[int, list[GradedCell]] = {i: part for i, (part, _) in served.items()}
    for c in cells:  # already in order within each run
        by_run.setdefault(c.run_id, []).append(c)
    removed = dict(removed)
    for i, (_, gone) in served.items():
        if gone:
            removed[i] = list(gone)
    return [c for i in sorted(by_run) for c in by_run[i]], removed


def _headed_part(args: tuple, store: Store | None = None) -> dict[int, str]:
    """Grade whole runs (the grade cache underneath), keep each finished one and return every
    run's head; in a child process (opening the store) or in this one (``store``)."""
    target, runs, items, keys, rules, read_cache = args
    own = store is None
    store = Store(target) if store is None else store
    try:
        cells, removed = _graded(store, runs, items, store.cells(list(runs)), keep_text=False,
                                 read_cache=read_cache)
        return graded_runs.keep(store, runs, keys, rules, cells, removed, heads=True)
    finally:
        if own:
            store.close()


def graded_heads(store: Store, runs: Sequence[Run], banks: Mapping[str, Bank], *,
                 parallel: bool = False) -> dict[int, str]:
    """The head of each run's graded cells (``graded_runs.encode``), grading them (review
    decisions not applied) and keeping the finished runs: for a report that reads counts.

    Each process grades whole runs and keeps them itself; only the heads come back. With
    ``parallel``, on every core (when worth it: as ``regrade``); else one run at a time.
    """
    by_id = {r.id: r for r in runs}
    items = {path: bank.by_case() for path, bank in banks.items()}
    rules = rules_key()
    marks = store.cell_marks(list(by_id))
    keys = graded_runs.run_keys(store, by_id, {p: questions_key(b) for p, b in banks.items()},
                                rules, marks)

    def part(ids: list[int], read_cache: bool = True) -> tuple:
        mine = {i: by_id[i] for i in ids}
        return (store.target, mine, {by_id[i].bank_path: items[by_id[i].bank_path] for i in ids},
                {i: keys[i] for i in ids}, rules, read_cache)

    cores = os.cpu_count() or 1
    total = sum(n for n, _ in marks.values())
    share = None
    if parallel and cores >= 2 and total >= PARALLEL_MIN and store.path != ":memory:" and \
            "fork" in multiprocessing.get_all_start_methods():
        share = _cached_share(store, by_id, items)
    if share is not None and share < 0.9:
        # whole runs, largest first, each to the part with the fewest cells so far; parts of
        # about CHUNK_CELLS cells (at least one per core): a worker holds one part's cells at
        # a time, so memory stays flat however large the store
        count = min(len(by_id), max(cores, -(-total // CHUNK_CELLS)))
        shares: list[list[int]] = [[] for _ in range(count)]
        sizes = [0] * len(shares)
        for i in sorted(by_id, key=lambda i: -marks[i][0]):
            k = sizes.index(min(sizes))
            shares[k].append(i)
            sizes[k] += marks[i][0]
        with ProcessPoolExecutor(max_workers=cores,
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            # a cache in which the sample found nothing is not read (its lookups would cost
            # more than the few grades they might find; every grade is still added to it)
            results = list(pool.map(_headed_part, [part(sorted(ids), share > 0)
                                                   for ids in shares]))
    else:  # one run at a time: only one run's cells are held
        results = [_headed_part(part([i]), store) for i in sorted(by_id)]
    return {i: head for heads in results for i, head in heads.items()}


PROBE_WINDOWS, PROBE_CELLS = 4, 64  # cells sampled, evenly over the store, before going parallel


def _mostly_cached(store: Store, by_id: dict[int, Run], items: dict[str, dict[str, Item]]
                   ) -> bool:
    """Whether at least 90% of a sample of the cells' grades are in the cache."""
    share = _cached_share(store, by_id, items)
    return share is not None and share >= 0.9


def _cached_share(store: Store, by_id: dict[int, Run], items: dict[str, dict[str, Item]]
                  ) -> float | None:
    """The share of a sample of the cells' grades found in the cache; None for a store too
    small to share out, or a sample with nothing to grade."""
    n, lo, hi = store.cell_rowids(list(by_id))
    if n < PARALLEL_MIN:
        return None  # the parallel path would not be taken anyway
    keys = []
    for w in range(PROBE_WINDOWS):
        start = lo + (hi - lo) * w // PROBE_WINDOWS
        arrived = []
        for cell in store.cells(list(by_id), (start, start + PROBE_CELLS)):
            run = by_id[cell.run_id]
            item = items[run.bank_path].get(cell.case_no)
            if item is not None and cell.run_status == "ok":
                arrived.append((run, cell, item))
        for (run, _cell, item), reply in zip(arrived, replies_of(store, arrived), strict=True):
            keys.append((reply_key(reply, run.settings.get("budget") or {}),
                         question_key(item)))
    if not keys:
        return None
    found = store.cached_grades(rules_key(), keys)
    return sum(k in found for k in keys) / len(keys)  # equal replies share one key


def regrade(store: Store, runs: Sequence[Run], *, parallel: bool = False,
            cache: bool = True, texts: bool | None = None, open_only: bool = False,
            case_no: str | None = None) -> Regraded:
    """Re-grade every stored cell of ``runs`` with today's bank and grader.

    ``parallel`` grades large stores on every core, each process loading its own share of
    the cells from SQLite: for the CLI reports, not for a threaded server, and not where the
    reply texts of passing cells are needed (review spot checks). ``texts``: keep every
    reply's text (default: unless ``parallel``); without them, a kept run is read without
    its cells' texts (needs_human replies keep theirs). ``cache=False`` grades every reply
    afresh and leaves the grade cache alone (the tests compare the two). ``open_only``: of a
    kept run, only the questions with a cell that needs a person (the review queue: a year of
    history has few, and no other cell is decoded); other runs are graded whole. ``case_no``:
    of a kept run, that question's cells alone (the question page); others hold every cell.
    """

    keep_text = not parallel if texts is None else texts
    marks = store.cell_marks([r.id for r in runs])
    banks, missing = load_banks(store, runs)
    runs = [r for r in runs if r.bank_path in banks]
    marked = decisions_marks(store, runs, banks)  # before the decisions are read
    by_id = {r.id: r for r in runs}
    items = {path: bank.by_case() for path, bank in banks.items()}
    rules = rules_key()
    served: dict[int, tuple[list[GradedCell], list[str]]] = {}
    keys: dict[int, str] = {}
    if cache and by_id:
        # finished runs whose graded cells are kept under today's key: one row each
        kept, keys = graded_runs.read(store, by_id, {p: questions_key(b) for p, b in banks.items()},
                                      items, rules, keep_text=keep_text,
                                      wanted=graded_runs.open_questions if open_only else None,
                                      case_no=case_no)
        served = {i: ([GradedCell(*t) for t in rows], gone) for i, (rows, gone) in kept.items()}
    rest = {i: r for i, r in by_id.items() if i not in served}
    done = None
    if parallel and rest:
        # with (nearly) every grade cached, there is too little grading left to share out
        if cache and _mostly_cached(store, rest, items):
            done = _graded_chunked(store, rest, items, cache)
        else:
            done = _graded_parallel(store, rest, items, cache)
        if done is None and not keep_text:  # too few cells to share out: a range at a time
            done = _graded_chunked(store, rest, items, cache)
    if done is None:
        done = _graded(store, rest, items, store.cells(list(rest)), keep_text=keep_text,
                       use_cache=cache) if rest else ([], {})
    cells, removed = done
    if cache and rest:
        graded_runs.keep(store, rest, keys, rules, cells, removed)
    if served:
        cells, removed = _with_served(served, cells, removed)
    decisions = review.index(store.adjudications())
    if decisions:
        digests = {(path, i.case_no): i.digest for path, b in banks.items() for i in b.items}
        decided = {key[0] for key in decisions}  # reply digests: the other cells stay as they are
        for n, c in enumerate(cells):
            if c.reply_digest not in decided:
                continue
            checks, verdict, reviewed = review.apply(
                c.checks, c.verdict, c.reply_digest,
                digests[(by_id[c.run_id].bank_path, c.case_no)], decisions)
            if reviewed:
                cells[n] = replace(c, checks=checks, verdict=verdict, reviewed=True)
    return Regraded(cells, banks, list(runs), removed, missing,
                    store.run_banks([r.id for r in runs]), store, marks, marked)


def decisions_marks(store: Store, runs: Sequence[Run], banks: Mapping[str, Bank]
                    ) -> dict[str, tuple]:
    """Per agent, the mark of the review decisions that could apply to its runs' cells: those
    on a question of today's bank of one of its runs (a decision applies only where the
    question's digest is the one it was made on: exam/review.py). A reviewer deciding one
    agent's replies leaves what is kept of the other agents' reports as it is."""
    paths: dict[str, dict[str, Bank]] = {}
    for r in runs:
        if r.bank_path in banks:
            paths.setdefault(r.agent, {})[r.bank_path] = banks[r.bank_path]
    return {agent: store.adjudications_mark(question_digests(of_agent))
            for agent, of_agent in sorted(paths.items())}


def question_digests(banks: Mapping[str, Bank]) -> set[str]:
    """Every question's digest in these banks: what decisions on them are marked by."""
    return {i.digest for bank in banks.values() for i in bank.items}


def _todays_bank(path: str) -> Bank:
    """The bank file as it is now: read every time, parsed and validated once per content
    (a service answers many reports from the same bank; validation is most of a small
    report's time)."""
    return load_bank(path)


def load_banks(store: Store, runs: Sequence[Run]) -> tuple[dict[str, Bank], list[dict]]:
    """Today's bank of every run, by path; and a note for each run whose bank won't load."""
    banks: dict[str, Bank] = {}
    problems: dict[str, BankError] = {}
    for path in dict.fromkeys(r.bank_path for r in runs):
        try:
            banks[path] = _todays_bank(path)
        except BankError as exc:
            problems[path] = exc
    missing = []
    for r in sorted(runs, key=lambda r: r.id):
        exc = problems.get(r.bank_path)
        if exc is None:
            continue
        first = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more problem(s))" if len(exc.problems) > 1 else ""
        why = (f"its bank {r.bank_path} is missing (moved or deleted?)"
               if first.message == "no such file" else f"its bank cannot be loaded: {first}{more}")
        cells = store.count_cells(r.id)
        missing.append({"run_id": r.id, "agent": r.agent, "version": r.version,
                        "bank_path": r.bank_path, "cells": cells,
                        "message": f"run {r.id} ({r.agent} {r.version}): {why}; its {cells} "
                                   "stored cell(s) are left out of this report"})
    return banks, missing


def outcome(store: Store, run: Run, counts: Mapping[str, int] | None = None) -> str:
    """What `exam runs` shows: the run's status, or excluded / blocked / incomplete when
    it finished without every cell arriving (``counts``: its ``status_counts``, if read)."""
    if run.excluded_reason:
        return "excluded"
    status = run.shown_status
    if status != RunState.DONE:
        return status
    if counts is None:
        counts = store.status_counts(run.id)
    arrived = sum(counts.values())
    if counts.get("blocked") and counts["blocked"] == arrived:
        return "blocked"
    if arrived < run.total_cells or any(k != "ok" for k in counts):
        return "incomplete"
    return status
