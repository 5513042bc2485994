"""Before/after for one agent: regressions, fixes, newly flaky, the checks that moved, cost.

Both versions are re-graded with today's grader and bank first, so the comparison is
one rubric against itself. A score change is explained by the checks that moved, not only
by the total: a total alone credits a change with what a disclaimer's wording did.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from exam.errors import ExamError
from exam.marks import paint
from exam.records import RunState
from exam.reports import bank_changes, kinds, rubric_drift, verdict
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.scorecard import COST_KEYS, SEVERITY_ORDER, cost_summary
from exam.reports.stats import fisher_worse, rate_of_cells
from exam.store import Run
from exam.textsafe import terminal_data
from graders import GRADER_VERSION


class CompareError(ExamError):
    """The two versions asked for cannot be compared as asked (the same version twice, two
    rubrics): bad input, never a verdict."""


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
        # cells read from a kept run share one list of checks per distinct outcome: count
        # each list's cells, then read each list once (in the order first seen, so the
        # evidence is still the first failing cell's)
        lists: dict[int, list] = {}
        for c in cells:
            entry = lists.get(id(c.checks))
            if entry is None:
                lists[id(c.checks)] = [c.checks, 1]
            else:
                entry[1] += 1
        bad, seen, evidence = Counter(), Counter(), {}
        for checks, n in lists.values():
            for chk in checks:
                seen[chk.name] += n
                if chk.outcome in ("fail", "needs_human"):
                    bad[chk.name] += n
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


def build(regraded: Regraded, agent: str, old: str, new: str,
          settings: verdict.Settings | None = None,
          levels: dict[str, float] | None = None) -> dict[str, Any]:
    """Compare two versions; ``regraded`` may hold the agent's other versions too (history)."""
    settings = settings or verdict.Settings()
    if old == new:
        # a version against itself shows no change whatever it answered: never a ship
        raise CompareError(f"cannot compare {agent} {old} with itself: give the version before "
                        "the change as OLD and the changed one as NEW")
    cells = [c for c in regraded.cells if c.agent == agent]
    runs = [r for r in regraded.runs if r.agent == agent]
    _comparable(regraded, cells, runs, agent, old, new)
    # OLD's and NEW's runs alone: what the agent's other versions answered (or which of
    # their questions today's bank dropped) decides nothing here, and a page asking for one
    # compare reads those two versions' cells, not a year of them
    cells = [c for c in cells if c.version in (old, new)]
    runs = [r for r in runs if r.version in (old, new)]
    by, meta = _by_question(cells)
    _planned_meta(regraded, runs, meta)
    skipped, decision = _decided(regraded, runs, cells, by, meta, agent, old, new, settings,
                                 levels)
    tests = {t["case_no"]: t for t in decision["tests"]}
    groups: dict[str, list[dict[str, Any]]] = {k: [] for k in GROUPS}
    for case_no in sorted(by):
        o, n = by[case_no].get(old, []), by[case_no].get(new, [])
        row = _row(case_no, meta[case_no], o, n, tests.get(case_no))
        groups[_group(row, o, n, case_no in skipped, settings)].append(row)
    for rows in groups.values():
        rows.sort(key=lambda r: (SEVERITY_ORDER.get(r["severity"], 1), r["case_no"]))
    decision["reason"] = verdict.summary_line(decision)
    return _report(regraded, runs, cells, agent, old, new, decision, groups)


def _comparable(regraded: Regraded, cells: list[GradedCell], runs: list[Run], agent: str,
                old: str, new: str) -> None:
    """An ``ExamError`` unless OLD and NEW both have stored runs, every one of them read (its
    bank loads), graded by one rubric."""
    versions = {c.version for c in cells} | {r.version for r in runs}
    # a run left out because its bank no longer loads (moved, or refused by a newer bank
    # check) would be a verdict over the other runs alone: one that failed where they passed
    # reads ship. So neither OLD's nor NEW's is read without it
    lost = [m for m in regraded.missing_banks if m["agent"] == agent
            and m["version"] in (old, new)]
    if lost:
        raise ExamError(f"cannot compare {agent} {old} → {new}: "
                        + "; ".join(m["message"] for m in lost)
                        + " (fix the bank, or leave such a run out of every report: exam runs "
                          "exclude RUN_ID --reason …)")
    for label in (old, new):
        if label not in versions:
            known = ", ".join(sorted(versions)) or "none"
            raise ExamError(f"no stored run of {agent} version {label!r} (versions: {known})")
    _one_rubric(regraded, runs, agent, old, new)


