"""Per agent and version: verdict counts, run statuses, categories, cost, outliers, per-cell evidence."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from exam.marks import check_lines, paint
from exam.reports import charts, kinds, same
from exam.reports.graded_runs import LazyChecks
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.selection import report_runs
from exam.reports.stats import median, percentile, rate_of_cells
from exam.textsafe import terminal_data
from graders import GRADER_VERSION, CheckResult
from graders.model import RUN_STATUSES
from graders.trajectory import NO_STEPS

VERDICTS = ("pass", "needs_human", "fail", "not_graded")
SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2}
COST_KEYS = ("attempts", "model_calls", "tokens", "latency_ms")


def _rate(cells: Sequence[GradedCell]) -> dict[str, Any]:
    rate = rate_of_cells(cells)
    return {"pass_rate": rate["rate"] if rate else None,
            "pass_rate_interval": rate["interval"] if rate else None}


def cost_summary(cells: Sequence[GradedCell], keys: Sequence[str] = COST_KEYS, *,
                 total: bool = True) -> dict[str, dict[str, float | None]]:
    """p50 and p95 (and, with ``total``, the sum) of each cost key over the cells that report
    it: the one place the scorecard, the compare and the overview take cost figures from."""
    out = {}
    for key in keys:
        values = [getattr(c, key) for c in cells if getattr(c, key) is not None]
        out[key] = {"p50": percentile(values, 50), "p95": percentile(values, 95)}
        if total:
            out[key]["total"] = sum(values) if values else None
    return out


def outliers(cells: Sequence[GradedCell]) -> list[dict[str, Any]]:
    """Costly cells even when they passed: a right answer that took two tries is shown."""
    ok = [c for c in cells if c.run_status != "blocked"]
    med_calls = median([c.model_calls for c in ok if c.model_calls is not None])
    med_tokens = median([c.tokens for c in ok if c.tokens is not None])
    latencies = [c.latency_ms for c in ok if c.latency_ms is not None]
    p95_latency = percentile(latencies, 95)
    med_latency = median(latencies)
    found = []
    for c in ok:
        why = []
        if c.attempts > 1:
            why.append(f"{c.attempts} attempts")
        if med_calls and c.model_calls is not None and c.model_calls > 2 * med_calls:
            why.append(f"{c.model_calls} model calls (median {med_calls:g})")
        if med_tokens and c.tokens is not None and c.tokens > 2 * med_tokens:
            why.append(f"{c.tokens} tokens (median {med_tokens:g})")
        # beyond p95 *and* twice the median: p95 alone flags 5% of any run by definition
        if p95_latency and med_latency and c.latency_ms is not None and \
                c.latency_ms > max(p95_latency, 2 * med_latency):
            why.append(f"{c.latency_ms:.0f} ms (p95 {p95_latency:.0f})")
        if why:
            found.append({"case_no": c.case_no, "run_id": c.run_id, "repeat": c.repeat,
                          "verdict": c.verdict, "run_status": c.run_status, "why": why})
    return found


def _usage_unknown(cells: Sequence[GradedCell]) -> dict[str, Any]:
    """Cells whose usage source (n8n executions) could not be read, and the first reason."""
    notes = [c.usage_note for c in cells if c.usage_note.startswith("usage unknown")]
    return {"cells": len(notes), "reason": notes[0] if notes else ""}


def case_order(case: dict[str, Any]) -> tuple:
    """Failures first, by severity; then needs_human; then the rest in bank order."""
    worst = 0 if case["verdicts"].get("fail") else 1 if case["verdicts"].get("needs_human") else 2
    return (worst, SEVERITY_ORDER.get(case["severity"], 1), case["case_no"])


def _held_no_steps(checks: Sequence[CheckResult]) -> bool:
    """A tools check held because the agent reported no steps; a kept cell's checks read from
    their JSON only when it has a tools check at all, and never built."""
    if isinstance(checks, LazyChecks):
        return '"tools"' in checks.raw and any(
            c["name"] == "tools" and c["evidence"] == NO_STEPS for c in checks.as_dicts())
    return any(c.name == "tools" and c.evidence == NO_STEPS for c in checks)


def build(regraded: Regraded, every_cell: bool = True,
          page: tuple[int, int | None] = (0, None)) -> dict[str, Any]:
    """The scorecards of ``regraded``. ``every_cell=False`` (the text scorecard) leaves out the
    cells of questions that passed every repeat with every reply ok (``"cells": []``): the
    text shows none of them, and 10,000 cells as dicts were most of its memory.

    ``page`` (start, limit): only the cells from the start-th to list, at most ``limit`` of
    them (None: all), counted over the scorecards and their questions in the order they are
    listed; every count is still of every cell. A limit adds each question's ``cells_total``
    and the report's ``cells_page`` (where the next page starts). A year of history gives a
    run thousands of cells: the API lists a page of them (docs/service.md)."""
    groups: dict[tuple[str, str], list[GradedCell]] = defaultdict(list)
    for c in regraded.cells:
        groups[(c.agent, c.version)].append(c)
    runs_by_group: dict[tuple[str, str], list] = defaultdict(list)
    for r in regraded.runs:
        runs_by_group[(r.agent, r.version)].append(r)
    cards = []
    shared: dict[str, list[dict]] = {}  # checks by their stored JSON: see GradedCell.as_dict
    start, limit = page
    listed = 0  # cells to list met so far, over every card and question in their order
    for key in sorted(runs_by_group):
        agent, version = key
        cells = groups.get(key, [])
        runs = sorted(runs_by_group[key], key=lambda r: r.id)
        planned = {c for r in runs for c, _ in r.plan}
        planned_cells = sum(r.total_cells for r in runs)
        verdicts = Counter(c.verdict for c in cells if c.verdict)
        statuses = Counter(c.run_status for c in cells)
        by_case: dict[str, list[GradedCell]] = defaultdict(list)
        for c in cells:
            by_case[c.case_no].append(c)
        cases, of_case = [], {}
        for case_no, cs in by_case.items():
            cs.sort(key=lambda c: (c.run_id, c.repeat))
            v = Counter(c.verdict for c in cs if c.verdict)
            graded = sum(v.values())
            cases.append({
                "case_no": case_no, "category": cs[0].category, "severity": cs[0].severity,
                "verdicts": dict(v), "pass_rate": v["pass"] / graded if graded else None,
                "pass_all": graded > 0 and v["pass"] == len(cs),
                "changed_since_run": any(c.changed for c in cs),
            })
            of_case[case_no] = cs if every_cell or not all(
                c.verdict == "pass" and c.run_status == "ok" for c in cs) else []
        cases.sort(key=case_order)
        for case in cases:  # listed in the order the questions are: a page is a slice of it
            cs = of_case[case["case_no"]]
            lo = min(max(start - listed, 0), len(cs))
            hi = len(cs) if limit is None else min(max(start + limit - listed, 0), len(cs))
            case["cells"] = [c.as_dict(shared) for c in cs[lo:hi]]
            if limit is not None:
                case["cells_total"] = len(cs)
            listed += len(cs)
        categories: dict[str, Counter] = defaultdict(Counter)
        for c in cells:
            categories[c.category][c.verdict or "not_run"] += 1
        bank = regraded.banks.get(runs[-1].bank_path)
        critical = sorted({c.case_no for c in cells if c.verdict == "fail"
                           and c.severity == "critical"})
        removed = sorted({q for r in runs for q in regraded.removed.get(r.id, [])})
        # in today's bank but in none of these runs: added since (or left out with --only)
        added = sorted(i.case_no for i in bank.items if i.case_no not in planned) if bank else []
        cards.append({
            "agent": agent, "version": version, "run_ids": [r.id for r in runs],
            "bank_digest": bank.digest if bank else None,
            "run_bank_digests": sorted({r.bank_digest for r in runs}),
            "questions": len(planned), "repeats": max(r.repeats for r in runs),
            "cells_planned": planned_cells, "cells_stored": len(cells),
            "not_run": planned_cells - len(cells) - sum(
                len(regraded.removed.get(r.id, [])) * r.repeats for r in runs),
            "verdicts": {k: verdicts.get(k, 0) for k in VERDICTS},
            # the headline rate: the mean of per-question rates, with its 95% interval
            **_rate(cells),
            "run_status": {k: statuses.get(k, 0) for k in RUN_STATUSES},
            "pass_all_repeats": sum(1 for c in cases if c["pass_all"]),
            "reviewed": sum(1 for c in cells if c.reviewed),
            "review_queue": verdicts.get("needs_human", 0),  # cells
            # distinct replies (identical replies to a question are decided once)
            "review_replies": len({(c.case_no, c.reply_digest) for c in cells
                                   if c.verdict == "needs_human"}),
            # replies that could not be a clean pass: the question expects tool steps and the
            # agent reported none (missing evidence is not a pass)
            "held_no_steps": sum(1 for c in cells if _held_no_steps(c.checks)),
            "critical_failures": critical,
            "changed_questions": sorted(c["case_no"] for c in cases if c["changed_since_run"]),
            "removed_questions": removed,
            "not_in_runs": added,
            "categories": {cat: dict(cnt) for cat, cnt in sorted(categories.items())},
            "cost": cost_summary(cells),
            # n8n's own token estimate (Responses API), and cells whose usage could not be read
            "tokens_estimated": sum(1 for c in cells if c.tokens_estimated),
            "usage_unknown": _usage_unknown(cells),
            "outliers": outliers(cells),
            "cases": cases,
        })
    report = {"grader_version": GRADER_VERSION, "scorecards": cards,
              "missing_banks": regraded.missing_banks}
    if limit is not None:
        shown = max(min(start + limit, listed) - start, 0)
        report["cells_page"] = {"start": start, "limit": limit, "listed": shown,
                                "total": listed,
                                "next": start + limit if start + limit < listed else None}
    return report


def queue_words(card: dict[str, Any]) -> str:
    """The review queue's size, said the same way everywhere (CLI, LINE, dashboard)."""
    replies, cells = card.get("review_replies", card["review_queue"]), card["review_queue"]
    return (f"{replies} distinct repl{'y' if replies == 1 else 'ies'} in "
            f"{cells} cell{'' if cells == 1 else 's'}")


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}{unit}" if v >= 10 else f"{v:g}{unit}"


