"""`exam review`: decide needs_human verdicts; the decisions apply on every re-grade."""

from __future__ import annotations

import json
import sys

import click

from exam.cli.common import (
    agent_filter,
    db_option,
    open_store,
    stored_runs,
    version_filter,
    warn_missing_banks,
)
from exam.textsafe import terminal


@click.command("review")
@agent_filter
@version_filter
@click.option("--blind", is_flag=True, help="Hide version labels and shuffle the order.")
@click.option("--sample", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also spot-check this many random passes and fails: the grader can be sure and "
                   "wrong.")
@click.option("--reviewer", envvar="EXAM_REVIEWER", help="Your name, stored with each decision.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False),
              help="Write the queue to a CSV for reviewers outside the tool, and stop.")
@click.option("--import", "import_path", type=click.Path(dir_okay=False),
              help="Store the decisions filled in an exported CSV.")
@db_option
def review_cmd(agent, label, blind, sample, reviewer, export_path, import_path, db) -> None:
    """Decide needs_human verdicts; decisions are re-applied on every re-grade.

    Each distinct reply is shown once (with how many cells returned it): the work order,
    the reply, and the deciding sentence. Answer p(ass), f(ail, with a reason), s(kip), q(uit).

    \b
    Exit status: 0 done (or the queue exported/imported) · 2 bad input (a CSV, no runs).
    """
    import random

    from exam import review
    from exam.marks import use_colour
    from exam.reports.regrade import regrade

    store = open_store(db)
    if import_path:
        decided, blank = review.import_csv(store, import_path, reviewer or "")
        click.echo(f"{decided} decision(s) stored, {blank} row(s) left undecided")
        if decided:
            from exam.reports.selection import select_runs

            _keep_pages(store, sorted({r.agent for r in select_runs(store, agent)}))
        return
    runs = stored_runs(store, agent, label)
    regraded = regrade(store, runs)  # in this process: the queue shows each reply's text
    warn_missing_banks({"missing_banks": regraded.missing_banks})
    items = review.queue(regraded, agent, label, sample)
    if blind:
        random.Random().shuffle(items)
    if export_path:
        n = review.export_csv(items, export_path, blind)
        click.echo(f"{n} item(s) written to {export_path}; fill 'decision' (pass/fail/skip), "
                   f"'reason' and 'reviewer', then: exam review --import {export_path}")
        return
    if not items:
        click.echo("review queue is empty")
        return
    from exam.reports.scorecard import queue_words

    waiting = [i for i in items if not i.spot_check]
    click.echo("review queue: " + queue_words({"review_replies": len(waiting),
                                                "review_queue": sum(len(i.cells)
                                                                    for i in waiting)})
               + " waiting" + (f", and {len(items) - len(waiting)} spot check(s)"
                               if len(items) > len(waiting) else ""))
    if not reviewer:
        reviewer = click.prompt("your name (stored with each decision)")
    colour = use_colour()
    decided, agents = 0, set()
    for n, item in enumerate(items, 1):
        _show_item(item, n, len(items), blind, colour)
        choice = click.prompt("decision [p]ass / [f]ail / [s]kip / [q]uit",
                              type=click.Choice(["p", "f", "s", "q"]), show_choices=False)
        if choice == "q":
            break
        if choice == "s":
            continue
        reason = ""
        if choice == "f":
            reason = click.prompt("reason (what is wrong)")
        elif sys.stdin.isatty():
            reason = click.prompt("note (optional)", default="", show_default=False)
        review.decide(store, item, "pass" if choice == "p" else "fail", reviewer, reason)
        decided += 1
        agents.add(item.agent)
    left = len(items) - decided
    click.echo(f"\n{decided} decided; {left} still in the queue. Decisions apply to every "
               "re-grade until the question or the rule changes.")
    _keep_pages(store, sorted(agents))


def _keep_pages(store, agents: list[str]) -> None:
    """The decided agents' pages made again now (their walk and newest version's answers are
    keyed by the decisions on their questions), as the dashboard does behind a decision: the
    next view reads them kept instead of walking every version."""
    from exam.reports.kept import keep_decided

    for agent in agents:
        keep_decided(store, agent)


def _show_item(item, n: int, total: int, blind: bool, colour: bool) -> None:
    import re

    where = "" if blind else f" · versions {terminal(', '.join(item.versions))}"
    same = f" · same reply in {len(item.cells)} cells" if len(item.cells) > 1 else ""
    kind = "spot check of a " + item.verdict if item.spot_check else "needs_human"
    click.echo(f"\n[{n}/{total}] {terminal(item.agent)} {terminal(item.case_no)} ({kind})"
               f"{where}{same}")
    click.echo("work order: " + terminal(json.dumps(item.work_order, ensure_ascii=False)))
    click.echo("reply:\n  " + "\n  ".join(terminal(line) for line in item.text.split("\n")))
    for c in item.checks:
        evidence = terminal(c["evidence"])
        if colour:
            evidence = re.sub(r"«(.+?)»", "\033[1;33m\\1\033[0m", evidence)
        click.echo(f"  ? {c['name']}: {evidence}")