ByQuestion = dict[str, dict[str, list[GradedCell]]]  # case_no → version → cells


Meta = dict[str, tuple[str, str]]  # case_no → (severity, category)


def _by_question(cells: list[GradedCell]) -> tuple[ByQuestion, Meta]:
    """OLD's and NEW's cells by question and version, and each question's severity and
    category (its first cell's)."""
    by: ByQuestion = defaultdict(lambda: defaultdict(list))
    meta: Meta = {}
    for c in cells:
        by[c.case_no][c.version].append(c)
        if c.case_no not in meta:
            meta[c.case_no] = (c.severity, c.category)
    return by, meta


def _planned_meta(regraded: Regraded, runs: list[Run], meta: Meta) -> None:
    """Add to ``meta`` every question the runs planned that none of their cells answers (a
    finished run whose cells for it never arrived), from today's bank: a question asked and
    never answered is missing data, decided as such, never left out of the verdict."""
    for r in runs:
        bank = regraded.banks.get(r.bank_path)
        items = bank.by_case() if bank is not None else {}
        for case_no, _ in r.plan:
            item = items.get(case_no)
            if case_no not in meta and item is not None:
                meta[case_no] = (item.question.severity, item.category)


def _decided(regraded: Regraded, runs: list[Run], cells: list[GradedCell], by: ByQuestion,
             meta: Meta, agent: str, old: str, new: str,
             settings: verdict.Settings, levels: dict[str, float] | None
             ) -> tuple[set[str], dict[str, Any]]:
    """(the questions OLD's runs left out, the verdict's decision): decided per question,
    then made pending where a rubric loosened since OLD ran or a removed question mattered."""
    planned = verdict.planned_cells(runs)
    removed = {case for r in runs for case in regraded.removed.get(r.id, [])}
    planned = {k: v for k, v in planned.items() if k not in removed}
    skipped = skipped_by(regraded, runs, planned, old, new)
    questions = verdict.questions_from(by, planned, meta, old, new, skipped)
    decision = verdict.decide(questions, settings, levels,
                              unfinished=unfinished_runs(runs, cells, regraded.removed, old, new),
                              labels={"agent": agent, "old": old, "new": new})
    rubric_drift.apply(decision, rubric_drift.drift(regraded, runs, cells, old, new,
                                                    {q.case_no for q in questions}),
                       questions, by, settings, old, new, regraded, agent)
    bank_changes.apply(decision, bank_changes.removed(regraded, runs, agent, old, new, settings))
    return skipped, decision


def _row(case_no: str, meta: tuple[str, str], o: list[GradedCell], n: list[GradedCell],
         t: dict[str, Any] | None) -> dict[str, Any]:
    """One question's line: each side's state and counts, the checks that moved, its test."""
    so, po, go = state(o)
    sn, pn, gn = state(n)
    return {"case_no": case_no, "category": meta[1], "severity": meta[0],
            "old": {"state": so, "passes": po, "graded": go, "rate": po / go if go else None},
            "new": {"state": sn, "passes": pn, "graded": gn, "rate": pn / gn if gn else None},
            "changed_since_run": any(c.changed for c in o + n),
            "checks_moved": moved_checks(o, n),
            "test": None if t is None else {k: t.get(k) for k in (
                "p", "q", "effect", "state", "repeats_needed", "more_repeats", "rule",
                "baseline")}}


def _group(row: dict[str, Any], o: list[GradedCell], n: list[GradedCell], skipped: bool,
           settings: verdict.Settings) -> str:
    """Which of ``GROUPS`` a question's line is shown in."""
    t = row["test"]
    so, go = row["old"]["state"], row["old"]["graded"]
    sn, gn = row["new"]["state"], row["new"]["graded"]
    if not o and skipped:
        return "not_asked_in_old"
    if not o and (t is None or not t["baseline"]["answered"]):
        return "only_new"
    if not n:
        return "only_old"
    if t and t["state"] == "hold":
        return "regressions"
    if t and t["state"] == "undecided":
        return "undecided"
    if _fixed(row, settings):
        return "fixes"
    if sn == "flaky" and so in ("pass", "fail") and go >= gn:
        # newly flaky only when the old version had at least as many answered repeats:
        # 3/3 → 9/10 or 0/3 → 1/10 is more repeats, not a new behaviour
        return "flaky"
    return "unchanged"


