"""Every report in every format: text, markdown, json, csv, junit (for CI systems) and html.

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

from exam.reports.rebalance_views import category_table, notes, rules
from exam.textsafe import csv_cell, terminal_data, xml_text

FORMATS = ("text", "markdown", "json", "csv", "junit", "html")


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
                "evidence", "tokens_estimated"]
        rows = [[c["agent"], c["version"], case["case_no"], case["category"], case["severity"],
                 cell["repeat"], cell["run_id"], cell["run_status"], cell["verdict"] or "",
                 cell["attempts"], cell["model_calls"], cell["tokens"], cell["latency_ms"],
                 _evidence(cell["checks"]) or cell.get("error", ""),
                 "yes" if cell.get("tokens_estimated") else ""]
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
        return _rebalance_table(report)
    raise ValueError(kind)


def to_csv(kind: str, report: dict[str, Any]) -> str:
    head, rows = table(kind, report)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(h) for h in head])  # version columns are labels
    writer.writerows(["" if v is None else csv_cell(v) for v in row] for row in rows)
    return buf.getvalue()


def _ids(ids) -> str:
    return ", ".join(map(str, ids))


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
    if report.get("missing_banks"):
        lines += [f"> **{n}**" for n in missing_notes(report)] + [""]
    if kind == "scorecard":
        for c in report["scorecards"]:
            v = c["verdicts"]
            lines.append(f"## {c['agent']} {c['version']}")
            lines.append(f"pass {v['pass']} · needs_human {v['needs_human']} · fail {v['fail']} "
                         f"· not_graded {v['not_graded']} · replies "
                         + ", ".join(f"{k} {n}" for k, n in sorted(c["run_status"].items())))
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
        lines.append(f"Rules: {rules(report['settings'])}")
        if report["excluded_run_ids"]:
            lines.append(f"\nRuns left out (excluded): "
                         f"{', '.join(map(str, report['excluded_run_ids']))}")
        lines.append("")
        for a in report["agents"]:
            lines.append(f"## {a['agent']}: {a['summary']['headline']}")
            lines.append("")
            lines.append(f"{a['runs']} run(s), versions {', '.join(a['versions'])}")
            lines += notes(a, "- ")
            lines.append("")
            lines += _md_table(*category_table(a))
            lines.append("")
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
    elif kind == "rebalance":
        for a in report["agents"]:
            for q in a["questions"]:
                broken = q["role"] in ("broken", "unstable")
                out.append((a["agent"], q["case_no"], f"{q['role']}: {q['why']}" if broken
                            else None, None))
    elif kind == "discrimination":
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
        # ESC, NUL or a lone surrogate in a reply would make the file unreadable to CI
        suites.setdefault(xml_text(suite), []).append(
            (xml_text(name), failure and xml_text(failure), skipped and xml_text(skipped)))
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
    from exam.marks import paint

    report = terminal_data(report)  # a reply's ESC must not reach the terminal raw
    lines = [f"grader {report['grader_version']}  ·  bank {digests(report)}  ·  "
             f"{report['agent']}: {report['old']} "
             f"(runs {_ids(report['old_run_ids'])}) → {report['new']} (runs {_ids(report['new_run_ids'])})"]
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
    from exam.marks import paint

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


def text_discrimination(report: dict[str, Any], colour: bool = False,
                        details: bool = False) -> str:
    """The matrix; regression guards (every version passes every repeat) fold into one line
    per agent unless ``details``: they say nothing a reader must act on."""
    report = terminal_data(report)
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
                                             "underpowered", "near_floor", "new", "no_data",
                                             "regression_guard"))}
        guards = [q["case_no"] for q in a["questions"] if q["class"] == "regression_guard"]
        for q in sorted(a["questions"], key=lambda q: (order[q["class"]], q["case_no"])):
            if q["class"] == "regression_guard" and not details:
                continue
            cells = []
            for r in q["pass_rates"]:
                shade = "" if r["rate"] is None else _SHADE[min(4, int(r["rate"] * 4 + 0.5))]
                cells.append((shade + " " + _frac(r)).rjust(width + 1))
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


def _width(text: str) -> int:
    """Columns a string takes on a terminal: CJK characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pairs(q: dict[str, Any]) -> str:
    return "; ".join(f"{p['from']}→{p['to']} {p['direction']}" for p in q["pairs"])


