"""`exam run`, `exam resume` and `exam runs`: examine agents now, finish what was cut short,
list what is stored."""

from __future__ import annotations

import json
import sys

import click

from exam.cli.common import (
    ChannelChoice,
    InputError,
    Interrupted,
    agent_filter,
    agents_option,
    db_option,
    emit,
    format_option,
    open_registry,
    open_store,
    print_scorecards,
    verdict_options,
    verdict_settings,
)
from exam.cli.notify import channel_settings, notify_channel_runs
from exam.errors import ExamError, RunBusy
from exam.records import RETRY_STATUSES, RunState
from exam.textsafe import terminal_data


def _execute(store, jobs, quiet: bool = False) -> dict[int, str]:
    """Run jobs with progress; Ctrl-C keeps what arrived and says how to resume."""
    from exam.pipeline.lease import renewed
    from exam.pipeline.progress import Progress
    from exam.pipeline.runner import TAKEN_OVER, execute
    from exam.pipeline.runner import Interrupted as RunInterrupted
    from exam.reports.kept import keep_finished

    totals = {}
    for job in jobs:
        done = store.count_cells(job.run.id)
        totals[job.run.id] = (f"{job.agent.name} {job.run.version} (run {job.run.id})", done,
                              job.run.total_cells)
        for warning in job.agent.warnings:  # names only, never values
            click.echo(f"warning: {job.agent.name}: {warning}", err=True)
        if job.agent.blocked:
            click.echo(f"warning: {job.agent.name}: blocked, nothing will be sent: "
                       f"{job.agent.blocked}", err=True)
    progress = None if quiet else Progress(totals)
    try:
        # held by a lease this process renews: a run whose process died reads interrupted on
        # every host within LEASE_S, and `exam resume` (anywhere) can take it
        with renewed(store, [job.run.id for job in jobs]):
            final = execute(store, jobs, progress)
        for run_id, status in final.items():
            if status == RunState.DONE:  # what its pages read, made now, not on a first view
                keep_finished(store, run_id)
            if status == TAKEN_OVER:
                click.echo(f"run {run_id}: taken over by another process (`exam resume` or a "
                           f"worker), which runs the rest; this one stopped", err=True)
        return final
    except RunInterrupted:
        ids = " ".join(str(j.run.id) for j in jobs)
        raise Interrupted(
            f"interrupted: every reply that arrived is stored; finish with: exam resume {ids}"
        ) from None
    finally:
        if progress:
            progress.close()


def _run_exit(report: dict, final: dict[int, str]) -> int:
    """The verdict codes without a baseline: 0 all answered, nothing failed or waiting ·
    1 a verdict failed · 3 infrastructure trouble (incomplete) · 5 needs_human waits (pending)."""
    cards = report["scorecards"]
    if any(s != RunState.DONE for s in final.values()) or any(
            n for c in cards for k, n in c["run_status"].items() if k != "ok"):
        return 3
    if any(c["verdicts"]["fail"] for c in cards):
        return 1
    return 5 if any(c["verdicts"]["needs_human"] for c in cards) else 0


def _against(store, jobs, against: str, settings, fmt: str) -> int:
    """Compare each run's version against ``against`` (``shipped``: the last version shipped
    before it): print the verdicts, return the exit code. The version is every counted run
    of it, this one among them: the same word as exam compare, the API and the dashboard."""
    from exam.marks import use_colour
    from exam.reports import kinds
    from exam.reports.compare import verdict_lines
    from exam.reports.inputs import LOCAL
    from exam.reports.selection import select_runs
    from exam.reports.verdict import EXIT_CODES, combine

    words, reports = [], []
    for job in jobs:
        name = job.agent.name
        result = kinds.build("compare", store, LOCAL, select_runs(store, name), agent=name,
                             old=None if against == SHIPPED else against,
                             new=job.run.version, settings=settings)
        words.append(result["verdict"])
        reports.append(result)
        if fmt != "json":
            click.echo(f"\n{name}: {result['old']} → {job.run.version} "
                       f"(runs {', '.join(map(str, result['new_run_ids']))})")
            for line in verdict_lines(result, use_colour()):
                click.echo(line)
    if fmt == "json":  # one document on stdout, nothing else: a pipe reads it whole
        from exam.reports.formats import render

        shown = [render("compare", r, "json") for r in reports]
        emit(shown[0] if len(shown) == 1 else "[\n" + ",\n".join(shown) + "\n]")
    return EXIT_CODES[combine(words)]


