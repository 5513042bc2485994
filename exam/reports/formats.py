"""Every report in every format: text, markdown, json, csv and junit (for CI systems).

Each report is a plain dict first (that *is* the json format); the other formats are
views of it. ``table()`` gives one flat row per agent × question (csv and markdown);
``junit_cases()`` one testcase per agent × question, the failure message being the evidence.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any
from xml.sax.saxutils import escape, quoteattr

FORMATS = ("text", "markdown", "json", "csv", "junit")


def digests(report: dict[str, Any]) -> str:
    return ", ".join(f"{agent} {d}" for agent, d in sorted(report.get("bank_digests", {}).items()))


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def _num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}g}"


def _frac(r: dict[str, Any]) -> str:
    return f"{r['passes']}/{r['graded']}" if r["graded"] else "–"


def _evidence(checks: Iterable[dict[str, Any]]) -> str:
    parts = []
    for c in checks:
        if c["outcome"] not in ("fail", "needs_human"):
            continue
        signs = [*(f"- {m}" for m in c.get("missing", [])),
                 *(f"+ {u}" for u in c.get("unexpected", []))]
        parts.append(f"{c['name']} {c['outcome']}: {c.get('evidence', '')}"
                     + (f" [{'; '.join(signs)}]" if signs else ""))
    return " | ".join(parts)


# -- tables (csv, markdown) -----------------------------------------------------------

def table(kind: str, report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    if kind == "scorecard":
        head = ["agent", "version", "case_no", "category", "severity", "repeat", "run_id",
                "run_status", "verdict", "attempts", "model_calls", "tokens", "latency_ms",
                "evidence"]
        rows = [[c["agent"], c["version"], case["case_no"], case["category"], case["severity"],
                 cell["repeat"], cell["run_id"], cell["run_status"], cell["verdict"] or "",
                 cell["attempts"], cell["model_calls"], cell["tokens"], cell["latency_ms"],
                 _evidence(cell["checks"]) or cell.get("error", "")]
                for c in report["scorecards"] for case in c["cases"] for cell in case["cells"]]
        return head, rows
    if kind == "compare":
        head = ["agent", "change", "case_no", "category", "severity", "old", "new", "checks_moved"]
        rows = []
        for group in ("regressions", "undecided", "fixes", "flaky", "unchanged", "only_old",
                      "only_new"):
            for r in report[group]:
                moved = "; ".join(f"{m['check']} {m['direction']}" for m in r["checks_moved"])
                rows.append([report["agent"], group, r["case_no"], r["category"], r["severity"],
                             _frac(r["old"]), _frac(r["new"]), moved])
        return head, rows
    if kind == "discrimination":
        versions = sorted({v for a in report["agents"] for v in a["versions"]})
        head = ["agent", "case_no", "category", "class", "low_evidence", "p", "q",
                *versions, "note"]
        rows = []
        for a in report["agents"]:
            for q in a["questions"]:
                by = {r["version"]: _frac(r) for r in q["pass_rates"]}
                rows.append([a["agent"], q["case_no"], q["category"], q["class"],
                             q["low_evidence"], _num(q["p"]), _num(q["q"]),
                             *(by.get(v, "") for v in versions), q["note"]])
        return head, rows
    if kind == "rebalance":
        head = ["agent", "case_no", "category", "class", "difficulty", "spread", "item_rest", "q"]
        rows = [[a["agent"], r["case_no"], r["category"], r["class"], _num(r["difficulty"], 2),
                 _num(r["spread"], 2), _num(r["item_rest"], 2), _num(r["q"])]
                for a in report["agents"] for r in a["questions"]]
        return head, rows
    raise ValueError(kind)


def to_csv(kind: str, report: dict[str, Any]) -> str:
    head, rows = table(kind, report)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(head)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return buf.getvalue()


def _md_table(head: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(v: Any) -> str:
        return ("" if v is None else str(v)).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return out


def to_markdown(kind: str, report: dict[str, Any]) -> str:
    lines = [f"# agent-exam {kind}", "", f"Grader {report['grader_version']}"
             + (f" · bank {digests(report)}" if report.get("bank_digests") else ""),
             ""]
    if kind == "scorecard":
        for c in report["scorecards"]:
            v = c["verdicts"]
            lines.append(f"## {c['agent']} {c['version']}")
            lines.append(f"pass {v['pass']} · needs_human {v['needs_human']} · fail {v['fail']} "
                         f"· not_graded {v['not_graded']} · run statuses {c['run_status']}")
            if c["critical_failures"]:
                lines.append(f"\n**Critical failing: {', '.join(c['critical_failures'])}**")
            lines.append("")
        head, rows = table(kind, report)
        rows = [r for r in rows if r[8] != "pass"]
        lines += _md_table(head, rows) if rows else ["Every reply passed."]
    elif kind == "compare":
        lines.append(f"## {report['agent']}: {report['old']} → {report['new']}")
        lines.append(f"**Verdict: {report['verdict']}** (exit {report['exit_code']}): "
                     f"{report['decision']['reason']}")
        lines.append("")
        lines.append(f"{len(report['regressions'])} regression(s), {len(report['fixes'])} fix(es), "
                     f"{len(report['flaky'])} newly flaky, {len(report['unchanged'])} unchanged")
        if report["critical_regressions"]:
            lines.append(f"\n**Critical regressions: {', '.join(report['critical_regressions'])}**")
        lines.append("")
        head, rows = table(kind, report)
        lines += _md_table(head, [r for r in rows if r[1] != "unchanged"])
    elif kind == "discrimination":
        for a in report["agents"]:
            lines.append(f"## {a['agent']}: {a['summary']['headline']}")
            lines.append("")
        head, rows = table(kind, report)
        lines += _md_table(head, rows)
    elif kind == "rebalance":
        for a in report["agents"]:
            lines.append(f"## {a['agent']}")
            lines += [f"- {adv['text']}" for adv in a["advice"]] or ["- nothing to change"]
            lines.append("")
        head, rows = table(kind, report)
        lines += _md_table(head, rows)
    return "\n".join(lines) + "\n"


# -- junit ---------------------------------------------------------------------------

def junit_cases(kind: str, report: dict[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    """(suite, name, failure message or None, skipped message or None)."""
    out = []
    if kind == "scorecard":
        for c in report["scorecards"]:
            suite = f"{c['agent']} {c['version']}"
            for case in c["cases"]:
                bad = [cell for cell in case["cells"] if cell["verdict"] in ("fail", "needs_human")]
                trouble = [cell for cell in case["cells"] if cell["verdict"] is None]
                if bad:
                    msg = " || ".join(f"#{cell['repeat']} {cell['verdict']}: "
                                      f"{_evidence(cell['checks'])}" for cell in bad)
                    out.append((suite, case["case_no"], msg, None))
                elif trouble and len(trouble) == len(case["cells"]):
                    out.append((suite, case["case_no"], None,
                                f"not answered: {trouble[0]['run_status']} {trouble[0]['error']}"))
                else:
                    out.append((suite, case["case_no"], None, None))
    elif kind == "compare":
        suite = f"{report['agent']} {report['old']}→{report['new']}"
        if report["verdict"] != "ship":
            out.append((suite, "verdict", f"{report['decision']['reason']}", None))
        for group in ("regressions", "undecided", "fixes", "flaky", "unchanged", "only_old",
                      "only_new"):
            for r in report[group]:
                msg = None
                if group == "regressions":
                    moved = "; ".join(f"{m['check']}: {(m['evidence'] or {}).get('evidence', '')}"
                                      for m in r["checks_moved"] if m["direction"] == "worse")
                    msg = f"regression {_frac(r['old'])} → {_frac(r['new'])}: {moved}"
                out.append((suite, r["case_no"], msg, None))
    elif kind in ("discrimination", "rebalance"):
        for a in report["agents"]:
            for q in a["questions"]:
                broken = q["class"] in ("always_failing", "flaky")
                note = q.get("note") or q["class"]
                out.append((a["agent"], q["case_no"], f"{q['class']}: {note}" if broken else None,
                            None))
    return out


def to_junit(kind: str, report: dict[str, Any]) -> str:
    suites: dict[str, list] = {}
    for suite, name, failure, skipped in junit_cases(kind, report):
        suites.setdefault(suite, []).append((name, failure, skipped))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name={quoteattr("agent-exam " + kind)}>']
    for suite, cases in suites.items():
        failures = sum(1 for _, f, _ in cases if f)
        skips = sum(1 for _, _, s in cases if s)
        lines.append(f"  <testsuite name={quoteattr(suite)} tests=\"{len(cases)}\" "
                     f"failures=\"{failures}\" skipped=\"{skips}\">")
        for name, failure, skipped in cases:
            lines.append(f"    <testcase classname={quoteattr(suite)} name={quoteattr(name)}>")
            if failure:
                lines.append(f"      <failure message={quoteattr(failure[:500])}>"
                             f"{escape(failure)}</failure>")
            if skipped:
                lines.append(f"      <skipped message={quoteattr(skipped[:500])}/>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


# -- text ----------------------------------------------------------------------------

def text_compare(report: dict[str, Any], colour: bool = False) -> str:
    from exam.render import paint

    lines = [f"grader {report['grader_version']}  ·  bank {digests(report)}  ·  "
             f"{report['agent']}: {report['old']} "
             f"(runs {report['old_run_ids']}) → {report['new']} (runs {report['new_run_ids']})"]
    lines += verdict_lines(report, colour)
    head = (f"{len(report['regressions'])} regression(s), {len(report['undecided'])} undecided, "
            f"{len(report['fixes'])} fix(es), "
            f"{len(report['flaky'])} newly flaky, {len(report['unchanged'])} unchanged")
    lines.append(head)
    if report["critical_regressions"]:
        lines.append(paint(f"CRITICAL regression: {', '.join(report['critical_regressions'])}",
                           "fail", colour))
    elif report["critical_failing"]:
        lines.append(paint(f"critical still failing: {', '.join(report['critical_failing'])}",
                           "fail", colour))
    for group, label, outcome in (("regressions", "REGRESSION", "fail"),
                                  ("undecided", "UNDECIDED", "needs_human"), ("fixes", "FIXED", "pass"),
                                  ("flaky", "NEWLY FLAKY", "needs_human")):
        for r in report[group]:
            t = r.get("test") or {}
            base = t.get("baseline") or {}
            vs = (f"  (baseline {base['passes']}/{base['answered']} over "
                  f"{', '.join(base['versions'])}; p = {_num(t.get('p'))}, q = {_num(t.get('q'))})"
                  if base and len(base.get("versions", [])) > 1 else
                  f"  (p = {_num(t.get('p'))}, q = {_num(t.get('q'))})" if t else "")
            lines.append(paint(f"  {label:<11} {r['case_no']} ({r['severity']}, {r['category']})  "
                               f"{_frac(r['old'])} → {_frac(r['new'])}{vs}", outcome, colour))
            for m in r["checks_moved"]:
                ev = (m["evidence"] or {}).get("evidence", "")
                lines.append(f"      {m['check']} {m['direction']} "
                             f"({_pct(m['old_fail_rate'])} → {_pct(m['new_fail_rate'])} failing)"
                             + (f": {ev}" if ev else ""))
    for group, label in (("only_old", "only in old"), ("only_new", "only in new")):
        if report[group]:
            lines.append(f"  {label}: {', '.join(r['case_no'] for r in report[group])}")
    changed = [r["case_no"] for g in ("regressions", "fixes", "flaky", "unchanged")
               for r in report[g] if r["changed_since_run"]]
    if changed:
        lines.append(f"  note: rubric changed since the runs for {', '.join(changed)}")
    lines.append("  cost (p50 old → new):")
    for key, c in report["cost"].items():
        o, n = c["old"]["p50"], c["new"]["p50"]
        delta = c["delta_p50"]
        lines.append(f"    {key:<12} {_num(o, 4)} → {_num(n, 4)}"
                     + ("" if delta is None else f"  ({delta:+.4g})")
                     + f"   p95 {_num(c['old']['p95'], 4)} → {_num(c['new']['p95'], 4)}")
    return "\n".join(lines)


def verdict_lines(report: dict[str, Any], colour: bool = False) -> list[str]:
    """The verdict word, why, and the evidence rule it was decided under."""
    from exam.render import paint

    d = report["decision"]
    tone = {"ship": "pass", "hold": "fail", "incomplete": "fail"}.get(d["word"], "needs_human")
    st = d["settings"]
    sev = "; ".join(f"{k}: alpha {v['alpha']}, min effect {v['min_effect']:.0%}, "
                    f"min answered {v['min_answered']}" for k, v in st["by_severity"].items())
    lines = [paint(f"VERDICT: {d['word'].upper()}  (exit {d['exit_code']})", tone, colour),
             "  " + d["reason"],
             f"  rule: one-sided Fisher exact (new worse), discrete BH over "
             f"{d['questions_testable']} of {d['questions_tested']} question(s) that can move; "
             f"hold when q ≤ {st['alpha']}, drop ≥ {st['min_effect']:.0%}, "
             f"≥ {st['min_answered']} answered repeats each side"
             + (f"; {sev}" if sev else "") + f"; coverage floor {st['coverage']:.0%}"
             + ("; guards pooled over earlier versions" if st["pool_history"] else "")]
    for u in d["undecided"]:
        if u.get("repeats_needed") is not None:
            lines.append(f"  {u['case_no']}: if its pass rate really is "
                         f"{_pct(u['assumed_new_rate'])} (baseline {u['old']}), "
                         f"{u['repeats_needed']} answered repeats of the new version detect the "
                         f"drop with ≥ 80% power at level {u['level_for_repeats']:.3g} "
                         f"(alpha / questions that can get worse)")
        if u.get("baseline_short"):
            lines.append(f"  {u['case_no']}: the baseline has too few answered repeats: "
                         f"{u['baseline_short']} more of {report['old']}")
    if d["new_questions"]:
        lines.append(f"  new question(s), no baseline: {', '.join(d['new_questions'])}")
    return lines


_SHADE = " ░▒▓█"


def text_discrimination(report: dict[str, Any], colour: bool = False) -> str:
    lines = [f"grader {report['grader_version']}  ·  bank {digests(report)}"]
    for a in report["agents"]:
        s = a["summary"]
        lines.append("")
        low = f" ({s['low_evidence']} low evidence)" if s["low_evidence"] else ""
        lines.append(f"{a['agent']}: {s['headline']}{low}")
        for pv in s["per_version"]:
            lo, hi = pv.get("bootstrap") or pv["wilson"]
            lines.append(f"  {pv['version']:<10} pass rate {_pct(pv['pass_rate'])} "
                         f"(95% CI {_pct(lo)}–{_pct(hi)}, bootstrap over questions) · "
                         f"pass^{pv.get('k', 'k')} {_pct(pv['pass_k'])}")
        classes = ", ".join(f"{k} {v}" for k, v in s["classes"].items() if v)
        lines.append(f"  classes: {classes}")
        for cat, cnt in s["by_category"].items():
            lines.append(f"    {cat}: " + ", ".join(f"{k} {v}" for k, v in cnt.items()))
        width = max(6, *(len(v) for v in a["versions"]))
        lines.append("  " + "case".ljust(8) + "".join(v.rjust(width + 1) for v in a["versions"])
                     + "   class")
        order = {c: i for i, c in enumerate(("discriminating", "always_failing", "flaky",
                                             "inconclusive", "near_floor", "new", "no_data",
                                             "regression_guard"))}
        for q in sorted(a["questions"], key=lambda q: (order[q["class"]], q["case_no"])):
            cells = []
            for r in q["pass_rates"]:
                shade = "" if r["rate"] is None else _SHADE[min(4, int(r["rate"] * 4 + 0.5))]
                cells.append((shade + " " + _frac(r)).rjust(width + 1))
            mark = "*" if q["low_evidence"] else ""
            lines.append(f"  {q['case_no']:<8}" + "".join(cells) + f"   {q['class']}{mark}  "
                         f"{q['note']}")
            for fc in q["failing_checks"][:1]:
                lines.append(f"           audit {fc['name']} ({fc['times']}×): {fc['evidence']}")
        if s["low_evidence"]:
            lines.append("  * low evidence: separates completely, too few repeats to be significant")
    return "\n".join(lines)


def text_rebalance(report: dict[str, Any], colour: bool = False) -> str:
    lines = [f"grader {report['grader_version']}  ·  bank {digests(report)}"
             + (f"  ·  since {report['since']}" if report["since"] else "")]
    for a in report["agents"]:
        lines.append("")
        lines.append(f"{a['agent']}: {a['runs']} run(s), versions {', '.join(a['versions'])}; "
                     f"{a['summary']['headline']}")
        lines.append("  category mix:")
        for cat, mix in a["category_mix"].items():
            lines.append(f"    {cat}: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items())))
        lines.append("  advice:")
        lines += [f"    - {adv['text']}" for adv in a["advice"]] or ["    - nothing to change"]
        lines.append(f"  {'case':<8} {'class':<17} {'difficulty':>10} {'spread':>7} {'item-rest':>9}")
        for r in a["questions"]:
            lines.append(f"  {r['case_no']:<8} {r['class']:<17} {_num(r['difficulty'], 2):>10} "
                         f"{_num(r['spread'], 2):>7} {_num(r['item_rest'], 2):>9}")
    return "\n".join(lines)


def render(kind: str, report: dict[str, Any], fmt: str, colour: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report, ensure_ascii=False, indent=2)
    if fmt == "csv":
        return to_csv(kind, report)
    if fmt == "markdown":
        return to_markdown(kind, report)
    if fmt == "junit":
        return to_junit(kind, report)
    if kind == "scorecard":
        from exam.reports.scorecard import render_text

        return render_text(report, colour)
    return {"compare": text_compare, "discrimination": text_discrimination,
            "rebalance": text_rebalance}[kind](report, colour)
