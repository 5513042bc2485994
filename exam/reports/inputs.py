"""What a report is built from: its runs and the grade source of the surface asking for it.

Every report reads today's grades of stored replies, and the surfaces differ only in *how*
they get them: a CLI process grades a large store on every core and reads discrimination's
counts from the kept runs' heads; a server's request (the API, the dashboard, LINE) grades
in its own thread; a caller inside one process (the demo, a notification, a settle look)
grades in place. That difference is a ``GradeSource``, chosen once per surface, never flags
at a call site. No report shows reply texts (the scorecard keeps its needs_human cells'
texts regardless), so none are kept: the review queue and the reply viewer, which show
them, re-grade through ``regrade`` themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from exam.reports import regrade as regrading  # regrading.regrade: read when called
from exam.reports import tallies

if TYPE_CHECKING:
    from exam.reports.regrade import Regraded
    from exam.reports.tallies import Tallied
    from exam.store import Run, Store


@dataclass(frozen=True, slots=True)
class GradeSource:
    """How one surface has stored replies graded for its reports."""

    name: str
    parallel: bool  # large re-grades on every core: a CLI process, never a threaded server
    heads: bool  # counts (discrimination's) from the kept runs' heads, not a whole re-grade

    def cells(self, store: Store, runs: Sequence[Run]) -> Regraded:
        """Every cell of ``runs`` graded with today's bank, grader and decisions."""
        return regrading.regrade(store, runs, parallel=self.parallel, texts=False)

    def counts(self, store: Store, runs: Sequence[Run]) -> Regraded | Tallied:
        """Per run and question counts (discrimination's input): the same figures either way."""
        if self.heads:
            return tallies.tallied(store, runs, parallel=self.parallel)
        return self.cells(store, runs)


CLI = GradeSource("cli", parallel=True, heads=True)
SERVICE = GradeSource("service", parallel=False, heads=True)
LOCAL = GradeSource("local", parallel=False, heads=False)  # one process, one thread: in place


class Inputs:
    """A report's runs, graded by ``grades`` on first use and kept: reports made from one
    ``Inputs`` (the demo's scorecard, compares and discrimination) grade once."""

    __slots__ = ("_cells", "_counts", "_tallied", "grades", "runs", "store")

    def __init__(self, store: Store, runs: Sequence[Run], grades: GradeSource) -> None:
        self.store, self.runs, self.grades = store, list(runs), grades
        self._cells: Regraded | None = None
        self._counts: Regraded | Tallied | None = None
        self._tallied: Tallied | None = None

    def tallies(self) -> Tallied:
        """Per run and question counts and each run's cost, from the kept runs' heads on every
        surface (the overview and the runs page: nothing per cell is decoded to draw a list);
        from the cells when they are already graded."""
        if self._cells is not None:
            return tallies.from_regraded(self._cells)
        if self._tallied is None:
            self._tallied = tallies.tallied(self.store, self.runs, parallel=self.grades.parallel)
        return self._tallied

    def cells(self) -> Regraded:
        if self._cells is None:
            self._cells = self.grades.cells(self.store, self.runs)
        return self._cells

    def cells_of(self, versions: Sequence[str]) -> Regraded:
        """The cells of these versions' runs alone (a compare's two), graded; every version's
        when they are graded already."""
        if self._cells is not None:
            return self._cells
        return self.grades.cells(self.store, [r for r in self.runs if r.version in versions])

    def counts(self) -> Regraded | Tallied:
        """Counts; the cells themselves when already graded (the same figures, no second read)."""
        if self._cells is not None:
            return self._cells
        if self._counts is None:
            self._counts = self.grades.counts(self.store, self.runs)
        return self._counts