def _shown(case: dict[str, Any]) -> bool:
    """A question the text scorecard lists: one that failed, waits for a person or went
    unanswered in some repeat."""
    vs = case["verdicts"]
    return bool(vs.get("fail") or vs.get("needs_human")
                or any(c["run_status"] != "ok" for c in case["cells"]))


REPEATS_LISTED = 5  # a question with more cells (over all its runs) is shown by kind of failure
REPEATS_NAMED = 8  # repeats named in such a group before "… and N more"


def _bad_checks(cell: dict[str, Any]) -> list[CheckResult]:
    return [CheckResult(**c) for c in cell["checks"] if c["outcome"] in ("fail", "needs_human")]


def _repeats(cells: list[dict[str, Any]]) -> str:
    """'#2, #4 run 3, …': each repeat (with its run where the question ran in several)."""
    several = len({c["run_id"] for c in cells}) > 1
    named = [f"#{c['repeat']}" + (f" run {c['run_id']}" if several else "")
             for c in cells[:REPEATS_NAMED]]
    more = len(cells) - len(named)
    return ", ".join(named) + (f" and {more} more" if more else "")


def _grouped_lines(cells: list[dict[str, Any]], colour: bool) -> list[str]:
    """A question with many repeats: its failing repeats grouped by which checks failed (each
    group's first repeat shows the evidence), its unanswered ones by what went wrong. Every
    repeat is still in the JSON, CSV and HTML scorecards."""

    failing: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    unanswered: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for cell in cells:
        if cell["verdict"] is None:
            unanswered[(cell["run_status"], cell["error"] or "")].append(cell)
        elif cell["verdict"] != "pass":
            kind = tuple((c["name"], c["outcome"]) for c in cell["checks"]
                         if c["outcome"] in ("fail", "needs_human"))
            failing[(cell["verdict"], cell["reviewed"], kind)].append(cell)
    lines = []
    for (verdict, reviewed, _), group in sorted(failing.items(), key=lambda kv: -len(kv[1])):
        state = verdict + (" (reviewed)" if reviewed else "")
        lines.append(paint(f"      {state} in {len(group)} repeat(s): {_repeats(group)}",
                           verdict, colour))
        lines.extend(check_lines(_bad_checks(group[0]), colour, indent="          "))
    for (status, error), group in sorted(unanswered.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"      {status} in {len(group)} repeat(s): {_repeats(group)}")
        lines.append(f"          {error}")
    return lines


