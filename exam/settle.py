"""`--settle`: spend extra repeats only on the undecided questions of the new version.

The method is a group-sequential design (Haybittle–Peto boundaries) with a union bound:

- m is the number of questions that could get worse (a baseline pass, asked in the new
  version), fixed before the first look; each question gets alpha_sev / m.
- Every look of a question is a one-sided Fisher exact test of all its answered cells so far.
  Each interim look spends INTERIM (1%) of the question's alpha_sev / m; its last look — when
  it reaches max_repeats answered repeats, or the budget ends — spends what is left,
  alpha_sev / m · (1 − INTERIM · looks) (that look is read at the interim level first).
  The first look is the data already stored.
- Every look is a valid test at its level and a question's levels sum to alpha_sev / m, so
  P(any false hold) ≤ alpha (Bonferroni over looks and questions), whatever the stopping.
  Stopping early, for a hold or because a question cleared, only removes looks. The one
  assumption: whether a cell arrives does not depend on whether its answer would pass.

The questions undecided at the first look are re-run; one leaves the loop when it holds, when
it no longer looks worse at all (cleared), when it has max_repeats answered repeats, or when
the call budget is spent. At the end the verdict rule is the same as without --settle: a
question still worse by min_effect without a hold stays undecided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exam.reports.verdict import Settings

INTERIM = 0.01  # the share of a question's alpha each interim look spends (Haybittle–Peto)


@dataclass(frozen=True, slots=True)
class Design:
    """m questions that can get worse; each question's alpha/m is spent over its own looks."""

    m: int
    interim: float = INTERIM

    def level(self, alpha: float, look: int, final: bool) -> float:
        """Raw p-value threshold of one question at its ``look``-th look (1-based)."""
        share = alpha / self.m
        if not final:
            return share * self.interim
        # every look may also be read at the interim level first, so the last spends the rest
        return share * (1 - self.interim * look)


def can_get_worse(report: dict[str, Any]) -> int:
    tests = report["decision"]["tests"]
    return sum(1 for t in tests if t["baseline"]["passes"] and t["new"]["planned"]) or 1


@dataclass(frozen=True, slots=True)
class Outcome:
    report: dict[str, Any]
    spent: int  # agent calls made by settle
    whole_bank: int  # calls repeating the whole bank as many extra times would have made
    rounds: list[dict[str, Any]]

    @property
    def saved(self) -> int:
        return max(0, self.whole_bank - self.spent)


def settle(compare: Callable[[dict[str, float]], dict[str, Any]],
           run_more: Callable[[list[str], int], int], settings: Settings, *,
           bank_size: int, budget: int = 300, step: int = 3, max_repeats: int = 30,
           interim: float = INTERIM) -> Outcome:
    """Loop: decide at this look's levels; re-run the open questions ``step`` more times.

    ``compare(levels)`` returns a compare report decided at ``levels`` (case_no → raw p
    threshold; ``{}`` for the plain BH report); ``run_more(case_nos, repeats)`` asks the new
    version again and returns the agent calls it made.
    """
    first = compare({"": 0.0})  # levels naming no question: holds nothing, only the counts
    design = Design(can_get_worse(first), interim)
    alpha = {t["case_no"]: settings.rule_for(t["severity"]).alpha
             for t in first["decision"]["tests"]}
    looks: dict[str, int] = dict.fromkeys(alpha, 1)

    def levels(final: set[str]) -> dict[str, float]:
        return {c: design.level(alpha[c], looks[c], c in final) for c in alpha}

    report = compare(levels(set()))
    chosen = {t["case_no"] for t in report["decision"]["tests"] if t["state"] == "undecided"}
    spent, extra, rounds = 0, 0, []
    while True:
        d = report["decision"]
        # a chosen question stays open while it answers worse at all: clearing it as soon as
        # the drop dips under min_effect would throw away the power to see a real one
        open_ = [t for t in d["tests"] if t["case_no"] in chosen and t["state"] != "hold"
                 and t["effect"] is not None and t["effect"] > 1e-12
                 and t["new"]["answered"] < max_repeats]
        rounds.append({"verdict": d["word"], "open": [t["case_no"] for t in open_],
                       "calls": spent})
        if d["word"] in ("incomplete", "hold") or not open_:
            break
        n = min(step, max_repeats - min(t["new"]["answered"] for t in open_),
                (budget - spent) // len(open_))
        if n <= 0:  # the budget is spent: this look is the last one of the open questions
            report = compare(levels({t["case_no"] for t in open_}))
            rounds.append({"verdict": report["decision"]["word"], "open": [], "calls": spent,
                           "final": True})
            break
        spent += run_more([t["case_no"] for t in open_], n)
        extra += n
        for t in open_:
            looks[t["case_no"]] += 1
        report = compare(levels(set()))  # an interim look, which also gives the counts
        final = {t["case_no"] for t in report["decision"]["tests"]
                 if t["case_no"] in chosen and t["new"]["answered"] >= max_repeats}
        report = compare(levels(final))
    report["settle"] = {
        "method": (f"group-sequential (Haybittle–Peto): each interim look spends "
                   f"{interim:g} of a question's alpha/m, its last look the rest; Bonferroni "
                   f"over looks and the {design.m} question(s) that can get worse, so "
                   f"P(any false hold) ≤ alpha"),
        "questions": sorted(chosen), "calls_spent": spent,
        "calls_whole_bank": extra * bank_size,
        "calls_saved": max(0, extra * bank_size - spent), "budget": budget,
        "max_repeats": max_repeats, "step": step, "rounds": rounds}
    return Outcome(report, spent, extra * bank_size, rounds)


def settle_cli(store, registry, agent: str, old: str, new: str, settings: Settings, *,
               budget: int, step: int, max_repeats: int, echo=print) -> dict[str, Any]:
    """Settle with real runs of the new version: one run per round, only the open questions."""
    from exam.errors import ExamError
    from exam.pipeline.lease import renewed
    from exam.pipeline.runner import create_run, execute, job_for
    from exam.reports import compare as cmp
    from exam.reports.regrade import regrade
    from exam.reports.selection import select_runs

    agent_obj = registry.get(agent)
    new_runs = [r for r in select_runs(store, agent) if r.version == new]
    bank_size = max(len(r.plan) for r in new_runs)

    def compare(levels: dict[str, float]) -> dict[str, Any]:
        runs = select_runs(store, agent)
        return cmp.build(regrade(store, runs), agent, old, new, settings, levels or None)

    def run_more(case_nos: list[str], repeats: int) -> int:
        run_id = create_run(store, agent_obj, new, repeats=repeats, only=case_nos)
        store.add_settle_round(run_id, old, new)  # listed under this comparison, not alone
        # held by a lease as `exam run`'s are: if this process dies, the run reads interrupted
        # on every host once the lease runs out, and `exam resume` anywhere can finish it
        store.hold_run(run_id)
        with renewed(store, [run_id]):
            final = execute(store, [job_for(store, run_id, agent_obj)])
        echo(f"settle: run {run_id}: {', '.join(case_nos)} × {repeats} ({final[run_id]})")
        return len(case_nos) * repeats

    try:
        out = settle(compare, run_more, settings, bank_size=bank_size, budget=budget, step=step,
                     max_repeats=max_repeats)
    except ExamError:
        raise
    s = out.report["settle"]
    echo(f"settle: {s['calls_spent']} agent call(s) spent, {s['calls_saved']} saved against "
         f"repeating the whole bank of {bank_size} question(s) ({s['calls_whole_bank']} calls)")
    return out.report
