"""Per-run, per-question counts: what discrimination's statistics read (issue 19).

Discrimination needs, for each question and version, how many cells, how many graded, how
many passed and whether any changed since run; and the cells themselves only for the few
questions whose failing checks it shows. A kept graded run (``graded_runs``) holds these
counts in its head, so ``tallied`` reads the heads and the shown questions' cells, never
building one object per cell. Runs not kept (or stale) are re-graded as every report does
(``regrade``), and so is every kept run with a question a person decided on: decisions are
applied on top of grades, and change the counts. ``from_regraded`` makes the same input from
a full re-grade, so both paths run the same statistics (the tests compare them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from exam.bank import Bank, Item
from exam.reports import graded_runs
from exam.reports import regrade as regrading  # regrading.regrade: read when called
from exam.reports.regrade import GradedCell, Regraded, load_banks, questions_key, rules_key
from exam.store import Run, Store

GRADED = graded_runs.GRADED


@dataclass(frozen=True, slots=True)
class Tally:
    """One run's cells of one question."""

    cells: int
    graded: int  # pass, fail or needs_human
    passes: int
    changed: bool  # any cell's question changed since it was run


@dataclass
class Tallied:
    """Counts by run and question, and the cells of any question on request."""

    runs: list[Run]
    banks: dict[str, Bank]
    missing_banks: list[dict]
    # run id → case → Tally, runs in the order their cells come (run id), cases in run order
    tallies: dict[int, dict[str, Tally]]
    items: dict[str, dict[str, Item]]  # bank path → case → today's question
    _cells: dict[tuple[int, str], list[GradedCell]] = field(default_factory=dict)
    _heads: dict[int, graded_runs.Head] = field(default_factory=dict)
    _store: Store | None = None

    def bank_digests(self) -> dict[str, str]:
        return {b.agent: b.digest for b in self.banks.values()}

    def cells(self, wanted: Iterable[tuple[int, str]]) -> dict[tuple[int, str], list[GradedCell]]:
        """The graded cells (decisions applied) of each (run id, case), in run order; the
        kept ones decoded from their blocks alone."""
        wanted = list(wanted)
        need: dict[int, list[str]] = {}
        for run_id, case_no in wanted:
            if (run_id, case_no) not in self._cells and run_id in self._heads:
                need.setdefault(run_id, []).append(case_no)
        by_id = {r.id: r for r in self.runs}
        for run_id, case_nos in need.items():
            assert self._store is not None
            run = by_id[run_id]
            blocks = graded_runs.read_blocks(self._store, run_id, self._heads[run_id], case_nos)
            if blocks is None:  # replaced since its head was read: grade it as any report
                full = regrading.regrade(self._store, [run], parallel=False)
                for c in full.cells:
                    self._cells.setdefault((run_id, c.case_no), []).append(c)
                for case_no in case_nos:
                    self._cells.setdefault((run_id, case_no), [])
                continue
            items = self.items[run.bank_path]
            for case_no, block in blocks.items():
                self._cells[(run_id, case_no)] = [
                    GradedCell(*t) for t in graded_runs.decode_block(block, run, case_no,
                                                                     items[case_no])]
        return {k: self._cells.get(k, []) for k in wanted}


def tally(cells: Iterable[GradedCell]) -> dict[int, dict[str, Tally]]:
    """Counts of graded cells by run and question, in the order the cells come."""
    raw: dict[int, dict[str, list]] = {}
    for c in cells:
        t = raw.setdefault(c.run_id, {}).get(c.case_no)
        if t is None:
            t = raw[c.run_id][c.case_no] = [0, 0, 0, False]
        t[0] += 1
        if c.verdict in GRADED:
            t[1] += 1
            t[2] += c.verdict == "pass"
        t[3] = t[3] or c.changed
    return {i: {case: Tally(*t) for case, t in by_case.items()} for i, by_case in raw.items()}


def from_regraded(regraded: Regraded) -> Tallied:
    """The counts of a full re-grade (its cells at hand)."""
    cells: dict[tuple[int, str], list[GradedCell]] = {}
    for c in regraded.cells:
        cells.setdefault((c.run_id, c.case_no), []).append(c)
    return Tallied(regraded.runs, regraded.banks, regraded.missing_banks,
                   tally(regraded.cells),
                   {path: bank.by_case() for path, bank in regraded.banks.items()}, cells)


def tallied(store: Store, runs: Sequence[Run], *, parallel: bool = False) -> Tallied:
    """The counts of ``runs`` with today's bank, grader and decisions: read from the kept
    runs' heads where they hold, else from a re-grade (``regrade``) of the other runs."""
    from exam import review

    banks, missing = load_banks(store, runs)
    runs = [r for r in runs if r.bank_path in banks]
    by_id = {r.id: r for r in runs}
    items = {path: bank.by_case() for path, bank in banks.items()}
    heads = graded_runs.read_heads(store, by_id, {p: questions_key(b) for p, b in banks.items()},
                                   rules_key()) if by_id else {}
    # a decision is keyed by the question's digest: a kept run with a decided question is read
    # whole, the decisions applied on top (its counts may differ from the kept ones)
    decided = {key[2] for key in review.index(store.adjudications())}
    if decided:
        heads = {i: h for i, h in heads.items()
                 if not any(items[by_id[i].bank_path][case].digest in decided
                            for case in h.questions)}
    rest = [r for r in runs if r.id not in heads]
    full = regrading.regrade(store, rest, parallel=parallel) if rest else None
    fresh = tally(full.cells) if full else {}
    tallies: dict[int, dict[str, Tally]] = {}
    for i in sorted(by_id):  # cells come in run order, as regrade's do
        if i in heads:
            tallies[i] = {case: Tally(*q[:4]) for case, q in heads[i].questions.items()}
        elif i in fresh:
            tallies[i] = fresh[i]
    cells: dict[tuple[int, str], list[GradedCell]] = {}
    for c in full.cells if full else ():
        cells.setdefault((c.run_id, c.case_no), []).append(c)
    return Tallied(runs, banks, missing, tallies, items, cells, heads, store)