def render_text(report: dict[str, Any], colour: bool = False, details: bool = True) -> str:
    # a reply's ESC must not reach the terminal raw: every string shown is escaped, and only
    # what is shown (escaping all 10,000 cells of a large run took longer than the run's end)
    report = terminal_data({**report, "scorecards": [
        {**card, "cases": [c for c in card["cases"] if details and _shown(c)]}
        for card in report["scorecards"]]})
    lines = [f"grader {report['grader_version']}"]
    lines += [f"note: {m['message']}" for m in report.get("missing_banks", [])]
    for card in report["scorecards"]:
        v, s = card["verdicts"], card["run_status"]
        runs = ",".join(map(str, card["run_ids"]))
        lines.append("")
        lines.append(f"{card['agent']} {card['version']}   run(s) {runs}   bank {card['bank_digest']}"
                     f"   {card['questions']} questions × {card['repeats']} repeat(s)")
        verdict_text = " · ".join(paint(f"{k} {v[k]}", k, colour) for k in VERDICTS)
        trouble = {k: n for k, n in s.items() if k != "ok" and n}
        infra = (" · not answered: " + ", ".join(f"{k} {n}" for k, n in trouble.items())
                 if trouble else "")
        if card["not_run"]:
            infra += f" · not run {card['not_run']}"
        lines.append(f"  {verdict_text}{infra}")
        lines.append(f"  questions passing every repeat: {card['pass_all_repeats']}/{card['questions']}")
        if card["reviewed"] or card["review_queue"]:
            lines.append(f"  review: {queue_words(card)} waiting, "
                         f"{card['reviewed']} verdict(s) set by a person (exam review)")
        if card["held_no_steps"]:
            lines.append(f"  held at needs_human: {card['held_no_steps']} repl(ies) whose agent "
                         "reports no tool steps")
        if card["critical_failures"]:
            lines.append(paint(f"  CRITICAL failing: {', '.join(card['critical_failures'])}",
                               "fail", colour))
        if card["changed_questions"]:
            lines.append(f"  note: rubric changed since the run for "
                         f"{', '.join(card['changed_questions'])} (re-graded with today's)")
        if card["removed_questions"]:
            lines.append(f"  note: no longer in the bank: {', '.join(card['removed_questions'])}")
        if card["not_in_runs"]:
            shown = card["not_in_runs"][:10]
            more = len(card["not_in_runs"]) - len(shown)
            lines.append(f"  note: in today's bank but not in these runs: {', '.join(shown)}"
                         + (f" and {more} more" if more else ""))
        cost = card["cost"]
        est = " (estimated)" if card.get("tokens_estimated") else ""
        lines.append(
            "  cost p50/p95: model calls {}/{} · tokens{} {}/{} · latency {}/{} · attempts {}/{}".format(
                _fmt(cost["model_calls"]["p50"]), _fmt(cost["model_calls"]["p95"]), est,
                _fmt(cost["tokens"]["p50"]), _fmt(cost["tokens"]["p95"]),
                _fmt(cost["latency_ms"]["p50"], " ms"), _fmt(cost["latency_ms"]["p95"], " ms"),
                _fmt(cost["attempts"]["p50"]), _fmt(cost["attempts"]["p95"])))
        if card.get("tokens_estimated"):
            lines.append(f"  tokens (estimated) in {card['tokens_estimated']} cell(s): n8n's own "
                         "count, the provider reported none (Responses API)")
        unknown = card.get("usage_unknown") or {}
        if unknown.get("cells"):
            reason = unknown["reason"].removeprefix("usage unknown: ")
            lines.append(f"  usage unknown in {unknown['cells']} cell(s): {reason}")
        cats = []
        for cat, cnt in card["categories"].items():
            total = sum(cnt.values())
            cats.append(f"{cat} {cnt.get('pass', 0)}/{total}")
        if cats:
            lines.append("  by category: " + " · ".join(cats))
        for o in card["outliers"][:8]:
            state = o["verdict"] or o["run_status"]
            lines.append(f"  cost outlier: {o['case_no']} #{o['repeat']} ({state}): "
                         + ", ".join(o["why"]))
        if len(card["outliers"]) > 8:
            lines.append(f"  … {len(card['outliers']) - 8} more cost outliers")
        if not details:
            continue
        for case in card["cases"]:
            vs = case["verdicts"]
            head = "FAIL" if vs.get("fail") else ("HUMAN" if vs.get("needs_human")
                                                   else "UNANSWERED")
            lines.append(paint(f"  {head:<10} {case['case_no']} ({case['severity']}, {case['category']})"
                               f"  pass {vs.get('pass', 0)}/{len(case['cells'])}"
                               , "fail" if head == "FAIL" else "needs_human", colour))
            if len(case["cells"]) > REPEATS_LISTED:
                lines.extend(_grouped_lines(case["cells"], colour))
                continue
            for cell in case["cells"]:
                tokens = _fmt(cell["tokens"]) + (" (estimated)" if cell.get("tokens_estimated")
                                                 else "")
                figures = (f"attempts {cell['attempts']} · model calls {_fmt(cell['model_calls'])}"
                           f" · tokens {tokens} · {_fmt(cell['latency_ms'], ' ms')}")
                state = cell["verdict"] or cell["run_status"]
                if cell["reviewed"]:
                    state += " (reviewed)"
                lines.append(f"      #{cell['repeat']} run {cell['run_id']}: {state}   {figures}")
                if cell["verdict"] is None:
                    lines.append(f"          {cell['run_status']}: {cell['error']}")
                    continue
                if cell["verdict"] == "pass":
                    continue
                lines.extend(check_lines(_bad_checks(cell), colour, indent="          "))
    return "\n".join(lines)


