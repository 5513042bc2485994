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

from exam.errors import ExamError
from exam.pipeline.lease import renewed
from exam.pipeline.runner import create_run, execute, job_for
from exam.reports import kinds
from exam.reports.inputs import LOCAL
from exam.reports.selection import select_runs
from exam.reports.stats import power_worse
from exam.reports.verdict import SETTLE_INTERIM, Settings, Tally, drop_upper

# the share of a question's alpha each interim look spends (Haybittle–Peto); the verdict's
# repeats-needed figure is computed at the same levels
INTERIM = SETTLE_INTERIM


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


def unsettled(t: dict[str, Any], settings: Settings) -> bool:
    """A question whose data neither hold it nor rule out a drop of min_effect (Newcombe's
    one-sided bound): worse, the same or even better so far. Choosing only those answering
    worse at the first look missed a true 90% → 50% drop whenever three repeats happened to
    show none (about one time in four)."""
    if t["state"] == "hold" or not t["baseline"]["passes"]:
        return False  # held already, or nothing to lose (every baseline repeat failed)
    b, n = t["baseline"], t["new"]
    if not b["answered"] or not n["answered"]:
        return False  # nothing to compare: the verdict says incomplete
    rule = settings.rule_for(t["severity"])
    upper = drop_upper(Tally(b["passes"], b["answered"] - b["passes"]),
                       Tally(n["passes"], n["answered"] - n["passes"]))
    return upper >= rule.min_effect - 1e-12


@dataclass(frozen=True, slots=True)
class Settled:
    report: dict[str, Any]
    spent: int  # agent calls made by settle
    whole_bank: int  # calls repeating the whole bank as many extra times would have made
    rounds: list[dict[str, Any]]

    @property
    def saved(self) -> int:
        return max(0, self.whole_bank - self.spent)


