"""Which questions separate versions, which only guard against regressions, which are broken.

In the field exam this grew from, only 7 of 60 questions separated eight versions; the other
53 were regression guards. Each question gets one class with the figures behind it:

- ``regression_guard``: every version passes every graded repeat (saturated);
- ``always_failing``: no version ever passes — audit the rubric first;
- ``discriminating``: versions differ beyond noise (Freeman–Halton exact test, BH-adjusted
  q < 0.05), or separate completely with too few repeats to be significant (low evidence);
- ``near_floor``: rarely passes anywhere (≤ 20%), no reliable difference;
- ``underpowered``: the pass rates differ, not significantly, and the repeats so far had less
  than 80% power to show a difference that size: says how many repeats of the weaker version
  would (one-sided Fisher exact at the corrected level, the stronger version's counts as
  observed);
- ``flaky``: inconsistent within versions, no reliable difference between them although the
  repeats had the power to show one of the size seen;
- ``no_data``: no graded reply (every cell was infrastructure trouble).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from exam.reports import charts, kinds, tallies
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.stats import (
    benjamini_hochberg,
    exact_2xk,
    fisher_worse,
    pass_at_k,
    repeats_for_power,
    repeats_to_settle,
    version_rate,
    wilson,
)
from exam.reports.tallies import Tallied
from exam.textsafe import terminal_data
from graders import GRADER_VERSION

ALPHA = 0.05
NEAR_FLOOR = 0.2
K = 3  # pass^k at a fixed k, comparable across questions and versions
CLASSES = ("discriminating", "regression_guard", "flaky", "always_failing", "near_floor",
           "underpowered", "new", "no_data")
POWER = 0.8
AUDITED = ("always_failing", "near_floor", "flaky")  # classes shown with their failing checks


def version_order(regraded: Regraded | Tallied, agent: str) -> list[str]:
    """The agent's versions in the order they were first run."""
    first: dict[str, int] = {}
    for r in sorted(regraded.runs, key=lambda r: r.id):
        if r.agent == agent:
            first.setdefault(r.version, r.id)
    return sorted(first, key=first.get)


def _failing_evidence(source: Tallied, runs: list[int], case_no: str) -> list[dict[str, Any]]:
    """The checks that keep failing over these runs' cells (in order), with one piece of
    evidence each (the first): audit these first."""
    counts: Counter[str] = Counter()
    example: dict[str, dict[str, Any]] = {}
    for run_id in runs:
        for name, times, first in source.failing(run_id, case_no):
            counts[name] += times
            example.setdefault(name, first)
    return [{**example[name], "times": n} for name, n in counts.most_common(3)]


def question_class(rates: list[dict[str, Any]], p: float, q: float, level: float = ALPHA
             ) -> tuple[str, bool, str]:
    """(class, low_evidence, note) from per-version pass counts and the test's q-value."""
    graded = [r for r in rates if r["graded"]]
    if not graded:
        return "no_data", False, "no graded reply: every cell was infrastructure trouble"
    if len(graded) < 2:
        return "new", False, (f"answered in {len(graded)} version(s) only: too new to class "
                              "(a question added after the first run is not failing)")
    if all(r["passes"] == r["graded"] for r in graded):
        return "regression_guard", False, "every version passes every repeat"
    if all(r["passes"] == 0 for r in graded):
        return "always_failing", False, "no version passes: audit the rubric before the agent"
    values = [r["rate"] for r in graded]
    spread = max(values) - min(values)
    total_rate = sum(r["passes"] for r in graded) / sum(r["graded"] for r in graded)
    separated = len(graded) >= 2 and any(r["passes"] == r["graded"] for r in graded) and any(
        r["passes"] == 0 for r in graded)
    if len(graded) >= 2 and q < ALPHA:
        return "discriminating", False, f"versions differ (q = {q:.3g})"
    if separated:
        n = max(r["graded"] for r in graded)
        need = repeats_to_settle(0.0, 1.0, level)
        more = (f"{need} repeats per version would make a complete separation significant "
                f"after the correction (two-sided exact test at {level:.3g})" if need
                else "many more repeats per version would make it significant")
        return "discriminating", True, (
            f"separates completely, low evidence: p = {p:.3g} with {n} repeat(s); {more}")
    if total_rate <= NEAR_FLOOR:
        return "near_floor", False, f"passes {total_rate:.0%} of the time across versions"
    if spread > 0:
        high = max(graded, key=lambda r: r["rate"])
        low = min(graded, key=lambda r: r["rate"])
        need = repeats_for_power(high["passes"], high["graded"], low["rate"], level, POWER)
        if need is None or need > low["graded"]:
            more = (f"about {need} answered repeats of {low['version']} would show a drop this "
                    f"size with {POWER:.0%} power (one-sided Fisher exact at {level:.3g}, "
                    f"{high['version']}'s {high['passes']}/{high['graded']} as observed)"
                    if need else "a difference this size needs more than 200 repeats")
            return "underpowered", False, (
                f"pass rates differ by {spread:.0%} (p = {p:.3g}) with {low['graded']} "
                f"repeat(s) of {low['version']}; {more}")
    return "flaky", False, "inconsistent within versions, no reliable difference between them"