def _report(regraded: Regraded, runs: list[Run], cells: list[GradedCell], agent: str, old: str,
            new: str, decision: dict[str, Any], groups: dict[str, list[dict[str, Any]]]
            ) -> dict[str, Any]:
    """The compare report: the verdict, the grouped questions, counts, rates and cost."""
    old_cells = [c for c in cells if c.version == old]
    new_cells = [c for c in cells if c.version == new]
    co, cn = (cost_summary(cs, total=False) for cs in (old_cells, new_cells))
    cost_delta = {k: {"old": co[k], "new": cn[k],
                      "delta_p50": None if co[k]["p50"] is None or cn[k]["p50"] is None
                      else cn[k]["p50"] - co[k]["p50"]} for k in COST_KEYS}
    new_fails = sorted({c.case_no for c in new_cells if c.verdict == "fail"})
    critical = [r["case_no"] for r in groups["regressions"] if r["severity"] == "critical"]
    critical_failing = sorted({c.case_no for c in new_cells
                               if c.verdict == "fail" and c.severity == "critical"})

    def counts(cs):
        v = Counter(c.verdict or c.run_status for c in cs)
        return dict(v)

    return {
        "grader_version": GRADER_VERSION,
        # the banks OLD's and NEW's runs are graded by (one rubric: _one_rubric), the latest's
        "bank_digests": {b.agent: b.digest for b in (
            regraded.banks.get(r.bank_path) for r in sorted(runs, key=lambda r: r.id)) if b},
        "agent": agent, "old": old, "new": new,
        "verdict": decision["word"], "exit_code": decision["exit_code"], "decision": decision,
        "old_run_ids": sorted({r.id for r in runs if r.version == old}),
        "new_run_ids": sorted({r.id for r in runs if r.version == new}),
        **groups,
        "critical_regressions": critical, "critical_failing": critical_failing,
        "new_failing": new_fails,
        "counts": {"old": counts(old_cells), "new": counts(new_cells)},
        # each side's pass rate: the mean of per-question rates with its interval
        "rates": {"old": rate_of_cells(old_cells), "new": rate_of_cells(new_cells)},
        "cost": cost_delta,
        # OLD's and NEW's runs left out (a compare with one is refused: _comparable), none
        "missing_banks": [m for m in regraded.missing_banks
                          if m["agent"] == agent and m["version"] in (old, new)],
    }


def skipped_by(regraded: Regraded, runs: list[Run], planned: dict[str, dict[str, int]],
               old: str, new: str) -> set[str]:
    """Questions NEW asked that OLD's runs did not, though they were in OLD's bank: left out
    with --only or --category, not new in the bank. The bank each run was made with is kept
    since schema 12; an older run counts as having had the question: that it was added since
    is not recorded, and calling it new could let a regression through."""
    old_runs = [r for r in runs if r.version == old]
    unasked = {c for c, v in planned.items() if v.get(new) and not v.get(old)}
    out = set()
    for case_no in unasked:
        for r in old_runs:
            kept = regraded.run_banks.get(r.id)
            if kept is not None:
                if case_no in kept.get("questions", {}):
                    out.add(case_no)
            else:
                out.add(case_no)  # today's bank, or not recorded: never called new
    return out


def unfinished_runs(runs: list[Run], cells: list[GradedCell], removed: dict[int, list[str]],
                    old: str, new: str) -> list[dict[str, Any]]:
    """Runs of OLD or NEW still running (or interrupted) with cells yet to come. A queued run
    is not among ``runs`` (no report reads one: exam.reports.selection), so it holds nothing."""
    arrived = Counter(c.run_id for c in cells)
    out = []
    for r in sorted(runs, key=lambda r: r.id):
        status = RunState.QUEUED if r.status == RunState.QUEUED else r.shown_status
        if r.version not in (old, new) or status not in (*RunState.LIVE, RunState.INTERRUPTED):
            continue
        gone = set(removed.get(r.id, ()))
        planned = sum(1 for case_no, _ in r.plan if case_no not in gone) * r.repeats
        if arrived[r.id] < planned:
            out.append({"run_id": r.id, "version": r.version, "status": status,
                        "arrived": arrived[r.id], "planned": planned})
    return out