SHIPPED = "shipped"  # --against shipped: the last version shipped before this one


@click.command("run")
@click.argument("agent_names", metavar="AGENT...", nargs=-1, required=True)
@click.option("--version", "-v", "label", required=True,
              help="Label of what is examined (v2, prompt-0913).")
@click.option("--repeats", "-n", type=click.IntRange(min=1), default=1, show_default=True,
              help="Times each question is asked.")
@click.option("--only", multiple=True, metavar="CASE_NO", help="Only these questions (repeatable).")
@click.option("--category", help="Only questions of this category.")
@click.option("--notify", type=ChannelChoice(),
              help="Send the scorecard to this channel afterwards (exam notify CHANNEL).")
@click.option("--against", metavar="VERSION",
              help="Decide the change against this stored version (`shipped`: the last "
                   "version shipped before it): exit with the verdict's code.")
@verdict_options
@format_option
@agents_option
@db_option
def run_cmd(agent_names, label, repeats, only, category, notify, against, fmt, agents, db,
            **rule) -> None:
    """POST every work order of each AGENT's bank to its webhook, store and grade the replies.

    \b
    Exit status without --against:
      0  every reply arrived, nothing failed, nothing waits for review
      1  a verdict failed
      2  bad input (registry, bank, options)
      3  some replies never arrived (timeout, HTTP error, bad reply, agent error, blocked,
           harness error)
      5  needs_human verdicts wait for `exam review`
      130  interrupted (what arrived is kept: exam resume finishes it)
    With --against VERSION, the verdict's code: 0 ship · 1 hold · 3 incomplete ·
    4 undecided · 5 pending (2 stays bad input).
    """
    from exam.pipeline.runner import create_run, job_for

    settings = verdict_settings(**rule)

    registry = open_registry(agents)
    if notify:
        from exam import notify as notifications

        told = channel_settings(notifications.get(notify))  # fail before any agent is called
    store = open_store(db)
    chosen = [registry.get(n) for n in dict.fromkeys(agent_names)]
    if against:  # before any run is made: a refused command leaves nothing behind
        if against == label:
            raise InputError(f"--against {against}: the version this run examines; a version "
                             "against itself shows no change (give the version before it)")
        from exam.reports.selection import compare_runs, select_runs

        for agent in chosen:
            if against == SHIPPED and not select_runs(store, agent.name):
                raise InputError(f"--against shipped: {agent.name} has no counted run yet, so "
                                 "nothing shipped (run its first version without --against)")
            if against != SHIPPED:
                try:
                    compare_runs(store, agent.name, against, against)
                except ExamError as exc:
                    raise InputError(f"--against: {exc}") from None
    jobs = []
    for agent in chosen:
        run_id = create_run(store, agent, label, repeats=repeats, only=only, category=category)
        store.hold_run(run_id)  # created by this process: never refused
        jobs.append(job_for(store, run_id, agent))
    final = _execute(store, jobs, quiet=fmt == "json")
    if against and fmt == "json":  # stdout holds the compare's JSON alone
        from exam.reports import kinds
        from exam.reports.inputs import LOCAL

        report = kinds.build("scorecard", store, LOCAL, [j.run for j in jobs])
    else:
        report = print_scorecards(store, [j.run for j in jobs], "text" if against else fmt)
    _hint_unanswered(report)
    if notify:
        notify_channel_runs(store, notify, [j.run.id for j in jobs],
                            None if against == SHIPPED else against, told)
    if against:
        sys.exit(_against(store, jobs, against, settings, fmt))
    sys.exit(_run_exit(report, final))


