"""The ``exam`` command: a thin layer turning words into calls and errors into messages.

Heavy imports (flask, linebot, requests) happen inside the commands that need them,
so ``exam --help`` stays instant.
"""

from __future__ import annotations

import json
import sys

import click

from exam.errors import ExamError


class InputError(click.ClickException):
    """Bad input from the user: one line, exit status 2."""

    exit_code = 2


def fail_input(exc: ExamError) -> InputError:
    return InputError(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agent-exam")
def main() -> None:
    """Exam LLM specialist agents behind webhooks, before and after every change."""


@main.group()
def bank() -> None:
    """Question banks: validate and prove them."""


@bank.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--quiet", "-q", is_flag=True, help="Only print problems.")
def bank_check(paths: tuple[str, ...], quiet: bool) -> None:
    """Validate bank files and prove each rubric: golden replies pass, counterexamples fail.

    PATHS are files or directories (default: bank/). Exit 0 clean, 1 problems, 2 unreadable.
    """
    from exam.proof import check_paths

    report = check_paths(paths or ("bank",))
    for p in report.problems:
        click.echo(str(p))
    if not quiet:
        for n in report.notes:
            click.echo(f"note: {n}")
        proven = sum(len(i.golden) + len(i.counterexamples) for b in report.banks for i in b.items)
        status = "ok" if not report.problems else f"{len(report.problems)} problem(s)"
        click.echo(f"{report.files} file(s), {report.questions} question(s), "
                   f"{proven} example replies graded: {status}")
    sys.exit(report.exit_code)


@main.command("grade")
@click.argument("bank_path", metavar="BANK", type=click.Path())
@click.argument("replies", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def grade_cmd(bank_path: str, replies: str, fmt: str) -> None:
    """Grade recorded replies (JSON Lines) against BANK, calling nothing.

    Each line: {"case_no": ..., "reply": <text or the agent's JSON body>} with optional
    repeat, status, attempts, model_calls, tokens, latency_ms, run_status.
    Exit 0 when nothing failed, 1 when something failed, 2 on bad input.
    """
    from exam.bank import load_bank
    from exam.gradecmd import grade_file
    from exam.render import grade_lines, use_colour
    from graders import GRADER_VERSION

    try:
        b = load_bank(bank_path)
        graded = grade_file(b, replies)
    except ExamError as exc:
        raise fail_input(exc) from None
    if fmt == "json":
        results = [{**g.grade.as_dict(), "repeat": g.repeat} for g in graded]
        click.echo(json.dumps({"grader_version": GRADER_VERSION, "bank": b.path,
                               "bank_digest": b.digest, "results": results},
                              ensure_ascii=False, indent=2))
    else:
        colour = use_colour()
        counts: dict[str, int] = {}
        for g in graded:
            key = g.grade.verdict or g.grade.run_status
            counts[key] = counts.get(key, 0) + 1
            for line in grade_lines(g.grade, f"{g.grade.case_no} #{g.repeat}", colour):
                click.echo(line)
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        click.echo(f"\n{len(graded)} repl(ies): {summary}  (grader {GRADER_VERSION})")
    sys.exit(1 if any(g.grade.verdict == "fail" for g in graded) else 0)


def _store(db: str | None):
    from exam.store import Store

    try:
        return Store.open(db)
    except ExamError as exc:
        raise fail_input(exc) from None


def _registry(agents: str | None):
    from exam.registry import load_registry

    try:
        return load_registry(agents)
    except ExamError as exc:
        raise fail_input(exc) from None


db_option = click.option("--db", envvar="EXAM_DB", type=click.Path(dir_okay=False),
                         help="SQLite store (default results/exam.db, or $EXAM_DB).")
agents_option = click.option("--agents", envvar="EXAM_AGENTS", type=click.Path(dir_okay=False),
                             help="Agent registry (default webhooks/agents.yaml, or $EXAM_AGENTS).")
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
report_format = click.option("--format", "fmt", default="text", show_default=True,
                             type=click.Choice(["text", "markdown", "json", "csv", "junit"]))


def _execute(store, jobs, quiet: bool = False) -> dict[int, str]:
    """Run jobs with progress; Ctrl-C keeps what arrived and says how to resume."""
    from exam.progress import Progress
    from exam.runner import Interrupted, execute

    totals = {}
    for job in jobs:
        done = store.count_cells(job.run.id)
        totals[job.run.id] = (f"{job.agent.name} {job.run.version} (run {job.run.id})", done,
                              job.run.total_cells)
        if job.agent.blocked:
            click.echo(f"warning: {job.agent.name}: blocked, nothing will be sent: "
                       f"{job.agent.blocked}", err=True)
    progress = None if quiet else Progress(totals)
    try:
        return execute(store, jobs, progress)
    except Interrupted:
        ids = " ".join(str(j.run.id) for j in jobs)
        raise click.ClickException(
            f"interrupted: every reply that arrived is stored; finish with: exam resume {ids}"
        ) from None
    finally:
        if progress:
            progress.close()


def _print_scorecards(store, run_ids, fmt: str) -> dict:
    from exam.render import use_colour
    from exam.reports import scorecard
    from exam.reports.regrade import regrade, select_runs

    try:
        report = scorecard.build(regrade(store, select_runs(store, run_ids=run_ids)))
    except ExamError as exc:
        raise fail_input(exc) from None
    if fmt == "json":
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        click.echo(scorecard.render_text(report, use_colour()))
    return report


def _run_exit(report: dict, final: dict[int, str]) -> int:
    """0 all answered and nothing failed · 1 a verdict failed · 3 infrastructure trouble."""
    cards = report["scorecards"]
    if any(s != "done" for s in final.values()) or any(
            n for c in cards for k, n in c["run_status"].items() if k != "ok"):
        return 3
    return 1 if any(c["verdicts"]["fail"] for c in cards) else 0


@main.command("run")
@click.argument("agent_names", metavar="AGENT...", nargs=-1, required=True)
@click.option("--version", "-v", "label", required=True,
              help="Label of what is examined (v2, prompt-0913).")
@click.option("--repeats", "-n", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--only", multiple=True, metavar="CASE_NO", help="Only these questions (repeatable).")
@click.option("--category", help="Only questions of this category.")
@click.option("--notify", type=click.Choice(["line"]), help="Push the scorecard to LINE afterwards.")
@format_option
@agents_option
@db_option
def run_cmd(agent_names, label, repeats, only, category, notify, fmt, agents, db) -> None:
    """POST every work order of each AGENT's bank to its webhook, store and grade the replies.

    Exit 0 when every reply arrived and nothing failed, 1 when a verdict failed,
    3 when some replies never arrived (timeout, HTTP error, bad reply, blocked).
    """
    from exam.runner import create_run, job_for

    registry = _registry(agents)
    line_settings = _line_settings() if notify == "line" else None  # fail before any call
    store = _store(db)
    try:
        chosen = [registry.get(n) for n in dict.fromkeys(agent_names)]
        jobs = []
        for agent in chosen:
            run_id = create_run(store, agent, label, repeats=repeats, only=only, category=category)
            jobs.append(job_for(store, run_id, agent))
    except ExamError as exc:
        raise fail_input(exc) from None
    final = _execute(store, jobs, quiet=fmt == "json")
    report = _print_scorecards(store, [j.run.id for j in jobs], fmt)
    if notify == "line":
        _notify_line(store, [j.run.id for j in jobs], None, line_settings)
    sys.exit(_run_exit(report, final))


@main.command("resume")
@click.argument("run_ids", metavar="RUN_ID...", nargs=-1, required=True, type=int)
@format_option
@agents_option
@db_option
def resume_cmd(run_ids, fmt, agents, db) -> None:
    """Finish only the missing cells of runs that were interrupted or killed."""
    from exam.runner import job_for
    from exam.store import owner_alive

    registry = _registry(agents)
    store = _store(db)
    jobs = []
    try:
        for run_id in run_ids:
            run = store.get_run(run_id)
            if run.status == "running" and owner_alive(run.owner):
                raise ExamError(f"run {run_id} is still running in process {run.owner}")
            jobs.append(job_for(store, run_id, registry.get(run.agent)))
    except ExamError as exc:
        raise fail_input(exc) from None
    final = _execute(store, jobs, quiet=fmt == "json")
    report = _print_scorecards(store, list(run_ids), fmt)
    sys.exit(_run_exit(report, final))


@main.command("runs")
@click.option("--agent")
@click.option("--limit", type=int, default=50, show_default=True)
@format_option
@db_option
def runs_cmd(agent, limit, fmt, db) -> None:
    """List stored runs, newest first."""
    import datetime as dt

    store = _store(db)
    rows = []
    for r in store.list_runs(agent, limit=limit):
        rows.append({"id": r.id, "agent": r.agent, "version": r.version,
                     "status": r.shown_status, "cells": store.count_cells(r.id),
                     "cells_planned": r.total_cells, "repeats": r.repeats,
                     "bank_digest": r.bank_digest, "source": r.source,
                     "created_at": dt.datetime.fromtimestamp(r.created_at).isoformat(timespec="seconds"),
                     "error": r.error})
    if fmt == "json":
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        click.echo("no runs yet: start one with exam run AGENT --version LABEL")
        return
    click.echo(f"{'id':>4}  {'agent':<8} {'version':<14} {'status':<12} {'cells':>9}  created")
    for row in rows:
        cells = f"{row['cells']}/{row['cells_planned']}"
        click.echo(f"{row['id']:>4}  {row['agent']:<8} {row['version']:<14} {row['status']:<12} "
                   f"{cells:>9}  {row['created_at']}" + (f"  {row['error']}" if row["error"] else ""))


@main.group()
def report() -> None:
    """Reports over stored runs, re-graded with today's grader and bank."""


@report.command("scorecard")
@click.option("--agent")
@click.option("--version", "label")
@click.option("--run", "run_ids", multiple=True, type=int, help="Only these runs.")
@click.option("--brief", is_flag=True, help="Counts only, no per-question evidence (text).")
@report_format
@db_option
def report_scorecard(agent, label, run_ids, brief, fmt, db) -> None:
    """Per agent and version: verdicts, run statuses, cost, and the evidence of every red line."""
    from exam.render import use_colour
    from exam.reports import scorecard
    from exam.reports.formats import render

    store = _store(db)
    runs = _runs(store, agent, label, run_ids)
    result = scorecard.build(_regrade(store, runs))
    if fmt == "text":
        click.echo(scorecard.render_text(result, use_colour(), details=not brief))
    else:
        click.echo(render("scorecard", result, fmt), nl=False)


def _runs(store, agent=None, label=None, run_ids=(), since=None):
    from exam.reports.regrade import select_runs

    try:
        runs = select_runs(store, agent, label, run_ids)
    except ExamError as exc:
        raise fail_input(exc) from None
    if since is not None:
        runs = [r for r in runs if r.created_at >= since.timestamp()]
    if not runs:
        what = " ".join(x for x in (agent and f"agent {agent}", label and f"version {label}",
                                    since and f"since {since:%Y-%m-%d}") if x)
        raise InputError("no stored runs" + (f" match {what}" if what else "")
                         + ": start one with exam run AGENT --version LABEL")
    return runs


def _regrade(store, runs, parallel: bool = True):
    from exam.reports.regrade import regrade

    try:
        return regrade(store, runs, parallel=parallel)
    except ExamError as exc:
        raise fail_input(exc) from None


@report.command("discrimination")
@click.option("--agent")
@report_format
@db_option
def report_discrimination(agent, fmt, db) -> None:
    """Which questions separate versions, which only guard, which are broken (questions × versions)."""
    from exam.render import use_colour
    from exam.reports import discrimination
    from exam.reports.formats import render

    store = _store(db)
    result = discrimination.build(_regrade(store, _runs(store, agent)), agent)
    click.echo(render("discrimination", result, fmt, use_colour()), nl=fmt == "text")


@report.command("rebalance")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="Only runs started on or after this date (YYYY-MM-DD).")
@click.option("--agent")
@click.option("--write-tags", is_flag=True,
              help="Record each question's class and difficulty as tags in the bank files.")
@report_format
@db_option
def report_rebalance(since, agent, write_tags, fmt, db) -> None:
    """The quarterly review: difficulty, discrimination, the category mix and concrete advice."""
    from exam.render import use_colour
    from exam.reports import rebalance
    from exam.reports.formats import render

    store = _store(db)
    regraded = _regrade(store, _runs(store, agent, since=since))
    result = rebalance.build(regraded, since.strftime("%Y-%m-%d") if since else None)
    click.echo(render("rebalance", result, fmt, use_colour()), nl=fmt == "text")
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
    """Before/after: regressions, fixes, newly flaky, the checks that moved, cost deltas."""
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
    click.echo(render("compare", result, fmt, use_colour()), nl=fmt == "text")
    sys.exit(1 if compare.should_fail(result, fail_on) else 0)


def _line_settings():
    from exam.line import LineSettings

    try:
        return LineSettings.from_env()
    except ExamError as exc:
        raise fail_input(exc) from None


def _notify_line(store, run_ids, compare_to, settings=None) -> None:
    """Push scorecards to LINE; a failed push is reported and recorded, results are untouched."""
    from exam.line import notify_runs

    settings = settings or _line_settings()
    try:
        results = notify_runs(store, settings, run_ids, compare_to)
    except ExamError as exc:
        raise click.ClickException(f"LINE notification not sent: {exc}") from None
    failed = [r for r in results if r["status"] != "delivered"]
    for r in results:
        click.echo(f"LINE notification {r['id']}: {r['outcome']}", err=True)
    if failed:
        ids = " ".join(str(r["id"]) for r in failed)
        raise click.ClickException(f"LINE notification failed (results are stored); resend with: "
                                   f"exam notify line --resend {ids}")


@main.group()
def notify() -> None:
    """Send scorecards to where the team is."""


@notify.command("line")
@click.option("--run", "run_ids", multiple=True, type=int, help="Runs to report (repeatable).")
@click.option("--compare-to", help="Version to compare against (default: the previous one).")
@click.option("--resend", "resend", multiple=True, type=int, metavar="NOTIFICATION_ID",
              help="Resend recorded notifications with their original retry keys.")
@db_option
def notify_line(run_ids, compare_to, resend, db) -> None:
    """Push per-agent scorecards to the LINE group (LINE_* settings from the environment)."""
    from exam.line import deliver

    settings = _line_settings()
    store = _store(db)
    if resend:
        try:
            results = deliver(store, settings, resend)
        except ExamError as exc:
            raise fail_input(exc) from None
        for r in results:
            click.echo(f"LINE notification {r['id']}: {r['outcome']}")
        sys.exit(0 if all(r["status"] == "delivered" for r in results) else 1)
    if not run_ids:
        raise InputError("give --run RUN_ID (or --resend NOTIFICATION_ID)")
    try:
        for run_id in run_ids:
            store.get_run(run_id)
    except ExamError as exc:
        raise fail_input(exc) from None
    _notify_line(store, list(run_ids), compare_to, settings)


@main.command("worker")
@click.option("--once", is_flag=True, help="Finish at most one queued run, then exit.")
@agents_option
@db_option
def worker_cmd(once, agents, db) -> None:
    """Execute runs queued by the API or LINE; resumes runs whose worker died."""
    import logging

    from exam.store import Store
    from exam.worker import work_forever, work_once

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if once:
        store = Store.open(db)
        run_id = work_once(store, agents)
        click.echo(f"run {run_id} finished" if run_id else "nothing queued")
        return
    try:
        work_forever(db, agents)
    except KeyboardInterrupt:
        click.echo("worker stopped; an unfinished run will be resumed by the next worker", err=True)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--no-worker", is_flag=True, help="Do not start an in-process worker.")
@agents_option
@db_option
def serve_cmd(host, port, no_worker, agents, db) -> None:
    """Development server: the API, the dashboard, the LINE webhook, and a worker.

    Production: gunicorn "exam.app:create_app()" plus `exam worker` (docs/service.md).
    """
    import os

    from exam.app import create_app
    from exam.worker import start_in_thread

    overrides = {k: v for k, v in (("DB", db), ("AGENTS", agents)) if v}
    try:
        app = create_app(overrides)
    except ExamError as exc:
        raise fail_input(exc) from None
    if not no_worker and os.environ.get("WERKZEUG_RUN_MAIN") is None:
        start_in_thread(app.config["DB"], app.config["AGENTS"])
    app.run(host=host, port=port, threaded=True, use_reloader=False)


@main.command("review")
@click.option("--agent")
@click.option("--version", "label")
@click.option("--blind", is_flag=True, help="Hide version labels and shuffle the order.")
@click.option("--sample", type=click.IntRange(min=0), default=0,
              help="Also spot-check this many random passes and fails (seed 000's audit).")
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
    items = review.queue(_regrade(store, runs, parallel=False), agent, label, sample)
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


@main.command("demo")
@click.option("--db", type=click.Path(dir_okay=False), default="results/demo.db", show_default=True,
              help="A fresh demo store (overwritten).")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True)
def demo_cmd(db, repeats) -> None:
    """Start simulated W1/W2/W3 specialists on 127.0.0.1 and run the exam on two versions."""
    from exam.demo.main import run_demo

    try:
        sys.exit(run_demo(db, repeats))
    except ExamError as exc:
        raise fail_input(exc) from None


if __name__ == "__main__":  # pragma: no cover
    main()