def _one_rubric(regraded: Regraded, runs: list[Run], agent: str, old: str, new: str) -> None:
    """Both versions graded by one rubric: runs read from two bank files whose question of
    the same case_no differs would compare a lenient copy against the real one."""
    seen: dict[str, tuple[str, str, Any]] = {}  # case_no → (key, bank path, run)
    for r in sorted(runs, key=lambda r: (r.version != old, r.id)):
        bank = regraded.banks.get(r.bank_path)
        if r.version not in (old, new) or bank is None:
            continue
        for item in bank.items:
            # the rubric and the bank's options; the order its fields are written in is not
            # part of it (the grade cache's question_key keeps that too)
            key = f"{item.digest}:{int(item.question.fold_script)}"
            first = seen.setdefault(item.case_no, (key, r.bank_path, r))
            if first[0] != key:
                raise CompareError(
                    f"cannot compare {agent} {old} → {new}: {item.case_no} reads differently in "
                    f"{first[1]} (run {first[2].id}, {first[2].version}) and {r.bank_path} "
                    f"(run {r.id}, {r.version}); "
                    "one rubric is needed: run both versions against the same bank file")


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


# -- renderings (exam/reports/kinds.py) ---------------------------------------------------

GROUPS = ("regressions", "undecided", "fixes", "flaky", "unchanged", "only_old",
          "not_asked_in_old", "only_new")


def table(report: dict[str, Any]) -> kinds.Table:
    """One row per question, grouped by what changed."""
    head = ["agent", "change", "case_no", "category", "severity", "old", "new", "checks_moved"]
    rows = []
    for group in GROUPS:
        for r in report[group]:
            moved = "; ".join(f"{m['check']} {m['direction']}" for m in r["checks_moved"])
            rows.append([report["agent"], group, r["case_no"], r["category"], r["severity"],
                         kinds.frac(r["old"]), kinds.frac(r["new"]), moved])
    return head, rows


def baseline_words(report: dict[str, Any]) -> str:
    """" vs v1, last shipped" when the report says which baseline it used (exam.reports.baseline);
    "" for a report built without one (the old pair's header names OLD already)."""
    base = report.get("baseline")
    return f" vs {base['label']}" if base else ""


def still_failing_words(report: dict[str, Any]) -> str:
    """The questions that failed in the baseline and fail still, in one line ("" for none)."""
    carried = report.get("still_failing") or []
    if not carried:
        return ""
    shown = ", ".join(f"{x['case_no']} ({x['severity']}, {x['old']} → {x['new']})"
                      for x in carried[:5])
    more = f" and {len(carried) - 5} more" if len(carried) > 5 else ""
    return f"still failing since {report['old']}: {shown}{more}"


def markdown(report: dict[str, Any]) -> list[str]:
    carried = still_failing_words(report)
    lines = [f"## {report['agent']}: {report['old']} → {report['new']}",
             f"**Verdict: {report['verdict']}**{baseline_words(report)} "
             f"(exit {report['exit_code']}): {report['decision']['reason']}"
             + (f"\n\n**{carried}**" if carried else ""), "",
             f"{len(report['regressions'])} regression(s), {len(report['fixes'])} fix(es), "
             f"{len(report['flaky'])} newly flaky, {len(report['unchanged'])} unchanged"]
    if report["critical_regressions"]:
        lines.append(f"\n**Critical regressions: {', '.join(report['critical_regressions'])}**")
    gone = report["decision"].get("removed") or []
    if gone:
        lines.append(f"\nRemoved from the bank since {report['old']} ran: " + "; ".join(
            bank_changes.describe(e, report["old"], report["new"]) for e in gone))
    lines.append("")
    head, rows = table(report)
    return lines + kinds.md_table(head, [r for r in rows if r[1] != "unchanged"])


def junit_cases(report: dict[str, Any]) -> list[kinds.JunitCase]:
    """The verdict (failed unless ship) and a testcase per question: failed when it regressed."""
    suite = f"{report['agent']} {report['old']}→{report['new']}"
    out = []
    if report["verdict"] != "ship":
        out.append((suite, "verdict", f"{report['decision']['reason']}", None))
    for group in GROUPS:
        for r in report[group]:
            msg = None
            if group == "regressions":
                moved = "; ".join(f"{m['check']}: {(m['evidence'] or {}).get('evidence', '')}"
                                  for m in r["checks_moved"] if m["direction"] == "worse")
                msg = f"regression {kinds.frac(r['old'])} → {kinds.frac(r['new'])}: {moved}"
            out.append((suite, r["case_no"], msg, None))
    return out


