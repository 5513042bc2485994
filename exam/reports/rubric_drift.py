"""Questions whose rubric changed since the baseline ran, and whether a ship rests on it.

Every report grades OLD and NEW under today's bank, so a rubric loosened in the same change
as the agent passes both: fair between them, and silent. Here each compared question's
rubric today is set against the one OLD's runs were made with (kept in ``run_banks``; the
agent's budget is kept with each run): the verdict names what changed and which way. A
loosened budget can be checked without the old rubric's grader: NEW's and OLD's figures are
held against the budget OLD ran under, and when that reading would hold the question (or
leave it undecided) the ship rests on the loosening, which a person has to accept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exam import rubric
from exam.reports import verdict
from exam.reports.regrade import GradedCell, Regraded
from exam.store import Run

FIGURES = ("attempts", "model_calls", "tokens", "latency_ms")


def _agent_budget(run: Run) -> dict[str, float]:
    return dict(run.settings.get("budget") or {})


def _effective(agent: Mapping[str, float], question: Mapping[str, Any] | None) -> dict:
    return {**agent, **((question or {}).get("budget") or {})}


def drift(regraded: Regraded, runs: Sequence[Run], cells: Sequence[GradedCell],
          old: str, new: str, compared: set[str]) -> list[dict[str, Any]]:
    """One entry per compared question whose rubric differs between OLD's runs and today."""
    old_runs = sorted((r for r in runs if r.version == old), key=lambda r: r.id)
    new_runs = sorted((r for r in runs if r.version == new), key=lambda r: r.id)
    if not old_runs or not new_runs:
        return []
    today, folds = {}, {}
    for r in new_runs + old_runs:
        bank = regraded.banks.get(r.bank_path)
        if bank is not None:
            for item in bank.items:
                today.setdefault(item.case_no, item.raw)
                folds.setdefault(item.case_no, bool(item.question.fold_script))
    now_agent = _agent_budget(new_runs[-1])
    changed_cells = {(c.run_id, c.case_no) for c in cells if c.changed}
    asked = {(c.run_id, c.case_no) for c in cells}
    out = []
    for case_no in sorted(compared):
        now = today.get(case_no)
        if now is None:
            continue
        changes: list[dict[str, Any]] = []
        differ: list[int] = []
        recorded = True
        loose: dict[str, float] = {}  # figure → the tighter budget OLD ran under
        severity = None  # the stricter severity OLD ran under, when it was lowered since
        for r in old_runs:
            kept = regraded.run_banks.get(r.id)
            then = None if kept is None else kept.get("questions", {}).get(case_no)
            if kept is None:  # a run made before schema 12
                if (r.id, case_no) in changed_cells:
                    recorded = False
                    differ.append(r.id)
                    continue
                if (r.id, case_no) not in asked:
                    continue
                # its cells were made with today's question (their digest is today's: every
                # graded field); the agent's budget is kept with every run and read below
                then = now
            if then is None:
                continue  # not in that run's bank
            found = rubric.changes(then, now)
            if kept is not None and bool(kept.get("fold_script")) != folds[case_no]:
                # the bank-wide option every fact and forbidden phrase is matched with
                found.append({"field": "options.fold_script", "then": bool(
                    kept.get("fold_script")), "now": folds[case_no], "direction": "changed"})
            then_agent = _agent_budget(r)
            overridden = set(then.get("budget") or {}) | set(now.get("budget") or {})
            for k in sorted(set(then_agent) | set(now_agent)):
                x, y = then_agent.get(k), now_agent.get(k)
                if k in overridden or x == y:
                    continue
                direction = ("looser" if y is None or (x is not None and y > x) else "stricter"
                             if x is None or y < x else "changed")
                found.append({"field": f"agent budget.{k}", "then": x, "now": y,
                              "direction": direction})
            if not found:
                continue
            differ.append(r.id)
            for ch in found:
                if ch not in changes:
                    changes.append(ch)
            sev = then.get("severity", "major")
            if rubric.SEVERITIES.get(sev, 2) > rubric.SEVERITIES.get(
                    now.get("severity", "major"), 2):
                severity = sev
            then_eff, now_eff = _effective(then_agent, then), _effective(now_agent, now)
            for k, limit in then_eff.items():
                if k in FIGURES and (now_eff.get(k) is None or now_eff[k] > limit):
                    loose[k] = min(limit, loose.get(k, limit))
        if differ:
            out.append({"case_no": case_no, "runs": differ, "recorded": recorded,
                        "loosened": any(c["direction"] == "looser" for c in changes),
                        "changes": changes, "_budget": loose, "_severity": severity})
    return out


