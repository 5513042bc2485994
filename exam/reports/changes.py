"""The change verdict of each version of an agent, as the overview and the runs page show it,
kept in the store (``Store.kept_changes``) under the key of everything it is made of.

The baseline walk (exam/reports/baseline.py) compares every version with the last one shipped
before it: 21 full compares for 3 agents × 8 versions, ~80% of a warm overview's CPU at
100,000 replies, made again on every view though nothing changed. The walk of one agent is a
function of:

- the agent's counted runs (``repr(Run)``: status, exclusion, settings, plan, times) and each
  one's cells mark (``Store.cell_marks``: it changes whenever a cell arrives or is retried,
  and never comes back), read before the cells (``Regraded.marks``);
  the runs of the agent left out for a bank that will not load;
- today's bank of each run (the digest of its whole text, its questions' keys);
- the rules (``rules_key``), the mark of the review decisions on the agent's questions
  (``regrade.decisions_marks``, read before the decisions: a decision on another agent's
  question walks nothing again), the
  agent's ship decisions (``Store.ship_records``), the verdict's settings, the store's
  backend;
- the code that grades, reviews and decides (a digest of every module of ``exam`` and
  ``graders``: an upgrade walks again once).

A walk with a run still queued or running is never kept (its cells change with every reply).
The text kept is the one shown: the first view reads it back as every later one does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from exam.errors import ExamError, StoreError
from exam.grading import keys
from exam.reports import baseline, compare, kinds, verdict
from exam.reports.graded_runs import NOT_KEPT
from exam.reports.regrade import Regraded, questions_key, rules_key
from exam.reports.selection import compare_runs
from exam.reports.tallies import Tallied

LAYOUT = 1  # bump when what is kept (``walked``'s text) changes shape
VERDICT_WORDS = ("ship", "hold", "incomplete", "undecided", "pending")


def change_verdict(report: dict[str, Any] | None) -> str:
    """The one verdict word of a change: compare's ``verdict`` (exam/reports/verdict.py);
    "pending" when there is none. The one place the pages read it from a compare report."""
    if not report:
        return "pending"
    v = report.get("verdict")
    if isinstance(v, dict):
        v = v.get("word")
    return v if v in VERDICT_WORDS else "pending"


def version_verdict(compare_of: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A version's verdict as a page showing the version says it (its scorecard, on the
    dashboard and in an HTML file), from its compare against the last version shipped before
    it (``compare_of()``); ``{"error": why}`` when there is none (the first version, two
    rubrics). The store's trouble is not a missing verdict: it is raised."""
    try:
        report = compare_of()
    except StoreError:
        raise
    except ExamError as exc:
        return {"error": str(exc)}
    return {"verdict": change_verdict(report), "reason": report["decision"]["reason"],
            "baseline": report.get("baseline"), "old": report["old"],
            "still_failing": report.get("still_failing") or [],
            "critical_failing": report.get("critical_failing") or []}


def key(regraded: Regraded | Tallied, agent: str, records: Sequence[Any]) -> str | None:
    """The key of ``agent``'s walk over ``regraded``, from what ``regraded`` was read from
    (its marks were read before its cells: ``Regraded.marks``); None when a run of it may
    still change, or the report was not read from a store."""
    store, marks = regraded.store, regraded.marks
    runs = sorted((r for r in regraded.runs if r.agent == agent), key=lambda r: r.id)
    decided = (regraded.decisions_marks or {}).get(agent)
    if store is None or marks is None or decided is None or not runs or \
            any(r.shown_status in NOT_KEPT for r in runs):
        return None
    banks = {p: regraded.banks[p] for p in dict.fromkeys(r.bank_path for r in runs)}
    every = (
        LAYOUT, keys.code_digest(), rules_key(), store.backend, agent,
        [repr(r) for r in runs], [marks[r.id] for r in runs],
        sorted((p, b.content_digest or repr([i.raw for i in b.items]), b.digest,
                questions_key(b)) for p, b in banks.items()),
        [m["message"] for m in regraded.missing_banks if m["agent"] == agent],
        [repr(r) for r in records if r.agent == agent],
        decided, verdict.Settings().as_dict(),
    )
    return hashlib.blake2b(repr(every).encode(), digest_size=20).hexdigest()


def summary(step: baseline.Step | None) -> dict[str, Any]:
    """A version's change as the walk decided it: against the last version shipped before it."""
    if step is None or step.baseline is None:
        return {"previous": None, "verdict": "—", "regressions": 0, "fixes": 0}
    base = step.baseline.as_dict()
    if step.report is None:
        # not comparable (two rubrics, a version's runs removed…): no verdict at all, never
        # "pending", which sends a reviewer to an empty `exam review` queue
        return {"previous": base["version"], "baseline": base, "verdict": "—",
                "error": step.error, "regressions": 0, "fixes": 0}
    report = step.report
    return {"previous": base["version"], "baseline": base, "verdict": change_verdict(report),
            "reason": report["decision"]["reason"],
            "still_failing": report.get("still_failing", []),
            "regressions": len(report["regressions"]), "fixes": len(report["fixes"])}


