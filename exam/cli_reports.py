"""`exam report …`, `exam compare` and `exam review`: reading and judging stored runs."""

from __future__ import annotations

import json
import sys

import click

from exam.cli import (
    InputError,
    _print_scorecards,
    _regrade,
    _runs,
    _store,
    agent_filter,
    db_option,
    emit,
    fail_input,
    main,
    report_format,
    version_filter,
    warn_missing_banks,
)
from exam.errors import ExamError


@main.group()
def report() -> None:
    """Reports over stored runs, re-graded with today's grader and bank."""


@report.command("scorecard")
@agent_filter
@version_filter
@click.option("--run", "run_ids", multiple=True, type=int, help="Only these runs.")
@click.option("--brief", is_flag=True, help="Counts only, no per-question evidence (text).")
@report_format
@db_option
def report_scorecard(agent, label, run_ids, brief, fmt, db) -> None:
    """Per agent and version: verdicts, run statuses, cost, and the evidence of every red line.

    \b
    Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store).
    """
    store = _store(db)
    _print_scorecards(store, _runs(store, agent, label, run_ids), fmt, details=not brief)



@report.command("discrimination")
@agent_filter
@report_format
@db_option
def report_discrimination(agent, fmt, db) -> None:
    """Which questions separate versions, which only guard, which are broken (questions × versions).

    \b
    Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store).
    """
    from exam.render import use_colour
    from exam.reports import discrimination
    from exam.reports.formats import render

    store = _store(db)
    result = discrimination.build(_regrade(store, _runs(store, agent)), agent)
    emit(render("discrimination", result, fmt, use_colour()))
    warn_missing_banks(result, fmt)


@report.command("rebalance")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="Only runs started on or after this date (YYYY-MM-DD; default: all runs).")
@agent_filter
@click.option("--band", type=(float, float), default=(0.3, 0.8), show_default=True,
              metavar="LOW HIGH", help="Target pass rate on the latest version.")
@click.option("--min-versions", type=int, default=3, show_default=True,
              help="Versions with enough repeats before a guard may be retired.")
@click.option("--min-repeats", type=int, default=5, show_default=True,
              help="Graded repeats a version needs to count towards --min-versions.")
@click.option("--keep-guards", type=int, default=2, show_default=True,
              help="Saturated guards kept per category (at least 1).")
@click.option("--target-informative", type=int, default=2, show_default=True,
              help="Informative questions wanted per category.")
@click.option("--min-runs-item-rest", type=int, default=20, show_default=True,
              help="Runs needed before item-rest correlations are shown.")
@click.option("--save", is_flag=True,
              help="Keep this rebalance as a snapshot; the next one shows what changed since.")
@click.option("--write-tags", is_flag=True,
              help="Record each question's class and difficulty as tags in the bank files.")
@report_format
@db_option
def report_rebalance(since, agent, band, min_versions, min_repeats, keep_guards,
                     target_informative, min_runs_item_rest, save, write_tags, fmt, db) -> None:
    """The quarterly review: difficulty, discrimination, the category mix and concrete advice.

    \b
    Exit status: 0 printed · 2 bad input (settings, no matching runs, an unreadable store).
    """
    from exam.render import use_colour
    from exam.reports import rebalance
    from exam.reports.formats import render

    settings = rebalance.Settings(band=tuple(band), min_versions=min_versions,
                                  min_repeats=min_repeats, keep_guards=keep_guards,
                                  target_informative=target_informative,
                                  min_runs_item_rest=min_runs_item_rest)
    try:
        settings.check()
    except ExamError as exc:
        raise fail_input(exc) from None
    store = _store(db)
    matching = _runs(store, agent, since=since)
    runs = rebalance.counted_runs(matching)
    if not runs:
        raise InputError("every matching run is excluded: nothing to rebalance")
    regraded = _regrade(store, runs)
    result = rebalance.build(regraded, since.strftime("%Y-%m-%d") if since else None,
                             settings, store, [r.id for r in matching if r not in runs])
    emit(render("rebalance", result, fmt, use_colour()))
    warn_missing_banks(result, fmt)
    if save:
        for agent_report, sid in zip(result["agents"], rebalance.save(store, result), strict=True):
            click.echo(f"snapshot #{sid} saved for {agent_report['agent']}", err=True)
    if write_tags:
        for path in rebalance.write_tags(result, regraded):
            click.echo(f"tags written: {path}", err=True)


@main.command("compare")
@click.argument("agent")
@click.argument("old")
@click.argument("new")
@click.option("--fail-on", type=click.Choice(["regression", "any-fail", "never"]),
              default="regression", show_default=True,
              help="Exit 1 when this holds, so CI and n8n can gate a change.")
@report_format
@db_option
def compare_cmd(agent, old, new, fail_on, fmt, db) -> None:
    """Before/after: regressions, fixes, newly flaky, the checks that moved, cost deltas.

    \b
    Exit status:
      0  nothing that --fail-on names
      1  what --fail-on names (a regression, by default)
      2  bad input (an unknown version, an unreadable store)
    """
    from exam.render import use_colour
    from exam.reports import compare
    from exam.reports.formats import render

    store = _store(db)
    every = _runs(store, agent)
    known = sorted({r.version for r in every}, key=lambda v: min(r.id for r in every
                                                                if r.version == v))
    for label in (old, new):
        if label not in known:
            raise InputError(f"no stored run of {agent} version {label!r} "
                             f"(versions: {', '.join(known)})")
    runs = [r for r in every if r.version in (old, new)]
    try:
        result = compare.build(_regrade(store, runs), agent, old, new)
    except ExamError as exc:
        raise fail_input(exc) from None
    emit(render("compare", result, fmt, use_colour()))
    warn_missing_banks(result, fmt)
    sys.exit(1 if compare.should_fail(result, fail_on) else 0)



@main.command("review")
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
    from exam.render import use_colour

    store = _store(db)
    if import_path:
        try:
            decided, blank = review.import_csv(store, import_path, reviewer or "")
        except ExamError as exc:
            raise fail_input(exc) from None
        click.echo(f"{decided} decision(s) stored, {blank} row(s) left undecided")
        return
    runs = _runs(store, agent, label)
    regraded = _regrade(store, runs, parallel=False)
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
    if not reviewer:
        reviewer = click.prompt("your name (stored with each decision)")
    colour = use_colour()
    decided = 0
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
        elif click.get_text_stream("stdin").isatty():
            reason = click.prompt("note (optional)", default="", show_default=False)
        try:
            review.decide(store, item, "pass" if choice == "p" else "fail", reviewer, reason)
        except ExamError as exc:
            raise fail_input(exc) from None
        decided += 1
    left = len(items) - decided
    click.echo(f"\n{decided} decided; {left} still in the queue. Decisions apply to every "
               "re-grade until the question or the rule changes.")


def _show_item(item, n: int, total: int, blind: bool, colour: bool) -> None:
    import re

    where = "" if blind else f" · versions {', '.join(item.versions)}"
    same = f" · same reply in {len(item.cells)} cells" if len(item.cells) > 1 else ""
    kind = "spot check of a " + item.verdict if item.spot_check else "needs_human"
    click.echo(f"\n[{n}/{total}] {item.agent} {item.case_no} ({kind}){where}{same}")
    click.echo("work order: " + json.dumps(item.work_order, ensure_ascii=False))
    click.echo("reply:\n  " + item.text.replace("\n", "\n  "))
    for c in item.checks:
        evidence = c["evidence"]
        if colour:
            evidence = re.sub(r"«(.+?)»", "\033[1;33m\\1\033[0m", evidence)
        click.echo(f"  ? {c['name']}: {evidence}")
