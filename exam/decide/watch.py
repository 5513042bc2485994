"""`exam watch AGENT`: the shipped version asked again, and compared with its own runs.

Nobody changed anything and it got worse: a provider updates a model behind the same name, a
knowledge base changes under the FAQ agent. A watch asks the agent's shipped version
(exam/reports/baseline.py) again, under its own label, the questions its counted runs asked,
and compares the replies with those runs by the verdict of a change (exam/reports/compare.py,
verdict.py): a drift is a ``hold`` that names the questions.

A watch is made of rounds: runs whose settings carry ``watch`` (exam/reports/selection.py
leaves them out of every other report: they would move the version's own figures and the
shipped-version walk). The first round asks every question ``repeats`` times. After it, only
a question that answered worse than at ship time could have moved, and only one whose runs at
ship time could show a drop within ``max_repeats`` is asked again, ``step`` repeats a round,
by settle's group-sequential design (exam/settle.py: each question's alpha/m spent over its
looks, so P(any false hold) ≤ alpha for one watch), until it holds, answers no worse, reaches
``max_repeats`` or the ``budget`` is spent. The verdict is the compare's at the last look.

Every look is read back from the store (``look``): the CLI executes each round itself, the
API queues it for a worker and is asked again; both walk the same steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from exam import notify as channels
from exam.decide.settle import Design, can_get_worse
from exam.errors import ExamError
from exam.notify.summary import Summary, agent_summary
from exam.pipeline.lease import renewed
from exam.pipeline.registry import Agent, Registry
from exam.pipeline.runner import agent_bank, create_run, execute, job_for, queue_run
from exam.records import RunState
from exam.reports import baseline, scorecard, verdict
from exam.reports import compare as cmp
from exam.reports.regrade import Regraded, regrade
from exam.reports.selection import WATCH_KEY, select_runs
from exam.reports.stats import fisher_worse
from exam.store import Run, Store
from exam.textsafe import terminal_data

REPEATS = 1  # the first round: every question once
BUDGET = 100  # calls the rounds after the first may spend
STEP = verdict.SETTLE_STEP
MAX_REPEATS = 20  # a question's answered repeats at which it is asked no more
NOTIFY_ON = ("not_ship", "always")  # push a verdict that needs a person, or every verdict


class WatchError(ExamError):
    """Nothing to watch, or not as asked (no shipped version, its runs unfinished, the agent
    moved): bad input, never a verdict."""


def watched(version: str) -> str:
    """How the rounds' side of the comparison is named: never a label a run can have."""
    return f"{version} (watched)"


@dataclass(frozen=True, slots=True)
class Plan:
    """A watch as it starts, kept in its first round's settings: every look reads it back."""

    agent: str
    version: str
    reference: tuple[int, ...]  # the shipped version's counted runs it is compared with
    shipped: Mapping[str, Any]  # how the version came to be shipped (Baseline.as_dict)
    repeats: int = REPEATS
    budget: int = BUDGET
    step: int = STEP
    max_repeats: int = MAX_REPEATS
    settings: verdict.Settings = field(default_factory=verdict.Settings)
    notify: str | None = None  # a notification channel (exam/notify)
    notify_on: str = "not_ship"

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "version": self.version,
                "reference": list(self.reference), "shipped": dict(self.shipped),
                "repeats": self.repeats, "budget": self.budget, "step": self.step,
                "max_repeats": self.max_repeats, "settings": self.settings.as_dict(),
                "notify": self.notify, "notify_on": self.notify_on}

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Plan:
        s = d["settings"]

        def rule(r: Mapping[str, Any]) -> verdict.Rule:
            return verdict.Rule(r["alpha"], r["min_effect"], r["min_answered"])

        settings = verdict.Settings(rule(s), {k: rule(v) for k, v in s["by_severity"].items()},
                                    s["coverage"], s["power"])
        return cls(d["agent"], d["version"], tuple(d["reference"]), d["shipped"], d["repeats"],
                   d["budget"], d["step"], d["max_repeats"], settings, d["notify"],
                   d["notify_on"])


@dataclass(frozen=True, slots=True)
class Look:
    """A watch now: its rounds, and once none is under way, the compare of this look and the
    next round it asks for (None: done)."""

    watch_id: int
    plan: Plan
    rounds: tuple[Run, ...]
    report: dict[str, Any] | None = None  # None while a round is under way
    next_round: tuple[tuple[str, ...], int] | None = None  # (questions, repeats)
    view: Regraded | None = field(default=None, repr=False, compare=False)

    @property
    def status(self) -> str:
        return "done" if self.report is not None and self.next_round is None else "running"

    @property
    def notify_due(self) -> bool:
        return (self.status == "done" and self.plan.notify is not None
                and (self.plan.notify_on == "always" or self.report["verdict"] != "ship"))


