"""Per-run, per-question counts: what discrimination's statistics read (issue 19).

Discrimination needs, for each question and version, how many cells, how many graded, how
many passed and whether any changed since run; and, for the few questions it shows with
their failing checks, which checks fail (how often, the first one). A kept graded run
(``graded_runs``) holds all of these in its head, so ``tallied`` reads the heads alone and
never builds one object per cell. Runs not kept (or stale) are graded and kept first
(``regrade.graded_heads``); every run with a question a person decided on is read through
``regrade``, because decisions are applied on top of grades and change the counts.
``from_regraded`` makes the same input from a full re-grade, so both paths run the same
statistics (the tests compare them byte for byte).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from exam import review
from exam.bank import Bank, Item
from exam.grading.keys import questions_key, rules_key
from exam.reports import graded_runs
from exam.reports import regrade as regrading  # regrading.regrade: read when called
from exam.reports.regrade import GradedCell, Regraded, decisions_marks, load_banks
from exam.store import Run, Store
from graders.model import GRADED

Failing = tuple[tuple[str, int, dict], ...]  # (check, times failed, the first as a dict)


@dataclass(frozen=True, slots=True)
class CellCount:
    """One run's cells of one question."""

    cells: int
    graded: int  # pass, fail or needs_human
    passes: int
    changed: bool  # any cell's question changed since it was run
    fails: int
    answered: int  # cells whose reply arrived as ok
    # each check that failed or needs a person, in the order first seen; None: not counted
    # (from a re-grade, whose cells are at hand)
    failing: Failing | None = None

    @property
    def needs_human(self) -> int:
        return self.graded - self.passes - self.fails


