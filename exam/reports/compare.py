"""Before/after for one agent: regressions, fixes, newly flaky, the checks that moved, cost.

Both versions are re-graded with today's grader and bank first, so the comparison is
one rubric against itself. A score change is explained by the checks that moved, not only
by the total: a total alone credits a change with what a disclaimer's wording did.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from exam.errors import ExamError
from exam.reports import verdict
from exam.reports.discrimination import version_order
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.scorecard import COST_KEYS, SEVERITY_ORDER
from exam.reports.stats import fisher_worse, percentile
from graders import GRADER_VERSION

FAIL_ON = ("verdict", "regression", "any-fail", "never")  # regression: the old name of verdict


def state(cells: list[GradedCell]) -> tuple[str, int, int]:
    """pass (every answered repeat passed) / fail (none did) / flaky / no_data.

    needs_human cells are not counted either way: they make the verdict ``pending``.
    """
    graded = [c for c in cells if c.verdict in ("pass", "fail")]
    passes = sum(1 for c in graded if c.verdict == "pass")
    if not graded:
        return "no_data", 0, 0
    if passes == len(graded):
        return "pass", passes, len(graded)
    if passes == 0:
        return "fail", passes, len(graded)
    return "flaky", passes, len(graded)


def moved_checks(old: list[GradedCell], new: list[GradedCell]) -> list[dict[str, Any]]:
    """Checks whose failure rate changed between the versions, with today's evidence."""
    def rates(cells):
        bad, seen, evidence = Counter(), Counter(), {}
        for c in cells:
            for chk in c.checks:
                seen[chk.name] += 1
                if chk.outcome in ("fail", "needs_human"):
                    bad[chk.name] += 1
                    evidence.setdefault(chk.name, chk.as_dict())
        return {n: bad[n] / seen[n] for n in seen}, evidence

    old_r, old_e = rates(old)
    new_r, new_e = rates(new)
    out = []
    for name in sorted(set(old_r) | set(new_r)):
        a, b = old_r.get(name, 0.0), new_r.get(name, 0.0)
        if abs(a - b) > 1e-9:
            out.append({"check": name, "old_fail_rate": a, "new_fail_rate": b,
                        "direction": "worse" if b > a else "better",
                        "evidence": (new_e if b > a else old_e).get(name)})
    return out


def cost(cells: list[GradedCell]) -> dict[str, dict[str, float | None]]:
    return {k: {"p50": percentile([getattr(c, k) for c in cells if getattr(c, k) is not None], 50),
                "p95": percentile([getattr(c, k) for c in cells if getattr(c, k) is not None], 95)}
            for k in COST_KEYS}