# -- renderings (exam/reports/kinds.py) ---------------------------------------------------

def table(report: dict[str, Any]) -> kinds.Table:
    """One row per agent × question × repeat."""
    head = ["agent", "version", "case_no", "category", "severity", "repeat", "run_id",
            "run_status", "verdict", "attempts", "model_calls", "tokens", "latency_ms",
            "evidence", "tokens_estimated"]
    rows = [[c["agent"], c["version"], case["case_no"], case["category"], case["severity"],
             cell["repeat"], cell["run_id"], cell["run_status"], cell["verdict"] or "",
             cell["attempts"], cell["model_calls"], cell["tokens"], cell["latency_ms"],
             kinds.evidence(cell["checks"]) or cell.get("error", ""),
             "yes" if cell.get("tokens_estimated") else ""]
            for c in report["scorecards"] for case in c["cases"] for cell in case["cells"]]
    return head, rows


def markdown(report: dict[str, Any]) -> list[str]:
    lines = []
    for c in report["scorecards"]:
        v = c["verdicts"]
        lines.append(f"## {c['agent']} {c['version']}")
        lines.append(f"pass {v['pass']} · needs_human {v['needs_human']} · fail {v['fail']} "
                     f"· not_graded {v['not_graded']} · replies "
                     + ", ".join(f"{k} {n}" for k, n in sorted(c["run_status"].items())))
        if c["critical_failures"]:
            lines.append(f"\n**Critical failing: {', '.join(c['critical_failures'])}**")
        lines.append("")
    head, rows = table(report)
    rows = [r for r in rows if r[8] != "pass"]
    return lines + (kinds.md_table(head, rows) if rows else ["Every reply passed."])