# -- starting -----------------------------------------------------------------------------

def shipped_now(store: Store, agent: str, settings: verdict.Settings
                ) -> tuple[baseline.Baseline, list[Run]]:
    """The agent's shipped version and its counted runs (never a watch's); ``WatchError``
    when there is none, or when one of those runs has not finished."""
    runs = select_runs(store, agent)
    if not runs:
        raise WatchError(f"no counted run of {agent}: nothing has shipped to watch (exam run "
                         f"{agent} --version LABEL, then exam ship {agent} LABEL)")
    regraded = regrade(store, runs, texts=False)
    shipped = baseline.shipped_version(regraded, agent, store.ship_records(agent), settings)
    if shipped is None:  # every run's bank missing: the walk saw none
        raise WatchError("; ".join(m["message"] for m in regraded.missing_banks)
                         or f"no counted run of {agent}")
    reference = sorted((r for r in runs if r.version == shipped.version), key=lambda r: r.id)
    busy = [r for r in reference
            if r.shown_status in (RunState.QUEUED, RunState.RUNNING, RunState.INTERRUPTED)]
    if busy:
        raise WatchError(f"run {busy[0].id} of {agent} {shipped.version} is {busy[0].shown_status}"
                         f": a watch compares with the shipped version's finished runs (finish "
                         f"it, or exam runs exclude {busy[0].id} --reason …)")
    return shipped, reference


def same_place(agent: Agent, version: str, reference: Sequence[Run]) -> None:
    """The registry sends the work orders where the shipped version was examined (its last
    run's URL): a watch elsewhere would read another agent's answers as its drift."""
    was = reference[-1].settings.get("url")
    if was and was != agent.safe_url:
        raise WatchError(f"{agent.name} {version} was examined at {was}; the registry now sends "
                         f"{agent.name}'s work orders to {agent.safe_url}: a watch asks the "
                         f"version that shipped, where it shipped (if it moved, run it there "
                         f"once: exam run {agent.name} --version {version})")


