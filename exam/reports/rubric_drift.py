"""Questions whose rubric changed since the baseline ran, and whether a ship rests on it.

Every report grades OLD and NEW under today's bank, so a rubric loosened in the same change
as the agent passes both: fair between them, and silent. Here each compared question's
rubric today is set against the one OLD's runs were made with (kept in ``run_banks``; the
agent's budget is kept with each run): the verdict names what changed and which way. A
loosened budget is checked from the stored figures (held against the budget OLD ran under),
a lowered severity by reading the question at OLD's; any other graded field (facts,
forbidden phrases, the status, fields, fold_script) by grading OLD's and NEW's replies again
under the question OLD ran with. When that reading blocks where today's does not, the ship
rests on the change, which a person has to accept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exam.bank import Item, parse_bank, rubric
from exam.errors import ExamError
from exam.grading.stored import replies_of
from exam.reports import verdict
from exam.reports.regrade import GradedCell, Regraded
from exam.store import Run, Store
from graders import grade

FIGURES = ("attempts", "model_calls", "tokens", "latency_ms")
# changes the figures alone cannot read: the replies are graded again under OLD's question
_NOT_REGRADED = ("budget.", "agent budget.", "severity", "input", "case_no")


def _regrade_needed(change: Mapping[str, Any]) -> bool:
    """A change only grading again can read, whichever way it went: a stricter rubric that
    OLD fails too hides what NEW stopped doing that OLD's rubric asked (a fact added that
    neither version says, while NEW now says what OLD's forbade); where NEW still meets OLD's
    rubric, the reading under it is no worse than today's and nothing rests on it."""
    return not change["field"].startswith(_NOT_REGRADED)


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
        question = None  # OLD's question, when a change needs its replies graded again
        rewritten = False  # the input changed: OLD's replies answer another question
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
            rewritten = rewritten or any(ch["field"] == "input" for ch in found)
            if kept is not None and any(_regrade_needed(ch) for ch in found):
                question = {"raw": then, "fold": bool(kept.get("fold_script")),
                            "budget": then_agent, "run": r.id}  # the latest such OLD run
            sev = then.get("severity", "major")
            if rubric.SEVERITIES.get(sev, 2) > rubric.SEVERITIES.get(
                    now.get("severity", "major"), 2):
                severity = sev
            then_eff, now_eff = _effective(then_agent, then), _effective(now_agent, now)
            for k, limit in then_eff.items():
                if k in FIGURES and (now_eff.get(k) is None or now_eff[k] > limit):
                    loose[k] = min(limit, loose.get(k, limit))
        if differ:
            entry = {"case_no": case_no, "runs": differ, "recorded": recorded,
                     "loosened": any(c["direction"] == "looser" for c in changes),
                     "changes": changes, "_budget": loose, "_severity": severity,
                     "_question": None if rewritten else question}
            if rewritten and question is not None:
                # NEW's replies answer today's input: OLD's facts say nothing of them
                entry["not_regraded"] = ("its input changed since OLD ran: the replies answer "
                                         "another question than OLD's rubric was written for")
            out.append(entry)
    return out


def _old_item(agent: str, case_no: str, question: Mapping[str, Any]) -> Item:
    """OLD's question, parsed as its bank had it (``ExamError`` when it no longer parses)."""
    data = {"agent": agent, "options": {"fold_script": question["fold"]},
            "questions": [dict(question["raw"])]}
    bank, problems = parse_bank(data, f"{case_no} as run {question['run']} was made with")
    if bank is None or len(bank.items) != 1:
        raise ExamError("; ".join(str(p) for p in problems[:3]) or "no question")
    return bank.items[0]


class _Stored:
    """The stored cells of OLD's and NEW's runs, read once for every question graded again
    (a bank-wide change touches every question)."""

    def __init__(self, store: Store, run_ids: Sequence[int]) -> None:
        self.store, self.run_ids, self.rows = store, sorted(set(run_ids)), None

    def graded_under(self, runs: Mapping[int, Run], cells: Sequence[GradedCell], item: Item,
                     budget: Mapping[str, float], like: verdict.Tally) -> verdict.Tally:
        """The tally of ``cells`` with each reply graded again under ``item`` and ``budget``
        (OLD's question and agent budget); what did not arrive stays as ``like`` has it."""
        if self.rows is None:
            self.rows = {(r.run_id, r.case_no, r.repeat): r
                         for r in self.store.cells(self.run_ids)}
        counts = {"pass": 0, "fail": 0, "needs_human": 0, "not_graded": 0}
        arrived = []
        for c in cells:
            row = self.rows.get((c.run_id, c.case_no, c.repeat))
            if c.run_status == "ok" and row is not None:
                arrived.append((c, (runs[row.run_id], row, item)))
        replies = replies_of(self.store, [stored for _, stored in arrived])
        for (c, _stored), reply in zip(arrived, replies, strict=True):
            g = grade(item.question, reply, budget=budget).verdict
            if g == "needs_human" and c.reviewed and c.verdict in ("pass", "fail"):
                # a person decided this reply under today's rubric: not asked again
                g = c.verdict
            counts[g if g in counts else "not_graded"] += 1
        return verdict.Tally(counts["pass"], counts["fail"], counts["needs_human"],
                             counts["not_graded"], like.trouble)


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


