"""The rebalance's renderings: terminal text, markdown, csv and junit (exam/reports/kinds.py).

Apart from exam/reports/rebalance.py, which builds the report, because that module is long.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from exam.marks import paint
from exam.reports import charts, kinds, rebalance
from exam.reports.selection import report_runs
from exam.textsafe import terminal_data


def _width(text: str) -> int:
    """Columns a string takes on a terminal: CJK characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def rules(settings: dict[str, Any]) -> str:
    low, high = settings["band"]
    return (f"band {low:.0%}–{high:.0%} pass rate on the latest version · retire a guard only "
            f"after {settings['min_versions']} version(s) with ≥ {settings['min_repeats']} graded "
            f"repeats, never a critical one, keeping {settings['keep_guards']} per category · "
            f"want {settings['target_informative']} informative per category · item-rest from "
            f"{settings['min_runs_item_rest']} runs · FDR {settings['alpha']:g}")


def notes(a: dict[str, Any], bullet: str) -> list[str]:
    """The lines about history and omissions: the change since the last snapshot, item-rest,
    run stability."""
    out = []
    d = a.get("since_snapshot")
    if d:
        when = dt.datetime.fromtimestamp(d["previous_at"], dt.UTC).strftime("%Y-%m-%d")
        out.append(f"{bullet}{d['headline']} (snapshot of {when}, versions "
                   f"{', '.join(d['previous_versions'])})")
        for c in d["role_changes"]:
            out.append(f"{bullet}  {c['case_no']}: {c['before']} → {c['after']}")
        for m in d["difficulty_moves"]:
            out.append(f"{bullet}  {m['case_no']}: latest pass rate {kinds.pct(m['before'])} → "
                       f"{kinds.pct(m['after'])}")
        if d["added"]:
            out.append(f"{bullet}  added: {', '.join(d['added'])}")
        if d["removed"]:
            out.append(f"{bullet}  removed: {', '.join(d['removed'])}")
        for cat, counts in d["categories"].items():
            moved = [f"{k} {v['before']} → {v['after']}" for k, v in counts.items()
                     if v["before"] != v["after"]]
            if moved:
                out.append(f"{bullet}  {cat}: {', '.join(moved)}")
    else:
        out.append(f"{bullet}no earlier snapshot (save one with --save)")
    ir = a["item_rest"]
    out.append(f"{bullet}{ir['reason']}" if not ir["shown"] else f"{bullet}item-rest: {ir['reason']}")
    if a["stability"]["note"]:
        out.append(f"{bullet}{a['stability']['note']}")
    return out


def category_table(a: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    head = ["category", "questions", "informative", "guards kept", "retire", "too early", "add",
            "harden", "more repeats", "fix", "audit"]
    rows = [[p["category"], p["questions"], p["informative"], len(p["guards_kept"]),
             len(p["retire"]), len(p["too_early_to_retire"]), p["add"], len(p["harden"]),
             len(p["add_repeats"]), len(p["fix"]), len(p["audit"])] for p in a["categories"]]
    return head, rows


def _pairs(q: dict[str, Any]) -> str:
    return "; ".join(f"{p['from']}→{p['to']} {p['direction']}" for p in q["pairs"])


def table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
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
            by = {r["version"]: kinds.frac(r) for r in q["per_version"]}
            note = "" if a["item_rest"]["shown"] else a["item_rest"]["reason"]
            unstable = "; ".join(f"{u['version']}: {', '.join(u['runs'])}"
                                 for u in q["unstable_runs"])
            rows.append([a["agent"], q["case_no"], q["category"], q["severity"], q["role"],
                         q["action"], q["class"], kinds.num(q["difficulty"], 2),
                         *(by.get(v, "") for v in versions), q["latest"]["version"],
                         kinds.num(q["latest"]["rate"], 2), q["latest"]["band"] or "", _pairs(q),
                         unstable, kinds.num(q["item_rest"], 2) if q["item_rest"] is not None else "",
                         note, add[q["category"]], before.get(q["case_no"], ""), q["why"]])
    return head, rows


def text(report: dict[str, Any], colour: bool = False) -> str:
    report = terminal_data(report)  # a reply's ESC must not reach the terminal raw
    lines = [f"grader {report['grader_version']}  ·  bank {kinds.digests(report)}"
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
            cells = "".join(kinds.frac(r).rjust(width + 1) for r in q["per_version"])
            ir = kinds.num(q["item_rest"], 2) if q["item_rest"] is not None else "–"
            line = (f"  {q['case_no']:<8} {q['role']:<13}{cells} {q['latest']['band'] or '–':>6} "
                    f"{ir:>9}  {q['why']}")
            lines.append(paint(line, outcome[q["role"]], colour) if q["role"] in outcome
                         else line)
            if q["pairs"]:
                lines.append(f"           versions differ: {_pairs(q)}")
            for fc in q["failing_checks"][:1] if q["role"] in ("broken", "too_hard") else ():
                lines.append(f"           audit {fc['name']} ({fc['times']}×): {fc['evidence']}")
    return "\n".join(lines)



def markdown(report: dict[str, Any]) -> list[str]:
    lines = [f"Rules: {rules(report['settings'])}"]
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
        lines += kinds.md_table(*category_table(a))
        lines.append("")
        lines += [f"- {adv['text']}" for adv in a["advice"]] or ["- nothing to change"]
        lines.append("")
    return lines + kinds.md_table(*table(report))


def junit_cases(report: dict[str, Any]) -> list[kinds.JunitCase]:
    """A testcase per question: failed when it is broken or unstable."""
    out = []
    for a in report["agents"]:
        for q in a["questions"]:
            broken = q["role"] in ("broken", "unstable")
            out.append((a["agent"], q["case_no"], f"{q['role']}: {q['why']}" if broken
                        else None, None))
    return out


def _charts(report: dict[str, Any]) -> dict[str, Any]:
    return {a["agent"]: charts.roles(a) for a in report["agents"] if a["questions"]}


# -- assembly (exam/reports/kinds.py) -------------------------------------------------------

def _matching(store: Any, args: kinds.Args) -> list:
    return report_runs(store, args.get("agent"), since=args.get("since"))


def _runs(store: Any, args: kinds.Args) -> list:
    """The runs a rebalance counts (``rebalance.counted_runs``) of those that match."""
    runs = rebalance.counted_runs(_matching(store, args))
    if not runs:
        raise rebalance.RebalanceError("every matching run is excluded: nothing to rebalance")
    return runs


def _assembled(inputs: kinds.Inputs, args: kinds.Args) -> dict[str, Any]:
    since = args.get("since")
    left_out = [r.id for r in _matching(inputs.store, args) if r not in inputs.runs]
    return rebalance.build(inputs.cells(), since.strftime("%Y-%m-%d") if since else None,
                           args.get("settings"), inputs.store, left_out)


KIND = kinds.register(kinds.ReportKind(
    name="rebalance", text=kinds.with_notes(text), table=table, markdown=markdown,
    junit_cases=junit_cases, html_heading=False, html_template="_rebalance.html",
    html_title=lambda _r: "Rebalance", charts=_charts, build=_assembled, runs=_runs,
    params=(), api=None, page=None))
