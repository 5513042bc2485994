"""`exam watch AGENT`: the shipped version asked again, compared with its own runs at ship
time (exam/decide/watch.py)."""

from __future__ import annotations

import sys

import click

from exam.cli.common import (
    ChannelChoice,
    agents_option,
    db_option,
    emit,
    open_registry,
    open_store,
    verdict_options,
    verdict_settings,
)


@click.command("watch")
@click.argument("agent")
@click.option("--repeats", "-n", type=click.IntRange(min=1), default=1, show_default=True,
              help="Repeats of every question in the first round.")
@click.option("--budget", type=click.IntRange(min=0), default=100, show_default=True,
              help="Agent calls the rounds after the first may spend.")
@click.option("--step", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repeats per question that answered worse, per round.")
@click.option("--max-repeats", type=click.IntRange(min=2), default=20, show_default=True,
              help="Answered repeats of a question at which it is asked no more.")
@verdict_options
@click.option("--notify", type=ChannelChoice(),
              help="Push the verdict to this channel (exam notify CHANNEL).")
@click.option("--notify-on", type=click.Choice(["not-ship", "always"]), default="not-ship",
              show_default=True,
              help="not-ship: push hold, incomplete, undecided and pending; always: every "
                   "verdict.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@agents_option
@db_option
def watch_cmd(agent, repeats, budget, step, max_repeats, alpha, min_effect, min_answered,
              coverage, severity, no_history, notify, notify_on, fmt, agents, db) -> None:
    """Ask AGENT's shipped version again and compare it with its own runs at ship time.

    Nobody changed anything, and it may have got worse (a model updated behind the same
    name, a knowledge base changed). The shipped version (exam ship AGENT) is asked every
    question its runs asked, --repeats times, under its own label; a question that answered
    worse is asked --step more times a round, while its runs at ship time could still show
    the drop, up to --max-repeats, within --budget calls. A drift is a hold naming the
    questions. The watch's runs are never counted as the version's own.

    \b
    Exit status:
      0  ship: no drift these repeats can show
      1  hold: drift, with the questions and their evidence
      2  bad input (nothing shipped, its runs unfinished, the agent moved, the store)
      3  incomplete (replies that did not arrive)
      4  undecided (a question answered worse and its repeats cannot say)
      5  pending (needs_human replies: exam review)
    """
    import json
    import os

    from exam.cli.notify import channel_settings
    from exam.decide import watch as w
    from exam.marks import use_colour

    settings = verdict_settings(alpha, min_effect, min_answered, coverage, severity, no_history)
    if notify:
        from exam import notify as channels

        channel_settings(channels.get(notify))  # a missing setting: before any agent is called
    store = open_store(db)
    registry = open_registry(agents)
    now = w.run_watch(store, registry, agent, settings, echo=lambda m: click.echo(m, err=True),
                      repeats=repeats, budget=budget, step=step, max_repeats=max_repeats,
                      notify=notify, notify_on=notify_on.replace("-", "_"))
    report = now.report
    emit(json.dumps(report, ensure_ascii=False, indent=2) if fmt == "json"
         else w.text(report, use_colour()))
    for r in w.notify(store, now, os.environ):  # a failed send is said; the verdict stands
        click.echo(f"{notify} notification {r['id']}: {r['outcome']}"
                   + ("" if r["status"] == "delivered" else
                      f" (resend with: exam notify {notify} --resend {r['id']})"), err=True)
    sys.exit(report["exit_code"])