def _hint_unanswered(report: dict) -> None:
    """An agent none of whose cells was answered is a setup mistake (port, path, token,
    mapping), not a bad version: say where to look before anyone reads the scorecard."""
    for card in report["scorecards"]:
        counts = {k: n for k, n in card["run_status"].items() if n}
        if counts and not counts.get("ok") and not counts.get("truncated"):
            runs = " ".join(str(i) for i in card["run_ids"])
            if set(counts) == {"blocked"}:  # the warning before the run said why
                click.echo(f"next: nothing was sent to {card['agent']}: fix what the warning "
                           f"above names, then `exam resume {runs} --retry-failed` (a new run of "
                           f"the same version would keep these blocked cells in its reports)",
                           err=True)
                continue
            then = (f"then `exam resume {runs} --retry-failed`"
                    if set(counts) & set(RETRY_STATUSES) else  # resume sends those again
                    f"then run it again and leave this one out of every report: "
                    f"`exam runs exclude {runs} --reason \"setup\"`")
            click.echo(f"next: no reply of {card['agent']} was answered; "
                       f"`exam agents check {card['agent']}` shows one reply and what to fix, "
                       f"{then}", err=True)


@click.command("resume")
@click.argument("run_ids", metavar="RUN_ID...", nargs=-1, required=True, type=int)
@click.option("--retry-failed", is_flag=True,
              help="Also run again the cells that did not arrive (blocked, timeout, http_error); "
                   "their earlier attempts stay on record.")
@format_option
@agents_option
@db_option
def resume_cmd(run_ids, retry_failed, fmt, agents, db) -> None:
    """Finish only the missing cells of runs that were interrupted or killed.

    \b
    Exit status:
      0  every reply arrived and nothing failed
      1  a verdict failed
      2  bad input (an unknown run, a run still running elsewhere)
      3  some replies never arrived (timeout, HTTP error, bad reply, blocked)
      5  needs_human verdicts wait for `exam review`
      130  interrupted (what arrived is kept)
    """
    from exam.pipeline.runner import job_for, missing_cells
    from exam.store import LEASE_S, held_elsewhere

    store = open_store(db)
    runs = [store.get_run(run_id) for run_id in dict.fromkeys(run_ids)]  # unknown runs first
    registry = open_registry(agents)
    busy = [why for why in map(held_elsewhere, runs) if why]
    if busy:  # none is taken while one is still running elsewhere
        raise InputError("; ".join(busy))
    jobs = [job_for(store, run.id, registry.get(run.agent)) for run in runs]
    taken: list[int] = []
    for run in runs:  # each taken with a lease: two `exam resume` of one run cannot both win
        try:
            store.hold_run(run.id)
        except RunBusy as exc:  # taken by another process since the check above
            held = ""
            if taken:  # this command's lease on them runs out, as a dead process's would
                which = (f"run {taken[0]}, taken by this command, reads" if len(taken) == 1 else
                         f"runs {' '.join(map(str, taken))}, taken by this command, read")
                held = (f"; {which} interrupted again when the lease runs out (within "
                        f"{LEASE_S:.0f} s)")
            raise InputError(f"{exc}: nothing was sent{held}") from None
        taken.append(run.id)
    if retry_failed:
        for run in runs:
            n = store.retire_failed_cells(run.id)
            click.echo(f"run {run.id}: {n} cell(s) that did not arrive "
                       f"({', '.join(RETRY_STATUSES)}) will run again", err=True)
    for run in runs:  # said before anything runs: a finished run is only reported again
        if not missing_cells(store, run):
            again = "" if retry_failed else "; --retry-failed re-runs cells that did not arrive"
            click.echo(f"run {run.id}: nothing to resume, every cell is stored{again}", err=True)
    final = _execute(store, jobs, quiet=fmt == "json")
    report = print_scorecards(store, runs, fmt)
    sys.exit(_run_exit(report, final))