def junit_cases(report: dict[str, Any]) -> list[kinds.JunitCase]:
    """A testcase per agent version × question: failed when a repeat failed or waits for a
    person, skipped when no repeat was answered."""
    out = []
    for c in report["scorecards"]:
        suite = f"{c['agent']} {c['version']}"
        for case in c["cases"]:
            bad = [cell for cell in case["cells"] if cell["verdict"] in ("fail", "needs_human")]
            trouble = [cell for cell in case["cells"] if cell["verdict"] is None]
            if bad:
                msg = " || ".join(f"#{cell['repeat']} {cell['verdict']}: "
                                  f"{kinds.evidence(cell['checks'])}" for cell in bad)
                out.append((suite, case["case_no"], msg, None))
            elif trouble and len(trouble) == len(case["cells"]):
                out.append((suite, case["case_no"], None,
                            f"not answered: {trouble[0]['run_status']} {trouble[0]['error']}"))
            else:
                out.append((suite, case["case_no"], None, None))
    return out


def html_title(report: dict[str, Any]) -> str:
    if len(report["scorecards"]) == 1:
        card = report["scorecards"][0]
        return f"{card['agent']} {card['version']}"
    return "Scorecard"


LINKS = 12  # replies linked per outcome or piece of evidence (the rest counted)
EVIDENCE_SHOWN = 5  # pieces of evidence per question on a page (the rest a link away)
OUTLIERS_SHOWN = 20  # cost outliers listed on a page
LINK_FIELDS = ("run_id", "repeat", "verdict", "run_status", "attempts", "model_calls", "tokens",
               "tokens_estimated", "latency_ms")