def build(regraded: Regraded, agent: str, old: str, new: str,
          settings: verdict.Settings | None = None,
          levels: dict[str, float] | None = None) -> dict[str, Any]:
    """Compare two versions; ``regraded`` may hold the agent's other versions too (history)."""
    settings = settings or verdict.Settings()
    cells = [c for c in regraded.cells if c.agent == agent]
    runs = [r for r in regraded.runs if r.agent == agent]
    versions = {c.version for c in cells} | {r.version for r in runs}
    for label in (old, new):
        if label not in versions:
            lost = [m["message"] for m in regraded.missing_banks
                    if m["agent"] == agent and m["version"] == label]
            if lost:
                raise ExamError(f"cannot compare {agent} {old} → {new}: " + "; ".join(lost))
            known = ", ".join(sorted(versions)) or "none"
            raise ExamError(f"no stored run of {agent} version {label!r} (versions: {known})")
    order = version_order(regraded, agent)
    every: dict[str, dict[str, list[GradedCell]]] = defaultdict(lambda: defaultdict(list))
    by: dict[str, dict[str, list[GradedCell]]] = defaultdict(lambda: defaultdict(list))
    meta: dict[str, GradedCell] = {}
    for c in cells:
        every[c.case_no][c.version].append(c)
        meta.setdefault(c.case_no, c)
        if c.version in (old, new):
            by[c.case_no][c.version].append(c)
    planned = verdict.planned_cells(runs)
    removed = {case for r in runs for case in regraded.removed.get(r.id, [])}
    planned = {k: v for k, v in planned.items() if k not in removed}
    questions = verdict.questions_from(
        every, planned, {k: (m.severity, m.category) for k, m in meta.items()}, order, old, new,
        settings.pool_history)
    decision = verdict.decide(questions, settings, levels)
    tests = {t["case_no"]: t for t in decision["tests"]}
    groups: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "regressions", "undecided", "fixes", "flaky", "unchanged", "only_old", "only_new")}
    for case_no in sorted(by):
        o, n = by[case_no].get(old, []), by[case_no].get(new, [])
        so, po, go = state(o)
        sn, pn, gn = state(n)
        t = tests.get(case_no)
        row = {"case_no": case_no, "category": meta[case_no].category,
               "severity": meta[case_no].severity,
               "old": {"state": so, "passes": po, "graded": go, "rate": po / go if go else None},
               "new": {"state": sn, "passes": pn, "graded": gn, "rate": pn / gn if gn else None},
               "changed_since_run": any(c.changed for c in o + n),
               "checks_moved": moved_checks(o, n),
               "test": None if t is None else {k: t.get(k) for k in (
                   "p", "q", "effect", "state", "repeats_needed", "more_repeats", "rule",
                   "baseline")}}
        if not o and (t is None or not t["baseline"]["answered"]):
            groups["only_new"].append(row)
        elif not n:
            groups["only_old"].append(row)
        elif t and t["state"] == "hold":
            groups["regressions"].append(row)
        elif t and t["state"] == "undecided":
            groups["undecided"].append(row)
        elif _fixed(row, settings):
            groups["fixes"].append(row)
        elif sn == "flaky" and so in ("pass", "fail") and go >= gn:
            # newly flaky only when the old version had at least as many answered repeats:
            # 3/3 → 9/10 or 0/3 → 1/10 is more repeats, not a new behaviour
            groups["flaky"].append(row)
        else:
            groups["unchanged"].append(row)
    for rows in groups.values():
        rows.sort(key=lambda r: (SEVERITY_ORDER.get(r["severity"], 1), r["case_no"]))
    old_cells = [c for c in cells if c.version == old]
    new_cells = [c for c in cells if c.version == new]
    co, cn = cost(old_cells), cost(new_cells)
    cost_delta = {k: {"old": co[k], "new": cn[k],
                      "delta_p50": None if co[k]["p50"] is None or cn[k]["p50"] is None
                      else cn[k]["p50"] - co[k]["p50"]} for k in COST_KEYS}
    new_fails = sorted({c.case_no for c in new_cells if c.verdict == "fail"})
    critical = [r["case_no"] for r in groups["regressions"] if r["severity"] == "critical"]
    critical_failing = sorted({c.case_no for c in new_cells
                               if c.verdict == "fail" and c.severity == "critical"})
    decision["reason"] = verdict.summary_line(decision)

    def counts(cs):
        v = Counter(c.verdict or c.run_status for c in cs)
        return dict(v)

    return {
        "grader_version": GRADER_VERSION, "bank_digests": regraded.bank_digests(),
        "agent": agent, "old": old, "new": new,
        "verdict": decision["word"], "exit_code": decision["exit_code"], "decision": decision,
        "old_run_ids": sorted({r.id for r in runs if r.version == old}),
        "new_run_ids": sorted({r.id for r in runs if r.version == new}),
        **groups,
        "critical_regressions": critical, "critical_failing": critical_failing,
        "new_failing": new_fails,
        "counts": {"old": counts(old_cells), "new": counts(new_cells)},
        "cost": cost_delta,
        "missing_banks": regraded.missing_banks,
    }


def _fixed(row: dict[str, Any], settings: verdict.Settings) -> bool:
    """Better with the same evidence a hold needs, the test run the other way round."""
    t = row["test"]
    if not t:
        return False
    b, n = t["baseline"], row["new"]
    rule = settings.rule_for(row["severity"])
    if min(b["answered"], n["graded"]) < rule.min_answered or t["effect"] is None:
        return False
    p = fisher_worse(n["passes"], n["graded"], b["passes"], b["answered"])
    return -t["effect"] >= rule.min_effect - 1e-12 and p <= rule.alpha


def exit_code(report: dict[str, Any], fail_on: str) -> int:
    """The verdict's exit code; ``any-fail`` also exits 1 when a shipped version fails anything;
    ``never`` always 0 (the verdict is still printed)."""
    if fail_on == "never":
        return 0
    code = report["exit_code"]
    if code == 0 and fail_on == "any-fail" and report["new_failing"]:
        return 1
    return code


def should_fail(report: dict[str, Any], fail_on: str) -> bool:
    return exit_code(report, fail_on) != 0
