"""`exam report …`, `exam compare` and `exam review`: reading and judging stored runs."""

from __future__ import annotations

import json
import sys

import click

from exam.cli import (
    InputError,
    _print_scorecards,
    _registry,
    _regrade,
    _runs,
    _store,
    agent_filter,
    agents_option,
    db_option,
    emit,
    fail_input,
    main,
    report_format,
    verdict_options,
    verdict_settings,
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
@click.option("--k", "k", type=click.IntRange(min=1), default=3, show_default=True,
              help="pass^k at this fixed k (unbiased C(c,k)/C(n,k)).")
@click.option("--details", is_flag=True,
              help="List every question (text); by default regression guards fold into one line.")
@report_format
@db_option
def report_discrimination(agent, k, details, fmt, db) -> None:
    """Which questions separate versions, which only guard, which are broken (questions × versions).

    \b
    Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store).
    """
    from exam.render import use_colour
    from exam.reports import discrimination
    from exam.reports.formats import render

    store = _store(db)
    result = discrimination.build(_regrade(store, _runs(store, agent)), agent, k)
    if fmt == "text" and details:
        from exam.reports.discrimination import text
        from exam.reports.kinds import missing_notes

        emit("\n".join([*missing_notes(result), text(result, use_colour(), True)]))
    else:
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
@click.option("--fail-on", type=click.Choice(["verdict", "regression", "any-fail", "never"]),
              default="verdict", show_default=True,
              help="verdict: exit with the verdict's code; any-fail: also 1 when a shipped "
                   "version fails anything; never: 0. (regression is the old name of verdict.)")
@verdict_options
@click.option("--settle", is_flag=True,
              help="Re-run only the undecided questions on NEW until decided or --budget.")
@click.option("--budget", type=click.IntRange(min=1), default=300, show_default=True,
              help="Agent calls --settle may spend.")
@click.option("--step", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repeats per undecided question per --settle round.")
@click.option("--max-repeats", type=click.IntRange(min=2), default=30, show_default=True,
              help="Answered repeats of NEW per question at which --settle stops.")
@report_format
@agents_option
@db_option
def compare_cmd(agent, old, new, fail_on, alpha, min_effect, min_answered, coverage, severity,
                no_history, settle, budget, step, max_repeats, fmt, agents, db) -> None:
    """Before/after: the verdict (ship, hold, incomplete, undecided, pending) with its evidence.

    \b
    Exit status:
      0  ship
      1  hold (a regression, with its evidence)
      2  bad input (an unknown version, an unreadable store)
      3  incomplete (answered cells below the coverage floor)
      4  undecided (too few repeats: which questions, how many more)
      5  pending (needs_human cells decide it: exam review)
    """
    from exam.render import use_colour
    from exam.reports import compare
    from exam.reports.formats import render

    settings = verdict_settings(alpha, min_effect, min_answered, coverage, severity, no_history)
    from exam.reports.selection import compare_runs

    store = _store(db)
    try:
        every = compare_runs(store, agent, old, new)
    except ExamError as exc:
        raise fail_input(exc) from None
    if settle:
        from exam.settle import settle_cli

        result = settle_cli(store, _registry(agents), agent, old, new, settings,
                            budget=budget, step=step, max_repeats=max_repeats,
                            echo=lambda m: click.echo(m, err=True))
    else:
        try:
            result = compare.build(_regrade(store, every), agent, old, new, settings)
        except ExamError as exc:
            raise fail_input(exc) from None
    emit(render("compare", result, fmt, use_colour()))
    warn_missing_banks(result, fmt)
    sys.exit(compare.exit_code(result, fail_on))


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

    from exam.textsafe import terminal

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