@click.group("runs", invoke_without_command=True)
@agent_filter
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many runs.")
@format_option
@db_option
@click.pass_context
def runs_cmd(ctx, agent, limit, fmt, db) -> None:
    """List stored runs, newest first (blocked / incomplete: cells that did not arrive).

    \b
    Exit status: 0 listed · 2 bad input (an unreadable store).
    """
    if ctx.invoked_subcommand is not None:
        return
    import datetime as dt

    from exam.reports.regrade import outcome
    from exam.reports.selection import watch_of

    store = open_store(db)
    rows = []
    listed = store.list_runs(agent, limit=limit)
    counts = store.status_counts_of([r.id for r in listed])
    rounds = store.settle_rounds_of([r.id for r in listed])
    for r in listed:
        rows.append({"id": r.id, "agent": r.agent, "version": r.version,
                     "status": outcome(store, r, counts[r.id]), "run_status": counts[r.id],
                     "excluded_reason": r.excluded_reason, "cells": sum(counts[r.id].values()),
                     "cells_planned": r.total_cells, "repeats": r.repeats,
                     "bank_digest": r.bank_digest, "source": r.source,
                     # the process that holds (or last held) the run: host id and pid
                     "owner": r.owner,
                     "created_at": dt.datetime.fromtimestamp(r.created_at).isoformat(timespec="seconds"),
                     "error": r.error,
                     # a round of `exam compare OLD NEW --settle`: a run of NEW, made for it
                     "settle_of": ({"old": rounds[r.id][0], "new": rounds[r.id][1]}
                                   if r.id in rounds else None),
                     # a round of `exam watch`: never counted as the version's own
                     "watch_of": watch_of(r)})
    if fmt == "json":
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        click.echo("no runs yet: start one with exam run AGENT --version LABEL")
        return

    click.echo(f"{'id':>4}  {'agent':<8} {'version':<14} {'status':<12} {'cells':>9}  created")
    grouped = settle_groups(rows)
    for row in terminal_data(rows):  # an error text from an agent may hold ESC
        if row["settle_of"]:
            group = grouped[_settle_key(row)]
            if row["id"] != group[0]["id"]:
                continue  # one line for every round of one comparison, at its newest
            ids = ", ".join(str(g["id"]) for g in reversed(group))
            cells = f"{sum(g['cells'] for g in group)}/{sum(g['cells_planned'] for g in group)}"
            status = "settle"
            note = (f"{len(group)} settle round(s) of exam compare {row['agent']} "
                    f"{row['settle_of']['old']} {row['settle_of']['new']} (runs {ids}): "
                    f"counted in {row['version']}'s verdict")
            click.echo(f"{row['id']:>4}  {row['agent']:<8} {row['version']:<14} {status:<12} "
                       f"{cells:>9}  {row['created_at']}  {note}")
            continue
        cells = f"{row['cells']}/{row['cells_planned']}"
        note = row["error"] or ""
        if row["excluded_reason"]:
            note = f"excluded: {row['excluded_reason']} (exam runs include {row['id']})"
        elif row["status"] in ("blocked", "incomplete"):
            note = ", ".join(f"{k} {n}" for k, n in sorted(row["run_status"].items()) if k != "ok")
        elif row["status"] == RunState.RUNNING and row["owner"]:
            note = f"on {row['owner']}"  # which worker (host id:pid) holds it
        if row["watch_of"] and not row["excluded_reason"]:
            w = row["watch_of"]
            note = (f"round {w['round']} of watch {w['watch']} (exam watch): not counted in "
                    f"{row['version']}'s reports" + (f"; {note}" if note else ""))
        click.echo(f"{row['id']:>4}  {row['agent']:<8} {row['version']:<14} {row['status']:<12} "
                   f"{cells:>9}  {row['created_at']}" + (f"  {note}" if note else ""))


def _settle_key(row: dict) -> tuple[str, str, str]:
    return row["agent"], row["settle_of"]["old"], row["settle_of"]["new"]


def settle_groups(rows: list[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """The settle rounds among ``rows`` (newest first), by the comparison that made them."""
    out: dict[tuple[str, str, str], list[dict]] = {}
    for row in rows:
        if row.get("settle_of"):
            out.setdefault(_settle_key(row), []).append(row)
    return out


@runs_cmd.command("exclude")
@click.argument("run_id", type=int)
@click.option("--reason", required=True, help="Why (kept with the run and shown).")
@db_option
def runs_exclude(run_id, reason, db) -> None:
    """Leave a run out of every report; it stays listed as excluded.

    \b
    Exit status: 0 excluded · 2 bad input (an unknown run, no --reason).
    """
    store = open_store(db)
    if not reason.strip():
        raise InputError("--reason: say why the run is excluded")
    store.set_excluded(run_id, reason.strip())
    click.echo(f"run {run_id} excluded from every report: {reason.strip()}")


@runs_cmd.command("include")
@click.argument("run_id", type=int)
@db_option
def runs_include(run_id, db) -> None:
    """Put an excluded run back into the reports.

    \b
    Exit status: 0 included · 2 bad input (an unknown run).
    """
    store = open_store(db)
    store.set_excluded(run_id, None)
    click.echo(f"run {run_id} included again")