def start(store: Store, registry: Registry, agent_name: str,
          settings: verdict.Settings | None = None, *, repeats: int = REPEATS,
          budget: int = BUDGET, step: int = STEP, max_repeats: int = MAX_REPEATS,
          notify: str | None = None, notify_on: str = "not_ship", queue: bool = False) -> int:
    """The first round of a watch of ``agent_name``'s shipped version: every question its
    runs asked that today's bank still has, ``repeats`` times; its run id is the watch's id.
    ``queue``: for a worker (the API), else running for this process (the CLI)."""
    settings = settings or verdict.Settings()
    for name, value, low in (("repeats", repeats, 1), ("budget", budget, 0), ("step", step, 1),
                             ("max_repeats", max_repeats, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise WatchError(f"{name}: expected a whole number ≥ {low}, found {value!r}")
    if notify_on not in NOTIFY_ON:
        raise WatchError(f"notify_on: expected one of {', '.join(NOTIFY_ON)}, found "
                         f"{notify_on!r}")
    agent = registry.get(agent_name)
    shipped, reference = shipped_now(store, agent_name, settings)
    same_place(agent, shipped.version, reference)
    in_bank = agent_bank(agent).by_case()
    asked = [c for c in dict.fromkeys(c for r in reference for c, _ in r.plan) if c in in_bank]
    if not asked:
        raise WatchError(f"none of the questions {agent_name} {shipped.version} was asked is in "
                         f"{agent.bank} any more: nothing to compare")
    plan = Plan(agent_name, shipped.version, tuple(r.id for r in reference), shipped.as_dict(),
                repeats, budget, step, max_repeats, settings, notify, notify_on)
    marks = {WATCH_KEY: {"round": 1, "plan": plan.as_dict()}}
    if queue:
        return queue_run(store, agent, shipped.version, repeats=repeats, only=asked,
                         marks=marks, source="api")
    return create_run(store, agent, shipped.version, repeats=repeats, only=asked, marks=marks)


def new_round(store: Store, registry: Registry, now: Look, *, queue: bool = False) -> int:
    """The round ``now`` asks for, as a run of the shipped version marked as this watch's."""
    assert now.next_round is not None
    cases, repeats = now.next_round
    agent = registry.get(now.plan.agent)
    same_place(agent, now.plan.version, now.rounds[:1])
    marks = {WATCH_KEY: {"round": len(now.rounds) + 1, "first": now.watch_id}}
    if queue:
        return queue_run(store, agent, now.plan.version, repeats=repeats, only=cases,
                         marks=marks, source="api")
    return create_run(store, agent, now.plan.version, repeats=repeats, only=cases, marks=marks)


# -- looking ------------------------------------------------------------------------------

def rounds_of(store: Store, watch_id: int) -> tuple[Plan, list[Run]]:
    """The watch's plan and its rounds, first first."""
    first = store.get_run(watch_id)
    mark = first.settings.get(WATCH_KEY) or {}
    if mark.get("round") != 1:
        raise WatchError(f"run {watch_id} is not the first round of a watch"
                         + (f" (it is round {mark['round']} of watch {mark.get('first')})"
                            if mark.get("round") else ""))
    plan = Plan.of(mark["plan"])
    later = [r for r in store.list_runs(first.agent, first.version)
             if (r.settings.get(WATCH_KEY) or {}).get("first") == watch_id]
    return plan, [first, *sorted(later, key=lambda r: r.id)]


def under_way(run: Run) -> bool:
    """Cells still to come: queued, or running (a worker's run whose lease ran out is taken
    over by another worker; one of a CLI whose process is gone is not)."""
    if run.status == RunState.QUEUED:
        return True
    return run.status == RunState.RUNNING and (run.source != "cli"
                                              or run.shown_status == RunState.RUNNING)


def _view(regraded: Regraded, version: str, rounds: Sequence[int], every: set[int]
          ) -> Regraded:
    """The reference runs as ``version`` and the ``rounds`` (of ``every`` round) as the
    watched version: one comparison of two labels, as compare reads it."""
    label, keep = watched(version), set(rounds)

    def wanted(run_id: int) -> bool:
        return run_id in keep or run_id not in every

    return Regraded(
        [replace(c, version=label) if c.run_id in keep else c
         for c in regraded.cells if wanted(c.run_id)],
        regraded.banks,
        [replace(r, version=label) if r.id in keep else r
         for r in regraded.runs if wanted(r.id)],
        regraded.removed,
        [{**m, "version": label} if m["run_id"] in keep else m
         for m in regraded.missing_banks if wanted(m["run_id"])],
        regraded.run_banks, regraded.store)


def _asked(run: Run) -> set[str]:
    return {c for c, _ in run.plan}


def _worth_asking(t: Mapping[str, Any], plan: Plan, design: Design, looks: int,
                  alpha: float) -> bool:
    """Answered worse than at ship time, and its runs at ship time could still show it: even
    with every repeat up to ``max_repeats`` failing, its last look could hold it."""
    b, n = t["baseline"], t["new"]
    if t["state"] == "hold" or not b["passes"] or not b["answered"] or not n["answered"]:
        return False
    if n["answered"] >= plan.max_repeats or (t["effect"] or 0.0) <= 1e-12:
        return False
    rule = plan.settings.rule_for(t["severity"])
    if min(b["answered"], plan.max_repeats) < rule.min_answered:
        return False
    best = n["passes"]  # every further repeat failing
    if b["passes"] / b["answered"] - best / plan.max_repeats < rule.min_effect - 1e-12:
        return False
    last = looks + math.ceil((plan.max_repeats - n["answered"]) / plan.step)
    level = design.level(alpha, last, True)
    return fisher_worse(b["passes"], b["answered"], best, plan.max_repeats) \
        <= level * (1 + verdict.TOL)


def look(store: Store, watch_id: int) -> Look:
    """The watch as the store has it: while a round is under way, only its rounds; else the
    compare of this look (settle's levels) and the round it asks for next, if any."""
    plan, rounds = rounds_of(store, watch_id)
    if any(under_way(r) for r in rounds):
        return Look(watch_id, plan, tuple(rounds))
    ids = [r.id for r in rounds]
    regraded = regrade(store, [*select_runs(store, run_ids=plan.reference), *rounds],
                       texts=False)

    def compare(view: Regraded, levels: dict[str, float]) -> dict[str, Any]:
        return cmp.build(view, plan.agent, plan.version, watched(plan.version), plan.settings,
                         levels)

    first = compare(_view(regraded, plan.version, ids[:1], set(ids)), {"": 0.0})
    design = Design(can_get_worse(first))  # fixed by the first look, as settle's
    alpha = {t["case_no"]: plan.settings.rule_for(t["severity"]).alpha
             for t in first["decision"]["tests"]}
    looks = {c: 1 + sum(1 for r in rounds[1:] if c in _asked(r)) for c in alpha}
    view = _view(regraded, plan.version, ids, set(ids))

    def at(final: set[str]) -> dict[str, Any]:
        return compare(view, {c: design.level(alpha[c], looks[c], c in final) for c in alpha})

    final = set()
    report = at(final)
    final = {t["case_no"] for t in report["decision"]["tests"]
             if t["new"]["answered"] >= plan.max_repeats}
    if final:  # its last look: read at the interim level first, then with what is left
        report = at(final)
    spent = sum(len(r.plan) * r.repeats for r in rounds[1:])
    open_ = [t for t in report["decision"]["tests"]
             if _worth_asking(t, plan, design, looks[t["case_no"]], alpha[t["case_no"]])]
    nxt = None
    if report["verdict"] not in ("incomplete", "hold") and open_:
        n = min(plan.step, plan.max_repeats - min(t["new"]["answered"] for t in open_),
                (plan.budget - spent) // len(open_))
        if n > 0:
            nxt = (tuple(sorted(t["case_no"] for t in open_)), n)
        else:  # the budget is spent: this look is the last one of the open questions
            report = at(final | {t["case_no"] for t in open_})
    report = _annotated(report, plan, rounds, design, looks, alpha, nxt)
    return Look(watch_id, plan, tuple(rounds), report, nxt, view)


def _annotated(report: dict[str, Any], plan: Plan, rounds: Sequence[Run], design: Design,
               looks: Mapping[str, int], alpha: Mapping[str, float],
               nxt: tuple[tuple[str, ...], int] | None) -> dict[str, Any]:
    """The compare report with what the watch is: its baseline named as the runs at ship
    time, and a ``watch`` section (rounds, calls spent, drift)."""
    refs = ", ".join(str(i) for i in plan.reference)
    base = {**plan.shipped, "label": f"{plan.version} as it shipped (runs {refs})"}
    report["baseline"] = base
    report["still_failing"] = baseline.still_failing(report)
    first, later = rounds[0], rounds[1:]
    spent_first = len(first.plan) * first.repeats
    spent = sum(len(r.plan) * r.repeats for r in later)
    extra = sum(r.repeats for r in later)
    tests = report["decision"]["tests"]
    worse = [t for t in tests if (t["effect"] or 0.0) > 1e-12 and t["state"] != "hold"]
    cannot = [{"case_no": t["case_no"], "old": f"{t['baseline']['passes']}/"
               f"{t['baseline']['answered']}", "new": f"{t['new']['passes']}/"
               f"{t['new']['answered']}"} for t in worse
              if t["new"]["answered"] < plan.max_repeats
              and not _worth_asking(t, plan, design, looks[t["case_no"]], alpha[t["case_no"]])]
    report["watch"] = {
        "id": first.id, "agent": plan.agent, "version": plan.version,
        "status": "running" if nxt else "done", "shipped": dict(plan.shipped),
        "reference_run_ids": list(plan.reference), "run_ids": [r.id for r in rounds],
        "rounds": [{"run_id": r.id, "questions": [c for c, _ in r.plan], "repeats": r.repeats,
                    "calls": len(r.plan) * r.repeats} for r in rounds],
        "calls": {"first": spent_first, "settle": spent, "total": spent_first + spent,
                  "budget": plan.budget, "whole_bank": extra * len(first.plan),
                  "saved": max(0, extra * len(first.plan) - spent)},
        "asked_again": sorted({c for r in later for c in _asked(r)}),
        "next": None if nxt is None else {"questions": list(nxt[0]), "repeats": nxt[1]},
        "cannot_show": cannot,
        "drift": [h["case_no"] for h in report["decision"]["hold"]],
        "settings": {"repeats": plan.repeats, "step": plan.step,
                     "max_repeats": plan.max_repeats, "notify": plan.notify,
                     "notify_on": plan.notify_on},
        "method": (f"the shipped version asked again under its own label; a question that "
                   f"answered worse is asked {plan.step} more times a round while its runs at "
                   f"ship time could show the drop within {plan.max_repeats} repeats "
                   f"(group-sequential, as --settle: each interim look spends "
                   f"{design.interim:g} of a question's alpha/m, its last look the rest; "
                   f"Bonferroni over looks and the {design.m} question(s) that can get worse, so "
                   f"P(any false hold) ≤ alpha for this watch)"),
    }
    return report


# -- the whole watch ----------------------------------------------------------------------

def execute_round(store: Store, registry: Registry, run_id: int) -> str:
    """Execute one round in this process, held by a lease as `exam run`'s runs are."""
    run = store.get_run(run_id)
    store.hold_run(run_id)
    with renewed(store, [run_id]):
        return execute(store, [job_for(store, run_id, registry.get(run.agent))])[run_id]


def advance(store: Store, registry: Registry, watch_id: int) -> Look:
    """One step for a caller that does not execute runs (the API): the next round queued for
    a worker when this look asks for one (the look is then ``running``). Two callers at once
    may queue a round twice: one more look, still within the design's alpha."""
    now = look(store, watch_id)
    if now.next_round is not None:
        new_round(store, registry, now, queue=True)
    return now


def run_watch(store: Store, registry: Registry, agent_name: str,
              settings: verdict.Settings | None = None, echo: Callable[[str], None] = print,
              **options: Any) -> Look:
    """A whole watch in this process (`exam watch`): each round executed here, until done."""
    watch_id = start(store, registry, agent_name, settings, **options)
    first = store.get_run(watch_id)
    echo(f"watch {watch_id}: {agent_name} {first.version} asked again: {len(first.plan)} "
         f"question(s) × {first.repeats} ({execute_round(store, registry, watch_id)})")
    while True:
        now = look(store, watch_id)
        if now.next_round is None:
            return now
        run_id = new_round(store, registry, now)
        cases, repeats = now.next_round
        echo(f"watch {watch_id}: run {run_id}: {', '.join(cases)} × {repeats} "
             f"({execute_round(store, registry, run_id)})")


# -- telling ------------------------------------------------------------------------------

def summary(now: Look) -> Summary:
    """The watch's verdict as a notification summary (exam/notify/summary.py): the rounds'
    scorecard, the verdict against the version's runs at ship time."""
    assert now.report is not None and now.view is not None
    ids = {r.id for r in now.rounds}
    mine = Regraded([c for c in now.view.cells if c.run_id in ids], now.view.banks,
                    [r for r in now.view.runs if r.id in ids], now.view.removed, [],
                    now.view.run_banks, now.view.store)
    card = scorecard.build(mine)["scorecards"][0]
    s = agent_summary(card, now.report, card["review_queue"])
    reason = now.report["decision"]["reason"]
    return replace(s, version=now.plan.version,  # its scorecard page: the version's own
                   previous=now.report["baseline"]["label"],
                   verdict_reason=f"watch {now.watch_id} ({now.plan.version} asked again under "
                                  f"its own label): {reason}")


def notify(store: Store, now: Look, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Push the verdict to the plan's channel, once per watch (its notifications' batch is
    ``watch-ID``: asked again, it says what was sent)."""
    if not now.notify_due:
        return []
    batch = f"watch-{now.watch_id}"
    sent = store.notifications(batch=batch)
    if sent:
        return [{**n, "outcome": "already sent"} for n in sent]
    channel = channels.get(now.plan.notify)
    settings = channel.settings(env)
    return channels.notify_summaries(store, channel, settings, [summary(now)],
                                     [r.id for r in now.rounds], batch=batch)


def text(report: Mapping[str, Any], colour: bool = False) -> str:
    """The watch in a few lines, then the comparison as `exam compare` prints it."""
    w = terminal_data(report["watch"])  # a ship decision's reason is a person's free text
    c = w["calls"]
    shipped = w["shipped"]
    lines = [f"watch {w['id']}: {w['agent']} {w['version']} (shipped: {shipped['why']}) asked "
             f"again under its own label, compared with its runs at ship time "
             f"({', '.join(str(i) for i in w['reference_run_ids'])})",
             f"  spent {c['total']} call(s): {c['first']} in the first round, {c['settle']} "
             f"asking again {', '.join(w['asked_again']) or 'nothing'} (budget {c['budget']}; "
             f"the whole bank as many more times: {c['whole_bank']})"]
    if w["cannot_show"]:
        lines.append("  answered worse, but its runs at ship time cannot show a drop within "
                     f"{w['settings']['max_repeats']} repeats: " + ", ".join(
                         f"{x['case_no']} ({x['old']} → {x['new']})" for x in w["cannot_show"]))
    if report["verdict"] == "hold":
        lines.append(f"DRIFT: {', '.join(w['drift'])} answer worse than when "
                     f"{w['version']} shipped")
    elif report["verdict"] == "ship":
        lines.append(f"no drift: every question answers as well as when {w['version']} shipped,"
                     " within what these repeats can show")
    return "\n".join(lines) + "\n" + cmp.text(report, colour)
