"""One agent across its versions, and one row per run: what a team lead looks at first.

Per version: pass rate with its 95% interval, the verdict of the change against the last
version shipped before it (exam/reports/baseline.py: never merely the previous one, which
may have been held), why, what still fails since then, which version is shipped now, cost
(model calls, tokens, latency p50/p95) and coverage (cells answered / planned).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from exam.reports import changes, kinds
from exam.reports import charts as draw
from exam.reports.changes import VERDICT_WORDS, change_verdict  # noqa: F401 — the pages' one word
from exam.reports.discrimination import version_order
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.scorecard import cost_summary
from exam.reports.selection import select_runs
from exam.reports.stats import rate_of_cells
from graders.model import GRADED

COST = ("model_calls", "tokens", "latency_ms")


def figures(cells: Sequence[GradedCell], planned: int) -> dict[str, Any]:
    """Pass rate (mean over questions, with its interval), coverage and cost p50/p95 of some cells."""
    graded = [c for c in cells if c.verdict in GRADED]
    passes = sum(1 for c in graded if c.verdict == "pass")
    # the mean of per-question rates (a question asked 30 times by --settle weighs what one
    # asked 3 times does), with an interval that holds it and never collapses to a point
    rate = rate_of_cells(graded)
    answered = sum(1 for c in cells if c.run_status == "ok")
    cost = cost_summary(cells, COST, total=False)
    return {"passes": passes, "graded": len(graded),
            "pass_rate": rate["rate"] if rate else None,
            "wilson": rate["interval"] if rate else [None, None],
            "fail": sum(1 for c in graded if c.verdict == "fail"),
            "needs_human": sum(1 for c in graded if c.verdict == "needs_human"),
            "answered": answered, "planned": planned,
            "coverage": answered / planned if planned else None, "cost": cost}


def build_agent(regraded: Regraded, agent: str, records: Sequence[Any] = ()) -> dict[str, Any]:
    versions = version_order(regraded, agent)
    by_version: dict[str, list[GradedCell]] = defaultdict(list)
    for c in regraded.cells:
        if c.agent == agent:
            by_version[c.version].append(c)
    # the walk over every version, kept in the store while nothing it read changes
    change_of, shipped = changes.walked(regraded, agent, records)
    rows = []
    for v in versions:
        runs = [r for r in regraded.runs if r.agent == agent and r.version == v]
        planned = sum(r.total_cells for r in runs)
        cells = by_version.get(v, [])
        # shown beside its verdict whatever it says (a ship is never green over these), on
        # every page that shows the version: the runs page reads them from its change
        critical = sorted({c.case_no for c in cells
                           if c.verdict == "fail" and c.severity == "critical"})
        rows.append({"version": v, "run_ids": sorted(r.id for r in runs),
                     **figures(cells, planned), "critical_failing": critical,
                     "change": {**(change_of.get(v) or changes.summary(None)),
                                "critical_failing": critical},
                     "shipped": shipped is not None and shipped["version"] == v})
    return {"agent": agent, "versions": rows, "shipped": shipped}


def build(regraded: Regraded, records: Sequence[Any] = ()) -> dict[str, Any]:
    agents = sorted({r.agent for r in regraded.runs})
    return {"agents": [build_agent(regraded, a, records) for a in agents],
            "missing_banks": regraded.missing_banks}


def run_rows(regraded: Regraded, runs: Sequence[Any], overview: dict[str, Any]) -> list[dict]:
    """One row per run: its own pass rate, coverage and cost; its version's change verdict."""
    by_run: dict[int, list[GradedCell]] = defaultdict(list)
    for c in regraded.cells:
        by_run[c.run_id].append(c)
    change = {(a["agent"], v["version"]): v["change"] for a in overview["agents"]
              for v in a["versions"]}
    return [{"run": r, "stored": len(by_run.get(r.id, [])),
             **figures(by_run.get(r.id, []), r.total_cells),
             "change": change.get((r.agent, r.version),
                                  {"previous": None, "verdict": "—"})} for r in runs]


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
    return build(inputs.cells(), args["records"])


KIND = kinds.register(kinds.ReportKind(
    name="overview", text=None, charts=charts, build=_assembled, runs=_runs,
    stored=_ship_records, params=(kinds.AGENT,), api=None, page=None))