def _pairs(rates: list[dict[str, Any]], level: float
           ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """With three or more versions: which pairs differ (two-sided exact test, Holm over the
    pairs of this question at ``level``), and the latest version's direction against the one
    before it (one-sided exact tests both ways at ``level``)."""
    present = [r for r in rates if r["graded"]]
    if len(present) < 3:
        return [], None
    pairs = []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            pairs.append({"old": a["version"], "new": b["version"],
                          "p": exact_2xk([a["passes"], b["passes"]], [a["graded"], b["graded"]]),
                          "direction": "better" if b["rate"] > a["rate"] else
                          "worse" if b["rate"] < a["rate"] else "same"})
    m = len(pairs)
    for rank, pair in enumerate(sorted(pairs, key=lambda x: x["p"])):  # Holm step-down
        pair["differ"] = pair["p"] <= level / (m - rank)
        if not pair["differ"]:
            for rest in sorted(pairs, key=lambda x: x["p"])[rank:]:
                rest["differ"] = False
            break
    prev, last = present[-2], present[-1]
    worse = fisher_worse(prev["passes"], prev["graded"], last["passes"], last["graded"])
    better = fisher_worse(last["passes"], last["graded"], prev["passes"], prev["graded"])
    direction = "worse" if worse <= level else "better" if better <= level else "no clear change"
    return [p for p in pairs if p["differ"]], {
        "version": last["version"], "against": prev["version"], "direction": direction,
        "p_worse": worse, "p_better": better}


def by_question(regraded: Regraded, agent: str
                ) -> tuple[dict[str, dict[str, list[GradedCell]]], dict[str, GradedCell]]:
    """The agent's cells by question and version, and one cell per question for its metadata."""
    by_q: dict[str, dict[str, list[GradedCell]]] = defaultdict(lambda: defaultdict(list))
    meta: dict[str, GradedCell] = {}
    for c in regraded.cells:
        if c.agent == agent:
            by_q[c.case_no][c.version].append(c)
            meta.setdefault(c.case_no, c)
    return by_q, meta


def build_agent(regraded: Regraded | Tallied, agent: str, k: int = K, seed: int = 0
                ) -> dict[str, Any]:
    source = regraded if isinstance(regraded, Tallied) else tallies.from_regraded(regraded)
    versions = version_order(source, agent)
    mine = {r.id: r for r in source.runs if r.agent == agent}
    # case → version → the runs with its cells, in the order the cells come (run id); a
    # case's versions in the order they first answered it
    by_q: dict[str, dict[str, list[int]]] = {}
    meta: dict[str, Any] = {}
    for run_id, by_case in source.tallies.items():
        run = mine.get(run_id)
        if run is None:
            continue
        for case_no in by_case:
            by_q.setdefault(case_no, {}).setdefault(run.version, []).append(run_id)
            if case_no not in meta:
                meta[case_no] = source.items[run.bank_path][case_no]
    questions = []
    for case_no in sorted(by_q):
        rates = []
        changed = False
        for v in versions:
            counts = [source.tallies[i][case_no] for i in by_q[case_no].get(v, [])]
            cells = sum(t.cells for t in counts)
            graded = sum(t.graded for t in counts)
            passes = sum(t.passes for t in counts)
            changed = changed or any(t.changed for t in counts)
            lo, hi = wilson(passes, graded)
            rates.append({
                "version": v, "passes": passes, "graded": graded, "cells": cells,
                "rate": passes / graded if graded else None, "wilson": [lo, hi],
                # unbiased pass^k at a fixed k: C(c, k) / C(n, k); None with fewer than k
                "pass_k": pass_at_k(passes, graded, k) if graded else None,
            })
        present = [r for r in rates if r["graded"]]
        p = exact_2xk([r["passes"] for r in present], [r["graded"] for r in present])
        questions.append({"case_no": case_no, "category": meta[case_no].category,
                          "severity": meta[case_no].question.severity, "pass_rates": rates,
                          "p": p, "changed_since_run": changed})
    # BH only over the questions that can differ: a question every version passes (or fails)
    # every time has p = 1 whatever happens, and would only inflate the others' q
    def can_differ(q: dict[str, Any]) -> bool:
        present = [r for r in q["pass_rates"] if r["graded"]]
        passes, graded = sum(r["passes"] for r in present), sum(r["graded"] for r in present)
        return len(present) >= 2 and 0 < passes < graded

    movable = [q for q in questions if can_differ(q)]
    qvalues = dict(zip((q["case_no"] for q in movable),
                       benjamini_hochberg([q["p"] for q in movable]), strict=True))
    # repeats-needed statements hold at alpha / (questions seen in two or more versions):
    # BH rejects any p at or below alpha / m, and no more questions than these can ever differ
    bound = max(1, sum(1 for q in questions
                       if sum(1 for r in q["pass_rates"] if r["graded"]) >= 2))
    for q in questions:
        qv = qvalues.get(q["case_no"], 1.0)
        q["q"] = qv
        q["can_differ"] = q["case_no"] in qvalues
        q["class"], q["low_evidence"], q["note"] = question_class(q["pass_rates"], q["p"], qv,
                                                            ALPHA / bound)
        q["pairs"], q["latest"] = _pairs(q["pass_rates"], ALPHA / bound)
        if q["latest"] is not None and q["class"] in ("discriminating", "underpowered"):
            which = ", ".join(f"{x['old']}→{x['new']} {x['direction']}" for x in q["pairs"])
            q["note"] += (f"; pairs that differ: {which or 'none after the correction'}; "
                          f"latest {q['latest']['version']} against {q['latest']['against']}: "
                          f"{q['latest']['direction']}")
        # over the versions in the order they first answered it, each version's runs in order
        q["failing_checks"] = _failing_evidence(
            source, [i for ids in by_q[q["case_no"]].values() for i in ids], q["case_no"]
        ) if q["class"] in AUDITED else []
    classes = Counter(q["class"] for q in questions)
    by_category: dict[str, Counter] = defaultdict(Counter)
    for q in questions:
        by_category[q["category"]][q["class"]] += 1
    per_version = []
    for v in versions:
        rows = [r for q in questions for r in q["pass_rates"] if r["version"] == v and r["graded"]]
        passes, graded = sum(r["passes"] for r in rows), sum(r["graded"] for r in rows)
        ks = [r["pass_k"] for r in rows if r["pass_k"] is not None]
        lo, hi = wilson(passes, graded)
        # the question is the unit: the mean of its rates (a settle round's 30 repeats of
        # one question weigh what 3 do), resampled by question, never narrower than Wilson's
        # interval on the mean (seeded, reproducible)
        rate = version_rate([(r["passes"], r["graded"]) for r in rows], seed=seed)
        per_version.append({"version": v, "pass_rate": rate["rate"] if rate else None,
                            "cells_pass_rate": passes / graded if graded else None,
                            "wilson": [lo, hi], "bootstrap": rate["interval"] if rate else None,
                            "pass_k": sum(ks) / len(ks) if ks else None, "k": k,
                            "pass_k_questions": len(ks), "questions": len(rows)})
    separating = classes["discriminating"]
    return {
        "agent": agent, "versions": versions, "questions": questions,
        "summary": {
            "questions": len(questions), "separating": separating,
            "headline": f"{separating} of {len(questions)} questions separate versions",
            "low_evidence": sum(1 for q in questions if q["low_evidence"]),
            "classes": {c: classes.get(c, 0) for c in CLASSES},
            "by_category": {cat: {c: n for c, n in cnt.items()}
                            for cat, cnt in sorted(by_category.items())},
            "per_version": per_version,
        },
    }


def build(regraded: Regraded | Tallied, agent: str | None = None, k: int = K
          ) -> dict[str, Any]:
    """The report, from a full re-grade or from counts (``tallies.tallied``): the same."""
    if not isinstance(regraded, Tallied):
        regraded = tallies.from_regraded(regraded)
    agents = sorted({r.agent for r in regraded.runs if agent in (None, r.agent)})
    return {"grader_version": GRADER_VERSION, "bank_digests": regraded.bank_digests(),
            "agents": [build_agent(regraded, a, k) for a in agents],
            "missing_banks": regraded.missing_banks}


# -- renderings (exam/reports/kinds.py) ---------------------------------------------------

def table(report: dict[str, Any]) -> kinds.Table:
    """One row per agent × question, a column per version."""
    versions = sorted({v for a in report["agents"] for v in a["versions"]})
    head = ["agent", "case_no", "category", "class", "low_evidence", "p", "q", *versions, "note"]
    rows = []
    for a in report["agents"]:
        for q in a["questions"]:
            by = {r["version"]: kinds.frac(r) for r in q["pass_rates"]}
            rows.append([a["agent"], q["case_no"], q["category"], q["class"],
                         q["low_evidence"], kinds.num(q["p"]), kinds.num(q["q"]),
                         *(by.get(v, "") for v in versions), q["note"]])
    return head, rows


def markdown(report: dict[str, Any]) -> list[str]:
    lines = []
    for a in report["agents"]:
        lines += [f"## {a['agent']}: {a['summary']['headline']}", ""]
    return lines + kinds.md_table(*table(report))


def junit_cases(report: dict[str, Any]) -> list[kinds.JunitCase]:
    """A testcase per question: failed when it always fails or is flaky."""
    out = []
    for a in report["agents"]:
        for q in a["questions"]:
            broken = q["class"] in ("always_failing", "flaky")
            note = q.get("note") or q["class"]
            out.append((a["agent"], q["case_no"], f"{q['class']}: {note}" if broken else None,
                        None))
    return out


_SHADE = " ░▒▓█"


def text(report: dict[str, Any], colour: bool = False,
                        details: bool = False) -> str:
    """The matrix; regression guards (every version passes every repeat) fold into one line
    per agent unless ``details``: they say nothing a reader must act on."""
    report = terminal_data(report)
    lines = [f"grader {report['grader_version']}  ·  bank {kinds.digests(report)}"]
    for a in report["agents"]:
        s = a["summary"]
        lines.append("")
        low = f" ({s['low_evidence']} low evidence)" if s["low_evidence"] else ""
        lines.append(f"{a['agent']}: {s['headline']}{low}")
        for pv in s["per_version"]:
            lo, hi = pv.get("bootstrap") or pv["wilson"]
            lines.append(f"  {pv['version']:<10} pass rate {kinds.pct(pv['pass_rate'])} "
                         f"(95% CI {kinds.pct(lo)}–{kinds.pct(hi)}, bootstrap over questions) · "
                         f"pass^{pv.get('k', 'k')} {kinds.pct(pv['pass_k'])}")
        classes = ", ".join(f"{k} {v}" for k, v in s["classes"].items() if v)
        lines.append(f"  classes: {classes}")
        for cat, cnt in s["by_category"].items():
            lines.append(f"    {cat}: " + ", ".join(f"{k} {v}" for k, v in cnt.items()))
        width = max(6, *(len(v) for v in a["versions"]))
        lines.append("  " + "case".ljust(8) + "".join(v.rjust(width + 1) for v in a["versions"])
                     + "   class")
        order = {c: i for i, c in enumerate(("discriminating", "always_failing", "flaky",
                                             "underpowered", "near_floor", "new", "no_data",
                                             "regression_guard"))}
        guards = [q["case_no"] for q in a["questions"] if q["class"] == "regression_guard"]
        for q in sorted(a["questions"], key=lambda q: (order[q["class"]], q["case_no"])):
            if q["class"] == "regression_guard" and not details:
                continue
            cells = []
            for r in q["pass_rates"]:
                shade = "" if r["rate"] is None else _SHADE[min(4, int(r["rate"] * 4 + 0.5))]
                cells.append((shade + " " + kinds.frac(r)).rjust(width + 1))
            mark = "*" if q["low_evidence"] else ""
            lines.append(f"  {q['case_no']:<8}" + "".join(cells) + f"   {q['class']}{mark}  "
                         f"{q['note']}")
            for fc in q["failing_checks"][:1]:
                lines.append(f"           audit {fc['name']} ({fc['times']}×): {fc['evidence']}")
        if guards and not details:
            shown = ", ".join(guards[:8]) + (f" … ({len(guards) - 8} more)" if len(guards) > 8 else "")
            lines.append(f"  regression guards ({len(guards)}, every version passes every repeat): "
                         f"{shown}  [--details lists each]")
        if s["low_evidence"]:
            lines.append("  * low evidence: separates completely, too few repeats to be significant")
    return "\n".join(lines)


def _charts(report: dict[str, Any]) -> dict[str, Any]:
    return {a["agent"]: charts.discrimination(a) for a in report["agents"]}


def _assembled(inputs: kinds.Inputs, args: kinds.Args) -> dict[str, Any]:
    # counts alone: from the kept runs' heads where the grade source reads them
    return build(inputs.counts(), args.get("agent"), args["k"])


KIND = kinds.register(kinds.ReportKind(
    name="discrimination", text=kinds.with_notes(text), table=table, markdown=markdown,
    junit_cases=junit_cases, html_template="_discrimination.html",
    html_title=lambda _r: "Discrimination", charts=_charts, build=_assembled,
    params=(kinds.AGENT, kinds.Param("k", "pass^k at this fixed k (unbiased C(c,k)/C(n,k)).",
                                     "int", default=K, minimum=1)),
    summary="Questions × versions, with a class per question", api="/discrimination",
    page=None))