def settle(compare: Callable[[dict[str, float]], dict[str, Any]],
           run_more: Callable[[list[str], int], int], settings: Settings, *,
           bank_size: int, budget: int = 300, step: int = 3, max_repeats: int = 40,
           interim: float = INTERIM, sides: int = 1,
           preflight: Callable[[dict[str, Any], Design, list[str]], None] | None = None
           ) -> Settled:
    """Loop: decide at this look's levels; re-run the open questions ``step`` more times.

    ``compare(levels)`` returns a compare report decided at ``levels`` (case_no → raw p
    threshold; ``{}`` for the plain BH report); ``run_more(case_nos, repeats)`` asks NEW
    again (and OLD too when ``sides`` is 2) and returns the agent calls it made.
    ``preflight(report, design, chosen)`` is called once the questions to settle are known,
    before any call is spent.
    """
    first = compare({"": 0.0})  # levels naming no question: holds nothing, only the counts
    design = Design(can_get_worse(first), interim)
    alpha = {t["case_no"]: settings.rule_for(t["severity"]).alpha
             for t in first["decision"]["tests"]}
    looks: dict[str, int] = dict.fromkeys(alpha, 1)

    def levels(final: set[str]) -> dict[str, float]:
        return {c: design.level(alpha[c], looks[c], c in final) for c in alpha}

    report = compare(levels(set()))
    chosen = {t["case_no"] for t in report["decision"]["tests"] if unsettled(t, settings)}
    if preflight is not None:
        preflight(report, design, sorted(chosen))
    spent, extra, rounds = 0, 0, []
    while True:
        d = report["decision"]
        # a chosen question stays open until it holds or its data rule out a drop of
        # min_effect: clearing it as soon as it stops answering worse would throw away the
        # power to see a real drop that a few repeats happened to hide
        open_ = [t for t in d["tests"] if t["case_no"] in chosen and unsettled(t, settings)
                 and t["new"]["answered"] < max_repeats]
        rounds.append({"verdict": d["word"], "open": [t["case_no"] for t in open_],
                       "calls": spent})
        if d["word"] in ("incomplete", "hold") or not open_:
            break
        n = min(step, max_repeats - min(t["new"]["answered"] for t in open_),
                (budget - spent) // (len(open_) * sides))
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
    whole = extra * bank_size * sides
    report["settle"] = {
        "method": (f"group-sequential (Haybittle–Peto): each interim look spends "
                   f"{interim:g} of a question's alpha/m, its last look the rest; Bonferroni "
                   f"over looks and the {design.m} question(s) that can get worse, so "
                   f"P(any false hold) ≤ alpha"),
        "questions": sorted(chosen), "calls_spent": spent, "sides": sides,
        "calls_whole_bank": whole, "calls_saved": max(0, whole - spent), "budget": budget,
        "max_repeats": max_repeats, "step": step, "rounds": rounds}
    return Settled(report, spent, whole, rounds)


def old_power(report: dict[str, Any], design: Design, chosen: list[str], settings: Settings,
              max_repeats: int, step: int = 3) -> list[dict[str, Any]]:
    """What OLD's repeats, held as they are, let settle show for each chosen question: the
    highest pass rate of NEW its last look holds with 80% power at ``max_repeats`` answered
    repeats (None: not even a fall to 0%)."""

    out = []
    for t in report["decision"]["tests"]:
        if t["case_no"] not in chosen:
            continue
        b = t["baseline"]
        # the level of its last look, after the interim looks it takes to get there
        looks = 1 + -(-max(0, max_repeats - t["new"]["answered"]) // step)
        level = design.level(settings.rule_for(t["severity"]).alpha, looks, True)
        lo, hi, best = 0.0, b["passes"] / b["answered"], None
        if power_worse(b["passes"], b["answered"], 0.0, max_repeats, level) >= settings.power:
            best = 0.0
            for _ in range(30):  # power falls as NEW's true rate rises: bisect its edge
                mid = (lo + hi) / 2
                if power_worse(b["passes"], b["answered"], mid, max_repeats,
                               level) >= settings.power:
                    lo = best = mid
                else:
                    hi = mid
        out.append({"case_no": t["case_no"], "old": f"{b['passes']}/{b['answered']}",
                    "detectable_rate": best})
    return out


def power_line(old: str, new: str, figures: list[dict[str, Any]], max_repeats: int) -> str:
    """The line said before settle spends a call when OLD cannot be asked again."""
    if not figures:
        return ""
    worst = max(figures, key=lambda f: -1 if f["detectable_rate"] is None
                else -f["detectable_rate"])
    rate = worst["detectable_rate"]
    fall = ("not even a fall to 0% can be held" if rate is None else
            f"a question is held only once it falls to about {rate:.0%} or lower")
    return (f"settle: {old} cannot be asked again (no --old-url or --old-agent), so its "
            f"repeats limit what settle can show: with {max_repeats} repeats of {new}, {fall} "
            f"(80% power; {worst['case_no']}, {old} {worst['old']}); give {old}'s URL to "
            "re-run both sides")


def settle_cli(store, registry, agent: str, old: str, new: str, settings: Settings, *,
               budget: int, step: int, max_repeats: int, echo=print,
               old_url: str | None = None, old_agent: str | None = None) -> dict[str, Any]:
    """Settle with real runs: one run per round of NEW, and of OLD too when it can still be
    asked (``old_url``, or ``old_agent``: a registry entry answering as OLD), only the open
    questions. Without OLD, the power its repeats allow is said before any call is spent."""
    from dataclasses import replace

    agent_obj = registry.get(agent)
    old_obj = None
    if old_agent is not None:
        entry = registry.get(old_agent)
        if entry.bank != agent_obj.bank:
            raise ExamError(f"--old-agent {old_agent}: its bank is {entry.bank}, {agent}'s is "
                            f"{agent_obj.bank}: one bank is needed to compare the versions")
        old_obj = replace(entry, name=agent)  # its runs are runs of AGENT, version OLD
    elif old_url is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(old_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ExamError(f"--old-url: expected an http(s) URL, found {old_url!r}")
        if parts.username or parts.password or parts.query:
            # a secret here would reach the run's settings: name it in agents.yaml instead
            raise ExamError("--old-url: a URL with credentials or a query string is refused "
                            "(it would be stored); add the old version to agents.yaml with "
                            "its secrets as ${VAR} and give --old-agent NAME")
        old_obj = replace(agent_obj, url=old_url)
    new_runs = [r for r in select_runs(store, agent) if r.version == new]
    bank_size = max(len(r.plan) for r in new_runs)

    def compare(levels: dict[str, float]) -> dict[str, Any]:
        # a look at these levels: the two versions alone (the caller says the baseline)
        return kinds.build("compare", store, LOCAL, select_runs(store, agent), agent=agent,
                           old=old, new=new, settings=settings, levels=levels, baseline=False)

    def one_run(who, version: str, case_nos: list[str], repeats: int) -> None:
        run_id = create_run(store, who, version, repeats=repeats, only=case_nos)
        store.add_settle_round(run_id, old, new)  # listed under this comparison, not alone
        # held by a lease as `exam run`'s are: if this process dies, the run reads interrupted
        # on every host once the lease runs out, and `exam resume` anywhere can finish it
        store.hold_run(run_id)
        with renewed(store, [run_id]):
            final = execute(store, [job_for(store, run_id, who)])
        echo(f"settle: run {run_id} ({version}): {', '.join(case_nos)} × {repeats} "
             f"({final[run_id]})")

    def run_more(case_nos: list[str], repeats: int) -> int:
        one_run(agent_obj, new, case_nos, repeats)
        if old_obj is not None:
            one_run(old_obj, old, case_nos, repeats)
        return len(case_nos) * repeats * (2 if old_obj is not None else 1)

    def preflight(report: dict[str, Any], design: Design, chosen: list[str]) -> None:
        if old_obj is None:
            line = power_line(old, new, old_power(report, design, chosen, settings,
                                                  max_repeats, step), max_repeats)
            if line:
                echo(line)

    try:
        out = settle(compare, run_more, settings, bank_size=bank_size, budget=budget, step=step,
                     max_repeats=max_repeats, sides=2 if old_obj is not None else 1,
                     preflight=preflight)
    except ExamError:
        raise
    s = out.report["settle"]
    echo(f"settle: {s['calls_spent']} agent call(s) spent, {s['calls_saved']} saved against "
         f"repeating the whole bank of {bank_size} question(s) ({s['calls_whole_bank']} calls)")
    return out.report