def _rebalance_table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    versions: list[str] = []
    for a in report["agents"]:
        versions += [v for v in a["versions"] if v not in versions]
    head = ["agent", "case_no", "category", "severity", "role", "action", "class", "difficulty",
            *versions, "latest_version", "latest_rate", "band", "pairs_differ", "unstable_runs",
            "item_rest", "item_rest_note", "category_add", "role_before", "why"]
    rows = []
    for a in report["agents"]:
        add = {p["category"]: p["add"] for p in a["categories"]}
        d = a.get("since_snapshot")
        before = {c["case_no"]: c["before"] for c in d["role_changes"]} if d else {}
        for q in a["questions"]:
            by = {r["version"]: _frac(r) for r in q["per_version"]}
            note = "" if a["item_rest"]["shown"] else a["item_rest"]["reason"]
            unstable = "; ".join(f"{u['version']}: {', '.join(u['runs'])}"
                                 for u in q["unstable_runs"])
            rows.append([a["agent"], q["case_no"], q["category"], q["severity"], q["role"],
                         q["action"], q["class"], _num(q["difficulty"], 2),
                         *(by.get(v, "") for v in versions), q["latest"]["version"],
                         _num(q["latest"]["rate"], 2), q["latest"]["band"] or "", _pairs(q),
                         unstable, _num(q["item_rest"], 2) if q["item_rest"] is not None else "",
                         note, add[q["category"]], before.get(q["case_no"], ""), q["why"]])
    return head, rows


def text_rebalance(report: dict[str, Any], colour: bool = False) -> str:
    from exam.marks import paint

    report = terminal_data(report)  # a reply's ESC must not reach the terminal raw
    lines = [f"grader {report['grader_version']}  ·  bank {digests(report)}"
             + (f"  ·  since {report['since']}" if report["since"] else ""),
             f"rules: {rules(report['settings'])}"]
    if report["excluded_run_ids"]:
        lines.append(f"runs left out (excluded): {', '.join(map(str, report['excluded_run_ids']))}")
    outcome = {"broken": "fail", "unstable": "fail", "too_hard": "needs_human",
               "too_easy": "needs_human", "separates": "pass", "informative": "pass"}
    for a in report["agents"]:
        lines.append("")
        lines.append(f"{a['agent']}: {a['runs']} run(s), versions {', '.join(a['versions'])}; "
                     f"{a['summary']['headline']}")
        lines += notes(a, "  ")
        head, rows = category_table(a)
        widths = [max(_width(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
        for row in (head, *rows):
            pads = [" " * (w - _width(str(v))) for v, w in zip(row, widths, strict=True)]
            lines.append("  " + "  ".join(f"{v}{pad}" if i == 0 else f"{pad}{v}"
                                          for i, (v, pad) in enumerate(zip(row, pads,
                                                                           strict=True))))
        lines.append("  advice:")
        lines += [f"    - {adv['text']}" for adv in a["advice"]] or ["    - nothing to change"]
        width = max(6, *(len(v) for v in a["versions"]))
        lines.append(f"  {'case':<8} {'role':<13}" + "".join(v.rjust(width + 1)
                                                             for v in a["versions"])
                     + f" {'band':>6} {'item-rest':>9}  why")
        for q in a["questions"]:
            cells = "".join(_frac(r).rjust(width + 1) for r in q["per_version"])
            ir = _num(q["item_rest"], 2) if q["item_rest"] is not None else "–"
            line = (f"  {q['case_no']:<8} {q['role']:<13}{cells} {q['latest']['band'] or '–':>6} "
                    f"{ir:>9}  {q['why']}")
            lines.append(paint(line, outcome[q["role"]], colour) if q["role"] in outcome
                         else line)
            if q["pairs"]:
                lines.append(f"           versions differ: {_pairs(q)}")
            for fc in q["failing_checks"][:1] if q["role"] in ("broken", "too_hard") else ():
                lines.append(f"           audit {fc['name']} ({fc['times']}×): {fc['evidence']}")
    return "\n".join(lines)


def missing_notes(report: dict[str, Any]) -> list[str]:
    """One line per run left out of a report because its bank cannot be loaded."""
    return [f"note: {m['message']}" for m in report.get("missing_banks", [])]


def render(kind: str, report: dict[str, Any], fmt: str, colour: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report, ensure_ascii=False, indent=2)
    if fmt == "csv":
        return to_csv(kind, report)
    if fmt == "markdown":
        return to_markdown(kind, report)
    if fmt == "junit":
        return to_junit(kind, report)
    if fmt == "html":  # one self-contained file: the dashboard's templates, CSS and charts
        from exam.reports import html

        return html.render(kind, report)
    if kind == "scorecard":
        from exam.reports.scorecard import render_text

        return render_text(report, colour)
    text = {"compare": text_compare, "discrimination": text_discrimination,
            "rebalance": text_rebalance}[kind](report, colour)
    return "\n".join([*missing_notes(report), text])