# how much a question's reading blocks, in the verdict's precedence
_RANK = {"hold": 4, "incomplete": 3, "pending": 2, "undecided": 1}


def _words(decision: Mapping[str, Any]) -> dict[str, str]:
    """Each question's reading in ``decision``: named incomplete, else left to a person
    (needs_human), else its test's state."""
    out = {t["case_no"]: t["state"] for t in decision["tests"]}
    marks = [(x["case_no"], "incomplete") for x in decision["incomplete"]["questions"]]
    marks += [(case_no, "pending") for case_no in decision["pending"]["questions"]]
    for case_no, word in marks:
        if _RANK.get(out.get(case_no, ""), 0) < _RANK[word]:
            out[case_no] = word
    return out


def apply(decision: dict[str, Any], entries: list[dict[str, Any]],
          questions: Sequence[verdict.Compared], by: Mapping[str, Mapping[str, list[GradedCell]]],
          settings: verdict.Settings, old: str, new: str, regraded: Regraded | None = None,
          agent: str = "") -> None:
    """Name the drift in ``decision``; a ship (or undecided) that rests on a changed rubric
    becomes ``pending``: read under what OLD ran with, the verdict would not ship (the
    figures against OLD's budget, the question at OLD's severity, and where a fact, a
    forbidden phrase, the expected status, a field or the bank's fold_script changed, each
    reply of OLD and NEW graded again under OLD's question)."""
    by_case = {e["case_no"]: e for e in entries}
    loose = {c: (e.pop("_budget"), e.pop("_severity"), e.pop("_question"))
             for c, e in by_case.items()}
    store = regraded.store if regraded is not None else None
    runs = {r.id: r for r in regraded.runs} if regraded is not None else {}
    stored = None if store is None else _Stored(store, [
        r.id for r in runs.values() if r.version in (old, new) and r.agent == agent])
    alt, touched = [], set()
    for q in questions:
        budget, severity, question = loose.get(q.case_no, ({}, None, None))
        item = None
        if question:
            try:
                if stored is None:
                    raise ExamError("the replies were not read from a store")
                item = _old_item(agent, q.case_no, question)
            except ExamError as exc:  # named, never read as the old rubric's grade
                by_case[q.case_no]["not_regraded"] = str(exc)
        if item is None and not budget and not severity:
            alt.append(q)
            continue
        touched.add(q.case_no)
        new_t, old_t, base = q.new, q.old, q.baseline
        if item is not None:
            cells = by.get(q.case_no, {})
            new_t = stored.graded_under(runs, cells.get(new, []), item, question["budget"],
                                        q.new)
            old_t = stored.graded_under(runs, cells.get(old, []), item, question["budget"],
                                        q.old)
            base = verdict.Tally(old_t.passes, old_t.fails)
            budget = {}  # OLD's question and agent budget were graded with the replies
        elif budget:
            n = _under(by.get(q.case_no, {}).get(new, []), budget)
            o = _under(by.get(q.case_no, {}).get(old, []), budget)
            new_t = verdict.Tally(n.passes, n.fails, q.new.needs_human, q.new.not_graded,
                                  q.new.trouble)
            old_t = verdict.Tally(o.passes, o.fails, q.old.needs_human, q.old.not_graded,
                                  q.old.trouble)
            base = verdict.Tally(o.passes, o.fails)
        alt.append(verdict.Compared(q.case_no, severity or q.severity, q.category, new_t,
                                    old_t, base, q.baseline_versions
                                    if not budget and item is None else (old,), q.old_skipped))
    rested = []
    if touched:
        d = verdict.decide(alt, settings, figures=False)
        rows = {t["case_no"]: t for t in d["tests"]}
        then, now = _words(d), _words(decision)
        for e in entries:
            t = rows.get(e["case_no"])
            if e["case_no"] not in touched or t is None:
                continue
            word = then[e["case_no"]]
            human = t["new"].get("needs_human") or 0
            e["under_old_rubric"] = {
                "new": f"{t['new']['passes']}/{t['new']['answered']}"
                       + (f", {human} left to a person" if human else ""),
                "old": f"{t['baseline']['passes']}/{t['baseline']['answered']}", "word": word}
            # it rests on the change when OLD's rubric reads it worse than today's does (a
            # question undecided either way waits for repeats, not for a person)
            if _RANK.get(word, 0) > _RANK.get(now.get(e["case_no"], ""), 0):
                rested.append(e["case_no"])
    decision["rubric_changed"] = entries
    decision["pending"]["rubric_loosened"] = rested
    if rested and decision["word"] in ("ship", "undecided"):
        decision["word"] = "pending"
        decision["exit_code"] = verdict.EXIT_CODES["pending"]
