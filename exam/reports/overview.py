"""One agent across its versions, and one row per run: what a team lead looks at first.

Per version: pass rate with its 95% interval, the verdict of the change against the last
version shipped before it (exam/reports/baseline.py: never merely the previous one, which
may have been held), why, what still fails since then, which version is shipped now, cost
(model calls, tokens, latency p50/p95) and coverage (cells answered / planned).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from exam.reports import changes, graded_runs, kinds, tallies
from exam.reports import charts as draw
from exam.reports.changes import VERDICT_WORDS, change_verdict  # noqa: F401 — the pages' one word
from exam.reports.discrimination import version_order
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.selection import select_runs
from exam.reports.stats import version_rate
from exam.reports.tallies import CellCount, Tallied, tally

COST = graded_runs.COST  # kept per run in its head (exam/reports/graded_runs.py)
Source = Regraded | Tallied
_NO_COST = {k: [None, None, 0] for k in COST}  # a run with no cell stored yet


def figures(cells: Sequence[GradedCell], planned: int) -> dict[str, Any]:
    """Pass rate (mean over questions, with its interval), coverage and cost p50/p95 of some
    cells (of one run or one version): the figures ``figures_of`` makes from their counts."""
    counts = tally(cells)
    values = graded_runs.cost_values(cells)
    return figures_of([counts[i] for i in sorted(counts)],
                      {k: graded_runs.cost_of(v) for k, v in values.items()}, planned)


def figures_of(counts: Sequence[Mapping[str, CellCount]], cost: Mapping[str, list],
               planned: int) -> dict[str, Any]:
    """The figures of some runs' counts (in run order: the interval's bootstrap reads the
    questions in the order their first graded cell came, as ``rate_of_cells`` does) and
    their cost (COST figure → [p50, p95, how many])."""
    per: dict[str, list[int]] = {}
    passes = graded = fail = answered = 0
    for by_case in counts:
        for case, t in by_case.items():
            if t.graded:
                got = per.setdefault(case, [0, 0])
                got[0] += t.passes
                got[1] += t.graded
            passes += t.passes
            graded += t.graded
            fail += t.fails
            answered += t.answered
    # the mean of per-question rates (a question asked 30 times by --settle weighs what one
    # asked 3 times does), with an interval that holds it and never collapses to a point
    rate = version_rate([(p, n) for p, n in per.values()])
    return {"passes": passes, "graded": graded,
            "pass_rate": rate["rate"] if rate else None,
            "wilson": rate["interval"] if rate else [None, None],
            "fail": fail, "needs_human": graded - passes - fail,
            "answered": answered, "planned": planned,
            "coverage": answered / planned if planned else None,
            "cost": {k: {"p50": cost[k][0], "p95": cost[k][1]} for k in COST}}


def _cost(source: Tallied, run_ids: Sequence[int]) -> dict[str, list]:
    """COST figure → [p50, p95, how many] over some runs' cells: a run's own is kept in its
    head; several runs' are taken from their values."""
    if len(run_ids) == 1 and run_ids[0] in source.cost:
        return source.cost[run_ids[0]]
    values = source.cost_values(run_ids)
    return {k: graded_runs.cost_of(sorted(v for i in run_ids for v in values[i][k]))
            for k in COST}


def build_agent(source: Tallied, agent: str, records: Sequence[Any] = (),
                cells: Callable[[], Regraded] | None = None) -> dict[str, Any]:
    versions = version_order(source, agent)
    # the walk over every version, kept in the store while nothing it read changes
    change_of, shipped = changes.walked(source, agent, records, cells)
    rows = []
    for v in versions:
        runs = sorted((r for r in source.runs if r.agent == agent and r.version == v),
                      key=lambda r: r.id)
        planned = sum(r.total_cells for r in runs)
        ids = [r.id for r in runs if r.id in source.tallies]
        counts = [source.tallies[i] for i in ids]
        # shown beside its verdict whatever it says (a ship is never green over these), on
        # every page that shows the version: the runs page reads them from its change
        items = {r.id: source.items[r.bank_path] for r in runs}
        critical = sorted({case for i in ids for case, t in source.tallies[i].items()
                           if t.fails and items[i][case].question.severity == "critical"})
        rows.append({"version": v, "run_ids": [r.id for r in runs],
                     **figures_of(counts, _cost(source, ids), planned),
                     "critical_failing": critical,
                     "change": {**(change_of.get(v) or changes.summary(None)),
                                "critical_failing": critical},
                     "shipped": shipped is not None and shipped["version"] == v})
    return {"agent": agent, "versions": rows, "shipped": shipped}


def counted(source: Source) -> Tallied:
    """Counts, from a re-grade's cells when those are what was read."""
    return tallies.from_regraded(source) if isinstance(source, Regraded) else source


def build(source: Source, records: Sequence[Any] = (),
          cells: Callable[[], Regraded] | None = None) -> dict[str, Any]:
    """``cells``: the cells of the runs, graded, for a walk that is not kept (from the counts
    alone nothing is compared); without it, ``source`` itself (a re-grade)."""
    if cells is None and isinstance(source, Regraded):
        graded = source
        cells = lambda: graded  # noqa: E731 — the re-grade at hand is what a walk reads
    source = counted(source)
    agents = sorted({r.agent for r in source.runs})
    return {"agents": [build_agent(source, a, records, cells) for a in agents],
            "missing_banks": source.missing_banks}


def run_rows(source: Source, runs: Sequence[Any], overview: dict[str, Any]) -> list[dict]:
    """One row per run: its own pass rate, coverage and cost; its version's change verdict."""
    source = counted(source)
    change = {(a["agent"], v["version"]): v["change"] for a in overview["agents"]
              for v in a["versions"]}
    rows = []
    for r in runs:
        counts = source.tallies.get(r.id)
        rows.append({"run": r, "stored": sum(t.cells for t in counts.values()) if counts else 0,
                     **figures_of([counts] if counts else [], _cost(source, [r.id])
                                  if counts else _NO_COST, r.total_cells),
                     "change": change.get((r.agent, r.version),
                                          {"previous": None, "verdict": "—"})})
    return rows



def charts(report: dict[str, Any]) -> dict[str, Any]:
    """The overview page's charts, per agent: pass rate, coverage, latency, tokens."""

    out = {}
    for a in report["agents"]:
        rows = a["versions"]
        out[a["agent"]] = {"pass": draw.pass_rate(rows), "coverage": draw.coverage(rows),
                           "latency": draw.cost(rows, "latency_ms", "latency ms"),
                           "tokens": draw.cost(rows, "tokens", "tokens per reply")}
    return out


# -- assembly (exam/reports/kinds.py): the dashboard's overview and runs pages ---------------

def _runs(store: Any, args: kinds.Args) -> list:
    """Every counted run (of the agent): none is no error, the page says so."""
    return select_runs(store, args.get("agent"))


def _ship_records(store: Any, args: kinds.Args) -> kinds.Args:
    return {"records": store.ship_records(args.get("agent"))}


def _assembled(inputs: kinds.Inputs, args: kinds.Args) -> dict[str, Any]:
    if not inputs.runs:
        return {"agents": [], "missing_banks": []}
    # the kept runs' heads (counts and cost), the cells only for a walk not kept yet
    return build(inputs.tallies(), args["records"], inputs.cells)


KIND = kinds.register(kinds.ReportKind(
    name="overview", text=None, charts=charts, build=_assembled, runs=_runs,
    stored=_ship_records, params=(kinds.AGENT,), api=None, page=None))