def text(report: dict[str, Any], colour: bool = False) -> str:
    report = terminal_data(report)  # a reply's ESC must not reach the terminal raw
    lines = [f"grader {report['grader_version']}  ·  bank {kinds.digests(report)}  ·  "
             f"{report['agent']}: {report['old']} "
             f"(runs {kinds.ids(report['old_run_ids'])}) → {report['new']} "
             f"(runs {kinds.ids(report['new_run_ids'])})"]
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
                  f"{', '.join(base['versions'])}; p = {kinds.num(t.get('p'))}, q = {kinds.num(t.get('q'))})"
                  if base and len(base.get("versions", [])) > 1 else
                  f"  (p = {kinds.num(t.get('p'))}, q = {kinds.num(t.get('q'))})" if t else "")
            lines.append(paint(f"  {label:<11} {r['case_no']} ({r['severity']}, {r['category']})  "
                               f"{kinds.frac(r['old'])} → {kinds.frac(r['new'])}{vs}", outcome, colour))
            for m in r["checks_moved"]:
                ev = (m["evidence"] or {}).get("evidence", "")
                lines.append(f"      {m['check']} {m['direction']} "
                             f"({kinds.pct(m['old_fail_rate'])} → {kinds.pct(m['new_fail_rate'])} failing)"
                             + (f": {ev}" if ev else ""))
    for group, label in (("only_old", "only in old"),
                         ("not_asked_in_old", f"not asked in {report['old']} (in its bank)"),
                         ("only_new", "only in new")):
        if report[group]:
            lines.append(f"  {label}: {', '.join(r['case_no'] for r in report[group])}")
    for e in report["decision"].get("removed") or []:
        lines.append(paint(f"  removed from the bank since {report['old']} ran: "
                           + bank_changes.describe(e, report["old"], report["new"]),
                           "needs_human" if e["mattered"] else "", colour))
    changed = [r["case_no"] for g in ("regressions", "fixes", "flaky", "unchanged")
               for r in report[g] if r["changed_since_run"]]
    if changed:
        lines.append(f"  note: rubric changed since the runs for {', '.join(changed)}")
    lines.append("  cost (p50 old → new):")
    for key, c in report["cost"].items():
        o, n = c["old"]["p50"], c["new"]["p50"]
        delta = c["delta_p50"]
        lines.append(f"    {key:<12} {kinds.num(o, 4)} → {kinds.num(n, 4)}"
                     + ("" if delta is None else f"  ({delta:+.4g})")
                     + f"   p95 {kinds.num(c['old']['p95'], 4)} → {kinds.num(c['new']['p95'], 4)}")
    return "\n".join(lines)


def verdict_lines(report: dict[str, Any], colour: bool = False) -> list[str]:
    """The verdict word, why, and the evidence rule it was decided under."""

    d = report["decision"]
    tone = {"ship": "pass", "hold": "fail", "incomplete": "fail"}.get(d["word"], "needs_human")
    carried = still_failing_words(report)
    if carried and tone == "pass":  # a failure carried over is never shown in green
        tone = "needs_human"
    st = d["settings"]
    sev = "; ".join(f"{k}: alpha {v['alpha']}, min effect {v['min_effect']:.0%}, "
                    f"min answered {v['min_answered']}" for k, v in st["by_severity"].items())
    lines = [paint(f"VERDICT: {d['word'].upper()}{baseline_words(report)}  "
                   f"(exit {d['exit_code']})" + (f"  ·  {carried}" if carried else ""),
                   tone, colour),
             "  " + d["reason"],
             f"  rule: one-sided Fisher exact (new worse), discrete BH over "
             f"{d['questions_testable']} of {d['questions_tested']} question(s) that can move; "
             f"hold when q ≤ {st['alpha']}, drop ≥ {st['min_effect']:.0%}, "
             f"≥ {st['min_answered']} answered repeats each side"
             + (f"; {sev}" if sev else "") + f"; coverage floor {st['coverage']:.0%}"]
    for u in d["undecided"]:
        if u.get("repeats_needed") is not None:
            lines.append(f"  {u['case_no']}: if its pass rate really is "
                         f"{kinds.pct(u['assumed_new_rate'])} (baseline {u['old']}), "
                         f"{u['repeats_needed']} answered repeats of the new version detect the "
                         f"drop with ≥ 80% power at level {u['level_for_repeats']:.3g} "
                         f"(--settle's level: alpha / questions that can get worse, "
                         f"1% of it at each look before its last)")
        if u.get("baseline_short"):
            lines.append(f"  {u['case_no']}: the baseline has too few answered repeats: "
                         f"{u['baseline_short']} more of {report['old']}")
    if d["new_questions"]:
        lines.append(f"  new question(s), no baseline: {', '.join(d['new_questions'])}")
    return lines



def charts(report: dict[str, Any]) -> dict[str, Any]:
    """The compare's charts (its kind is registered in exam/reports/baseline.py)."""
    from exam.reports import charts as draw  # this function's own name is charts

    return {"rates": draw.compare_rates(report)}