def _linked(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first LINKS cells, with what a link to each says of it."""
    return [{k: c.get(k) for k in LINK_FIELDS} for c in cells[:LINKS]]


def shown(report: dict[str, Any], capped: bool) -> dict[str, Any]:
    """What _scorecard.html shows of a scorecard: per question its outcomes and its evidence,
    each line once with how many cells it holds for and the first LINKS of them; ``capped``
    (a page), each question's EVIDENCE_SHOWN most common pieces of evidence and
    OUTLIERS_SHOWN cost outliers. A year of history gives a question thousands of cells and
    hundreds of different failures: a page made of all of them weighed megabytes and cost a
    second to render on every view; this is made once and kept with the page's answer."""
    cards = []
    for card in report["scorecards"]:
        cases = []
        for case in card["cases"]:
            cells = case["cells"]
            lines = same.same_evidence(cells)
            kept = same.most_first(lines, EVIDENCE_SHOWN if capped else None)
            cases.append({**{k: v for k, v in case.items() if k != "cells"}, "n": len(cells),
                          "outcomes": [{"word": g["word"], "n": len(g["cells"]),
                                        "cells": _linked(g["cells"])}
                                       for g in same.by_outcome(cells)],
                          "evidence": [{**{k: v for k, v in line.items() if k != "cells"},
                                        "n": len(line["cells"]), "cells": _linked(line["cells"])}
                                       for line in kept],
                          "evidence_more": len(lines) - len(kept)})
        outliers = card["outliers"]
        shown_outliers = outliers[:OUTLIERS_SHOWN] if capped else outliers
        cards.append({**card, "cases": cases, "outliers": shown_outliers,
                      "outliers_more": len(outliers) - len(shown_outliers)})
    return {**report, "scorecards": cards}


def _charts(report: dict[str, Any]) -> dict[str, Any]:
    return {"verdicts": charts.verdict_counts(report["scorecards"])} if report["scorecards"] else {}


# -- assembly (exam/reports/kinds.py) -------------------------------------------------------

def _runs(store: Any, args: kinds.Args) -> list:
    """Every counted run of the agent and version, or the runs asked for by id (as asked)."""
    return report_runs(store, args.get("agent"), args.get("version"), args.get("run_id") or ())


def _assembled(inputs: kinds.Inputs, args: kinds.Args) -> dict[str, Any]:
    return build(inputs.cells(), every_cell=args.get("every_cell", True),
                 page=(args.get("start") or 0, args.get("limit")))


API_CELLS = 100  # cells on a page of the API's scorecard, unless asked (~1 KB each)

KIND = kinds.register(kinds.ReportKind(
    name="scorecard", text=render_text, table=table, markdown=markdown, junit_cases=junit_cases,
    html_heading=False, html_template="_scorecard.html", html_title=html_title, charts=_charts,
    shown=shown,
    build=_assembled, runs=_runs,
    params=(kinds.Param("run_id", "The run.", "int", many=True, default=()),
            kinds.Param("start", "The first cell to list, counted from 0 over the questions in "
                        "their order (the answer's cells_page.next is the next page's).",
                        "int", default=0, minimum=0),
            kinds.Param("limit", f"Cells to list at most (the API lists {API_CELLS} unless "
                        "asked; every count is of every cell).", "int", minimum=1)),
    api_args={"limit": API_CELLS},
    summary="The run's scorecard, re-graded with today's grader and bank",
    api="/runs/<int:run_id>/scorecard", page=None))