def _under(cells: Sequence[GradedCell], budget: Mapping[str, float]) -> verdict.Tally:
    """A tally with every passing cell over ``budget`` read as a fail."""
    passes = fails = 0
    for c in cells:
        if c.verdict == "pass":
            over = any(getattr(c, k) is not None and getattr(c, k) > limit
                       for k, limit in budget.items())
            fails += over
            passes += not over
        elif c.verdict == "fail":
            fails += 1
    return verdict.Tally(passes, fails)


_RANK = {"hold": 3, "incomplete": 2, "undecided": 1}  # how much a question's reading blocks


def _words(decision: Mapping[str, Any]) -> dict[str, str]:
    """Each question's reading in ``decision``: named incomplete, else its test's state."""
    out = {t["case_no"]: t["state"] for t in decision["tests"]}
    for x in decision["incomplete"]["questions"]:
        if _RANK.get(out.get(x["case_no"], ""), 0) < _RANK["incomplete"]:
            out[x["case_no"]] = "incomplete"
    return out


def apply(decision: dict[str, Any], entries: list[dict[str, Any]],
          questions: Sequence[verdict.Question], by: Mapping[str, Mapping[str, list[GradedCell]]],
          settings: verdict.Settings, old: str, new: str) -> None:
    """Name the drift in ``decision``; a ship (or undecided) that rests on a loosened budget or
    a lowered severity becomes ``pending``: read under what OLD ran with, the verdict would
    not ship (the figures against OLD's budget, the question at OLD's severity)."""
    loose = {e["case_no"]: (e.pop("_budget"), e.pop("_severity")) for e in entries}
    alt, touched = [], set()
    for q in questions:
        budget, severity = loose.get(q.case_no, ({}, None))
        if not budget and not severity:
            alt.append(q)
            continue
        touched.add(q.case_no)
        new_t, old_t, base = q.new, q.old, q.baseline
        if budget:
            n = _under(by.get(q.case_no, {}).get(new, []), budget)
            o = _under(by.get(q.case_no, {}).get(old, []), budget)
            new_t = verdict.Tally(n.passes, n.fails, q.new.needs_human, q.new.not_graded,
                                  q.new.trouble)
            old_t = verdict.Tally(o.passes, o.fails, q.old.needs_human, q.old.not_graded,
                                  q.old.trouble)
            base = verdict.Tally(o.passes, o.fails)
        alt.append(verdict.Question(q.case_no, severity or q.severity, q.category, new_t,
                                    old_t, base, q.baseline_versions if not budget else (old,),
                                    q.old_skipped))
    rested = []
    if touched:
        d = verdict.decide(alt, settings, figures=False)
        rows = {t["case_no"]: t for t in d["tests"]}
        named = {x["case_no"] for x in d["incomplete"]["questions"]}
        now = _words(decision)
        for e in entries:
            t = rows.get(e["case_no"])
            if e["case_no"] not in touched or t is None:
                continue
            word = "incomplete" if e["case_no"] in named else t["state"]
            e["under_old_rubric"] = {
                "new": f"{t['new']['passes']}/{t['new']['answered']}",
                "old": f"{t['baseline']['passes']}/{t['baseline']['answered']}", "word": word}
            # it rests on the loosening when OLD's rubric reads it worse than today's does (a
            # question undecided either way waits for repeats, not for a person)
            if _RANK.get(word, 0) > _RANK.get(now.get(e["case_no"], ""), 0):
                rested.append(e["case_no"])
    decision["rubric_changed"] = entries
    decision["pending"]["rubric_loosened"] = rested
    if rested and decision["word"] in ("ship", "undecided"):
        decision["word"] = "pending"
        decision["exit_code"] = verdict.EXIT_CODES["pending"]