def walked(source: Regraded | Tallied, agent: str, records: Sequence[Any],
           cells: Callable[[], Regraded] | None = None
           ) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """({version: its change}, the shipped version's baseline dict or None) of ``agent``:
    kept under its key, or walked and kept. ``source``: what the key is read from (counts
    will do); ``cells``: the graded cells a walk not kept is made from (else ``source``).
    A walk made is kept under the key of the cells it was made from."""
    k = key(source, agent, records)
    store = source.store
    text = store.kept_changes(agent, k) if k is not None and store is not None else None
    if text is None:
        regraded = cells() if cells is not None else source
        if regraded is not source:
            k = key(regraded, agent, records)
        steps, shipped = baseline.walk(regraded, agent, records)
        text = json.dumps({"changes": {s.version: summary(s) for s in steps},
                           "shipped": shipped.as_dict() if shipped else None},
                          ensure_ascii=False, allow_nan=False)
        if k is not None and store is not None:
            store.keep_changes(agent, k, text)
    kept = json.loads(text)
    return kept["changes"], kept["shipped"]


# -- the compare report, as every surface asks for it (exam/reports/kinds.py) ---------------
# registered here, above the walk it reads: a change's baseline (what had shipped when NEW
# was first run) is the kept walk's, so a compare asked for builds one compare, not the walk

def _runs(store: Any, args: kinds.Args) -> list:
    """Every counted run of the agent (the walk to the shipped one), OLD and NEW checked stored."""
    return compare_runs(store, args["agent"], args.get("old"), args["new"])


def _ship_records(store: Any, args: kinds.Args) -> kinds.Args:
    return {"records": store.ship_records(args["agent"])}


def against_kept(regraded: Regraded | Tallied, agent: str, old: str | None, new: str,
                 records: Sequence[Any], *, cells: Callable[[], Regraded] | None = None,
                 pair: Callable[[str, str], Regraded] | None = None) -> dict[str, Any]:
    """``baseline.compare_against`` at the default settings, its baseline read from the
    agent's kept walk (walked and kept first when it is not): the same report, one compare
    built instead of one per version before NEW. ``regraded`` is what the walk's key is read
    from (counts will do); ``cells`` the graded cells a walk not kept is made from, and
    ``pair(old, new)`` the two versions' graded cells the compare reads (both default to
    ``regraded``): a compare asked for reads two versions' cells, not every version's."""
    change_of, _ = walked(regraded, agent, records, cells)
    base = (change_of.get(new) or {}).get("baseline")  # None: nothing shipped before NEW
    if old is None:
        if base is None:
            raise compare.CompareError(baseline.FIRST_VERSION.format(agent=agent, new=new))
        old, shown = base["version"], base
    elif base is not None and base["version"] == old:
        shown = base
    else:
        shown = baseline.Baseline(old, "asked", shipped=base["version"] if base else None
                                  ).as_dict()
    report = compare.build(regraded if pair is None else pair(old, new), agent, old, new)
    report["baseline"] = shown
    report["still_failing"] = baseline.still_failing(report)
    return report


def _assembled(inputs: kinds.Inputs, args: kinds.Args) -> dict[str, Any]:
    """NEW against OLD, or against the last version shipped before it, saying which; with
    ``baseline=False`` the two versions alone, decided at ``levels`` (a settle look, the
    demo's story); at other settings than the default, the walk made afresh for them."""
    agent, old, new = args["agent"], args.get("old"), args["new"]
    if not args.get("baseline", True):
        return compare.build(inputs.cells(), agent, old, new, args.get("settings"),
                             args.get("levels") or None)
    if args.get("settings") is not None:
        return baseline.compare_against(inputs.cells(), agent, old, new, args["records"],
                                        args.get("settings"))
    return against_kept(inputs.tallies(), agent, old, new, args["records"], cells=inputs.cells,
                        pair=lambda o, n: inputs.cells_of((o, n)))


KIND = kinds.register(kinds.ReportKind(
    name="compare", text=kinds.with_notes(compare.text), table=compare.table,
    markdown=compare.markdown, junit_cases=compare.junit_cases, html_template="_compare.html",
    html_title=lambda r: f"{r['agent']}: {r['old']} → {r['new']}", charts=compare.charts,
    build=_assembled, runs=_runs, stored=_ship_records, refusal=(compare.CompareError, "new"),
    params=(kinds.Param("agent", "The agent.", required=True),
            kinds.Param("old", "The version before the change (default: the last version "
                               "shipped before NEW)."),
            kinds.Param("new", "The changed version.", required=True)),
    summary="Before/after of two versions of an agent, with the verdict of the change: "
            "verdict (ship | hold | incomplete | undecided | pending), exit_code, decision "
            "(evidence and settings), baseline (which version it was compared with, and why), "
            "still_failing. Without old: the last version shipped before new",
    cli=False, api="/compare", page=None))