@dataclass
class Tallied:
    """Counts by run and question; the failing checks of any question on request."""

    runs: list[Run]
    banks: dict[str, Bank]
    missing_banks: list[dict]
    # run id → case → CellCount, runs in the order their cells come (run id), cases in run order
    tallies: dict[int, dict[str, CellCount]]
    items: dict[str, dict[str, Item]]  # bank path → case → today's question
    cells: dict[tuple[int, str], list[GradedCell]] = field(default_factory=dict)  # re-graded
    # run id → COST figure → [p50, p95, how many cells report it]
    cost: dict[int, dict[str, list]] = field(default_factory=dict)
    # what the counts were read from, as ``Regraded`` says it (kept reports' keys read them:
    # exam/reports/changes.py)
    store: Store | None = field(default=None, repr=False, compare=False)
    marks: dict[int, tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    decisions_marks: dict[str, tuple] | None = field(default=None, repr=False, compare=False)
    # run id → COST figure → its values, sorted: from the cells at hand or the kept cost lines
    _values: dict[int, dict[str, list]] = field(default_factory=dict, repr=False)
    # kept runs: their key and where their cost line lies (``graded_runs.Head.tail``)
    kept: dict[int, tuple[str, tuple[int, int]]] = field(default_factory=dict, repr=False)

    def bank_digests(self) -> dict[str, str]:
        return {b.agent: b.digest for b in self.banks.values()}

    def cost_values(self, run_ids: Sequence[int]) -> dict[int, dict[str, list]]:
        """Each run's COST values, sorted (read from the store for kept runs not read yet)."""
        wanted = [i for i in run_ids if i not in self._values and i in self.kept]
        if wanted and self.store is not None:
            self._values.update(graded_runs.read_costs(
                self.store, {i: self.kept[i][0] for i in wanted},
                {i: self.kept[i][1] for i in wanted}))
        # a run not kept under the key read (its cells moved since): graded again for them
        rest = [r for r in self.runs if r.id in run_ids and r.id not in self._values
                and r.id in self.tallies]
        if rest and self.store is not None:
            self._values.update(_costs(regrading.regrade(self.store, rest, texts=False).cells))
        empty = {k: [] for k in graded_runs.COST}
        return {i: self._values.get(i, empty) for i in run_ids}

    def failing(self, run_id: int, case_no: str) -> Failing:
        """The failing checks of one run's cells of one question."""
        kept = self.tallies[run_id][case_no].failing
        return kept if kept is not None else failing_of(self.cells.get((run_id, case_no), ()))


def failing_of(cells: Iterable[GradedCell]) -> Failing:
    """Each check that failed or needs a person, how many times, and the first one."""
    times: dict[str, int] = {}
    first: dict[str, dict] = {}
    for c in cells:
        for chk in c.checks:
            if chk.outcome in graded_runs.FAILED:
                times[chk.name] = times.get(chk.name, 0) + 1
                if chk.name not in first:
                    first[chk.name] = chk.as_dict()
    return tuple((name, n, first[name]) for name, n in times.items())


def tally(cells: Iterable[GradedCell]) -> dict[int, dict[str, CellCount]]:
    """Counts of graded cells by run and question, in the order the cells come."""
    raw: dict[int, dict[str, list]] = {}
    for c in cells:
        t = raw.setdefault(c.run_id, {}).get(c.case_no)
        if t is None:
            t = raw[c.run_id][c.case_no] = [0, 0, 0, False, 0, 0]
        t[0] += 1
        if c.verdict in GRADED:
            t[1] += 1
            t[2] += c.verdict == "pass"
            t[4] += c.verdict == "fail"
        t[3] = t[3] or c.changed
        t[5] += c.run_status == "ok"
    return {i: {case: CellCount(*t) for case, t in by_case.items()} for i, by_case in raw.items()}


def _costs(cells: Iterable[GradedCell]) -> dict[int, dict[str, list]]:
    """Each run's COST values, sorted, from its cells."""
    by_run: dict[int, list[GradedCell]] = {}
    for c in cells:
        by_run.setdefault(c.run_id, []).append(c)
    return {i: graded_runs.cost_values(part) for i, part in by_run.items()}


def from_regraded(regraded: Regraded) -> Tallied:
    """The counts of a full re-grade (its cells at hand)."""
    cells: dict[tuple[int, str], list[GradedCell]] = {}
    for c in regraded.cells:
        cells.setdefault((c.run_id, c.case_no), []).append(c)
    values = _costs(regraded.cells)
    return Tallied(regraded.runs, regraded.banks, regraded.missing_banks,
                   tally(regraded.cells),
                   {path: bank.by_case() for path, bank in regraded.banks.items()}, cells,
                   {i: {k: graded_runs.cost_of(v) for k, v in vs.items()}
                    for i, vs in values.items()},
                   regraded.store, regraded.marks, regraded.decisions_marks, values)


def tallied(store: Store, runs: Sequence[Run], *, parallel: bool = False) -> Tallied:
    """The counts of ``runs`` with today's bank, grader and decisions: read from the kept
    runs' heads where they hold, else from a re-grade (``regrade``) of the other runs."""

    # read before the cells, as regrade reads them (a kept report's key is made of them)
    marks = store.cell_marks([r.id for r in runs])
    banks, missing = load_banks(store, runs)
    runs = [r for r in runs if r.bank_path in banks]
    marked = decisions_marks(store, runs, banks)
    by_id = {r.id: r for r in runs}
    items = {path: bank.by_case() for path, bank in banks.items()}
    questions = {p: questions_key(b) for p, b in banks.items()}
    rules = rules_key()
    heads = graded_runs.read_heads(store, by_id, questions, rules, marks) if by_id else {}
    rest = [r for r in runs if r.id not in heads]
    if rest:  # graded (each process keeping the finished runs), only their heads brought back
        heads.update({i: graded_runs.parse_head("", head) for i, head in
                      regrading.graded_heads(store, rest, banks, parallel=parallel).items()})
    # a decision is keyed by the question's digest: a run with a decided question is read
    # whole, the decisions applied on top (its counts may differ from the kept ones)
    decided = {key[2] for key in review.index(store.adjudications())}
    reviewed = [r for r in runs if decided and any(
        items[r.bank_path][case].digest in decided for case in heads[r.id].questions)]
    full = regrading.regrade(store, reviewed, parallel=parallel) if reviewed else None
    fresh = tally(full.cells) if full else {}
    values = _costs(full.cells) if full else {}
    reviewed_ids = {r.id for r in reviewed}
    tallies: dict[int, dict[str, CellCount]] = {}
    cost: dict[int, dict[str, list]] = {}
    for i in sorted(by_id):  # cells come in run order, as regrade's do
        if i in reviewed_ids:
            if i in fresh:
                tallies[i] = fresh[i]
                cost[i] = {k: graded_runs.cost_of(v) for k, v in values[i].items()}
        elif heads[i].questions:
            tallies[i] = {case: CellCount(*q[:4], q[7], q[8], tuple(map(tuple, q[6])))
                          for case, q in heads[i].questions.items()}
            cost[i] = heads[i].cost
    cells: dict[tuple[int, str], list[GradedCell]] = {}
    for c in full.cells if full else ():
        cells.setdefault((c.run_id, c.case_no), []).append(c)
    keys = graded_runs.run_keys(store, {i: r for i, r in by_id.items() if i not in values},
                                questions, rules, marks)
    kept = {i: (k, heads[i].tail) for i, k in keys.items() if i in heads}
    return Tallied(runs, banks, missing, tallies, items, cells, cost, store, marks,
                   marked, values, kept)
