"""The ``exam`` command: a thin layer turning words into calls and errors into messages.

Heavy imports (flask, linebot, requests) happen inside the commands that need them,
so ``exam --help`` stays instant.
"""

from __future__ import annotations

import json
import sys

import click

from exam.errors import ExamError, StoreError


class InputError(click.ClickException):
    """Bad input from the user: one line, exit status 2."""

    exit_code = 2


def fail_input(exc: ExamError) -> InputError:
    return InputError(str(exc))


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
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="Output format.")
report_format = click.option("--format", "fmt", default="text", show_default=True,
                             type=click.Choice(["text", "markdown", "json", "csv", "junit", "html"]),
                             help="Output format (docs/reports.md).")
agent_filter = click.option("--agent", metavar="NAME", help="Only runs of this agent.")
version_filter = click.option("--version", "label", metavar="LABEL",
                              help="Only runs of this version label.")


INTERRUPTED = 130  # the shell's convention for Ctrl-C (128 + SIGINT), never a verdict's code


class Interrupted(click.ClickException):
    """Ctrl-C: what arrived is kept; exit 130, not 1 (1 means a verdict failed)."""

    exit_code = INTERRUPTED


class ExamGroup(click.Group):
    """The ``exam`` group: Ctrl-C anywhere exits 130 with one line, not click's 'Aborted!' and 1;
    a store that turns out to be damaged mid-command is one line and exit 2, wherever."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            sys.exit(INTERRUPTED)
        except StoreError as exc:
            raise fail_input(exc) from None


@click.group(cls=ExamGroup, context_settings={"help_option_names": ["-h", "--help"]})
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

    PATHS are files or directories (default: bank/; *.json, *.yaml, *.yml).

    \b
    Exit status:
      0  every file valid and every rubric proven
      1  problems (each named: file, question, field)
      2  a file unreadable, or no bank files found
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
@click.argument("paths", metavar="[BANK] REPLIES", nargs=-1, required=True, type=click.Path())
@click.option("--agent", "agent_name", metavar="NAME",
              help="Read reply bodies with this registry agent's reply mapping; its bank is the "
                   "default BANK.")
@agents_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
def grade_cmd(paths: tuple[str, ...], agent_name: str | None, agents: str | None, fmt: str) -> None:
    """Grade recorded replies (JSON Lines) against BANK, calling nothing.

    Each line: {"case_no": ..., "reply": <text or the agent's JSON body>} with optional
    repeat, status, attempts, model_calls, tokens, latency_ms, run_status. With --agent, bodies
    are read through that agent's `reply:` mapping (docs/agents.md) and BANK may be left out.
    An example: exam grade bank/W2.json docs/examples/W2-replies.jsonl

    \b
    Exit status:
      0  every reply was read and graded, none failed
      1  a verdict failed
      2  bad input (a file, a line, an option)
      3  a reply could not be read or never arrived (bad_reply, timeout, ...)
    """
    from exam.bank import load_bank
    from exam.gradecmd import grade_file
    from exam.render import grade_lines, use_colour
    from exam.replies import DEFAULT_MAPPING
    from graders import GRADER_VERSION

    mapping = DEFAULT_MAPPING
    if agent_name:
        try:
            agent = _registry(agents).get(agent_name)
        except ExamError as exc:
            raise fail_input(exc) from None
        mapping = agent.reply
    if len(paths) == 1 and agent_name:
        bank_path, replies = agent.bank, paths[0]
    elif len(paths) == 2:
        bank_path, replies = paths
    else:
        raise InputError("give BANK and REPLIES (or --agent NAME and REPLIES)")
    try:
        b = load_bank(bank_path)
        graded = grade_file(b, replies, mapping)
    except ExamError as exc:
        raise fail_input(exc) from None
    if fmt == "json":
        results = [{**g.grade.as_dict(), "repeat": g.repeat,
                    **({"problem": g.problem} if g.problem else {})} for g in graded]
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
            if g.problem:
                click.echo(f"  {g.problem}")
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        click.echo(f"\n{len(graded)} repl(ies): {summary}  (grader {GRADER_VERSION})")
    if any(g.grade.run_status != "ok" for g in graded):
        sys.exit(3)
    sys.exit(1 if any(g.grade.verdict == "fail" for g in graded) else 0)


def verdict_options(f):
    """The evidence rule of a verdict, the same options on `exam compare` and `exam run`."""
    for opt in reversed((
        click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
                     help="False-hold rate (BH over the questions that can move). Default 0.05."),
        click.option("--min-effect", type=click.FloatRange(0, 1),
                     help="Smallest drop in pass rate that can hold a change. Default 0.2."),
        click.option("--min-repeats", "min_answered", type=click.IntRange(min=1),
                     help="Answered repeats each side before a question can hold. Default 3."),
        click.option("--coverage", type=click.FloatRange(0, 1, min_open=True),
                     help="Answered share of planned cells below which the verdict is "
                          "incomplete. Default 0.95."),
        click.option("--severity-rule", "severity", multiple=True, metavar="SEV:KEY=V,…",
                     help="Per-severity rule, e.g. critical:alpha=0.1,min_effect=0.15 "
                          "(the default for critical: alpha 0.1, min_effect 0.15)."),
        click.option("--no-history", is_flag=True,
                     help="Test against the old version only, never a pooled guard history."),
    )):
        f = opt(f)
    return f


def verdict_settings(alpha, min_effect, min_answered, coverage, severity, no_history):
    from exam.reports.verdict import settings_from

    try:
        return settings_from(alpha, min_effect, min_answered, coverage, severity,
                             pool_history=not no_history)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _execute(store, jobs, quiet: bool = False) -> dict[int, str]:
    """Run jobs with progress; Ctrl-C keeps what arrived and says how to resume."""
    from exam.progress import Progress
    from exam.runner import Interrupted as RunInterrupted
    from exam.runner import execute

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
        return execute(store, jobs, progress)
    except RunInterrupted:
        ids = " ".join(str(j.run.id) for j in jobs)
        raise Interrupted(
            f"interrupted: every reply that arrived is stored; finish with: exam resume {ids}"
        ) from None
    finally:
        if progress:
            progress.close()


def emit(output: str) -> None:
    """Print a rendered report, ending it with exactly one newline."""
    click.echo(output, nl=not output.endswith("\n"))


def warn_missing_banks(report: dict, fmt: str = "") -> None:
    """Runs left out for a missing bank, on stderr (text and markdown say it in the report)."""
    if fmt not in ("text", "markdown", "html"):
        for m in report.get("missing_banks", []):
            click.echo(f"warning: {m['message']}", err=True)


def _print_scorecards(store, runs, fmt: str, details: bool = True) -> dict:
    """Re-grade ``runs``, print their scorecards in ``fmt``, return the report."""
    from exam.render import use_colour
    from exam.reports import scorecard
    from exam.reports.formats import render

    report = scorecard.build(_regrade(store, runs))
    if fmt == "text":
        emit(scorecard.render_text(report, use_colour(), details=details))
    else:
        emit(render("scorecard", report, fmt))
    warn_missing_banks(report, fmt)
    return report


def _run_exit(report: dict, final: dict[int, str]) -> int:
    """The verdict codes without a baseline: 0 all answered, nothing failed or waiting ·
    1 a verdict failed · 3 infrastructure trouble (incomplete) · 5 needs_human waits (pending)."""
    cards = report["scorecards"]
    if any(s != "done" for s in final.values()) or any(
            n for c in cards for k, n in c["run_status"].items() if k != "ok"):
        return 3
    if any(c["verdicts"]["fail"] for c in cards):
        return 1
    return 5 if any(c["verdicts"]["needs_human"] for c in cards) else 0


def _against(store, jobs, against: str, settings, fmt: str) -> int:
    """Compare each run's agent against ``against``: print the verdicts, return the exit code."""
    from exam.render import use_colour
    from exam.reports import compare
    from exam.reports.formats import render, verdict_lines
    from exam.reports.regrade import regrade, select_runs
    from exam.reports.verdict import EXIT_CODES, combine

    words = []
    for job in jobs:
        runs = [r for r in select_runs(store, job.agent.name)
                if r.version != job.run.version or r.id == job.run.id]
        try:
            result = compare.build(regrade(store, runs), job.agent.name, against, job.run.version,
                                   settings)
        except ExamError as exc:
            raise fail_input(exc) from None
        words.append(result["verdict"])
        if fmt == "json":
            emit(render("compare", result, "json"))
        else:
            click.echo(f"\n{job.agent.name}: {against} → {job.run.version}")
            for line in verdict_lines(result, use_colour()):
                click.echo(line)
    return EXIT_CODES[combine(words)]


@main.command("run")
@click.argument("agent_names", metavar="AGENT...", nargs=-1, required=True)
@click.option("--version", "-v", "label", required=True,
              help="Label of what is examined (v2, prompt-0913).")
@click.option("--repeats", "-n", type=click.IntRange(min=1), default=1, show_default=True,
              help="Times each question is asked.")
@click.option("--only", multiple=True, metavar="CASE_NO", help="Only these questions (repeatable).")
@click.option("--category", help="Only questions of this category.")
@click.option("--notify", type=click.Choice(["line"]), help="Push the scorecard to LINE afterwards.")
@click.option("--against", metavar="VERSION",
              help="Decide the change against this stored version: exit with the verdict's code.")
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
    from exam.runner import create_run, job_for

    settings = verdict_settings(**rule)

    registry = _registry(agents)
    if notify == "line":
        from exam.cli_service import line_settings, notify_line_runs

        line = line_settings()  # fail before any agent is called
    store = _store(db)
    try:
        chosen = [registry.get(n) for n in dict.fromkeys(agent_names)]
        jobs = []
        for agent in chosen:
            run_id = create_run(store, agent, label, repeats=repeats, only=only, category=category)
            jobs.append(job_for(store, run_id, agent))
    except ExamError as exc:
        raise fail_input(exc) from None
    if against:
        for job in jobs:
            if not store.list_runs(job.agent.name, against):
                raise InputError(f"--against: no stored run of {job.agent.name} version "
                                 f"{against!r}")
    final = _execute(store, jobs, quiet=fmt == "json")
    report = _print_scorecards(store, [j.run for j in jobs], "text" if against else fmt)
    if notify == "line":
        notify_line_runs(store, [j.run.id for j in jobs], against, line)
    if against:
        sys.exit(_against(store, jobs, against, settings, fmt))
    sys.exit(_run_exit(report, final))


@main.command("resume")
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
    from exam.runner import job_for
    from exam.store import RETRY_STATUSES, owner_alive

    store = _store(db)
    try:
        runs = [store.get_run(run_id) for run_id in run_ids]  # unknown runs first
    except ExamError as exc:
        raise fail_input(exc) from None
    registry = _registry(agents)
    jobs = []
    try:
        for run in runs:
            if run.status == "running" and owner_alive(run.owner):
                raise ExamError(f"run {run.id} is still running in process {run.owner}")
            jobs.append(job_for(store, run.id, registry.get(run.agent)))
    except ExamError as exc:
        raise fail_input(exc) from None
    if retry_failed:
        for run in runs:
            n = store.retire_failed_cells(run.id)
            click.echo(f"run {run.id}: {n} cell(s) that did not arrive "
                       f"({', '.join(RETRY_STATUSES)}) will run again", err=True)
    final = _execute(store, jobs, quiet=fmt == "json")
    report = _print_scorecards(store, runs, fmt)
    sys.exit(_run_exit(report, final))


@main.group("runs", invoke_without_command=True)
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

    store = _store(db)
    rows = []
    for r in store.list_runs(agent, limit=limit):
        rows.append({"id": r.id, "agent": r.agent, "version": r.version,
                     "status": outcome(store, r), "run_status": store.status_counts(r.id),
                     "excluded_reason": r.excluded_reason, "cells": store.count_cells(r.id),
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
    from exam.textsafe import terminal_data

    click.echo(f"{'id':>4}  {'agent':<8} {'version':<14} {'status':<12} {'cells':>9}  created")
    for row in terminal_data(rows):  # an error text from an agent may hold ESC
        cells = f"{row['cells']}/{row['cells_planned']}"
        note = row["error"] or ""
        if row["excluded_reason"]:
            note = f"excluded: {row['excluded_reason']}"
        elif row["status"] in ("blocked", "incomplete"):
            note = ", ".join(f"{k} {n}" for k, n in sorted(row["run_status"].items()) if k != "ok")
        click.echo(f"{row['id']:>4}  {row['agent']:<8} {row['version']:<14} {row['status']:<12} "
                   f"{cells:>9}  {row['created_at']}" + (f"  {note}" if note else ""))


@runs_cmd.command("exclude")
@click.argument("run_id", type=int)
@click.option("--reason", required=True, help="Why (kept with the run and shown).")
@db_option
def runs_exclude(run_id, reason, db) -> None:
    """Leave a run out of every report; it stays listed as excluded.

    \b
    Exit status: 0 excluded · 2 bad input (an unknown run, no --reason).
    """
    store = _store(db)
    if not reason.strip():
        raise InputError("--reason: say why the run is excluded")
    try:
        store.set_excluded(run_id, reason.strip())
    except ExamError as exc:
        raise fail_input(exc) from None
    click.echo(f"run {run_id} excluded from every report: {reason.strip()}")


@runs_cmd.command("include")
@click.argument("run_id", type=int)
@db_option
def runs_include(run_id, db) -> None:
    """Put an excluded run back into the reports.

    \b
    Exit status: 0 included · 2 bad input (an unknown run).
    """
    store = _store(db)
    try:
        store.set_excluded(run_id, None)
    except ExamError as exc:
        raise fail_input(exc) from None
    click.echo(f"run {run_id} included again")


@main.group("store")
def store_cmd() -> None:
    """Look after the store file."""


@store_cmd.command("prune")
@db_option
def store_prune(db) -> None:
    """Drop cached grades made under other grader rules (never read again by this version).

    \b
    Exit status: 0 pruned · 2 bad input (an unreadable store).
    """
    from exam.reports.regrade import rules_key

    store = _store(db)
    rules = rules_key()
    gone = store.prune_grade_cache(rules)
    kept = store.grade_cache_counts().get(rules, 0)
    click.echo(f"dropped {gone} cached grade(s) of older grader rules; kept {kept} of today's")


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


@main.command("demo")
@click.option("--db", type=click.Path(dir_okay=False), default="results/demo.db", show_default=True,
              help="The demo store: rebuilt from scratch by every `exam demo`.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repeats of every question per version.")
@click.option("--serve", is_flag=True,
              help="Afterwards keep the demo agents and the dashboard running (Ctrl-C stops), "
                   "so every command of the README tour works on the demo data.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="With --serve: the dashboard's port on 127.0.0.1.")
def demo_cmd(db, repeats, serve, port) -> None:
    """Start simulated W1/W2/W3 specialists on 127.0.0.1 and run the exam on two versions.

    \b
    Exit status: 0 done · 2 bad input (a broken demo bank) · 130 interrupted.
    """
    from exam.demo.main import run_demo

    try:
        sys.exit(run_demo(db, repeats, serve=_serve_demo(port) if serve else None))
    except ExamError as exc:
        raise fail_input(exc) from None


def _serve_demo(port: int):
    """What ``exam demo --serve`` does once the demo exam is done: serve until Ctrl-C."""

    def serve(server, db: str) -> None:
        import logging
        import os
        import secrets
        from pathlib import Path

        from exam.app import create_app
        from exam.demo.main import write_registry
        from exam.worker import start_in_thread

        registry = Path(db).with_name("demo-agents.yaml")
        write_registry(registry, server)
        token = os.environ.get("EXAM_API_TOKEN") or secrets.token_urlsafe(16)
        app = create_app({"DB": db, "AGENTS": str(registry), "API_TOKEN": token})
        start_in_thread(db, str(registry))
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        click.echo(
            f"\n{'=' * 72}\nServing the demo until Ctrl-C (every `exam demo` rebuilds {db}):\n"
            f"  dashboard    http://127.0.0.1:{port}/   (sign in with the token below)\n"
            f"  API token    {token}\n"
            f"  demo agents  {server.url('W1', 'v2')} (and W2, W3; v1 as well)\n\n"
            f"In another terminal, point the exam at them and follow the README tour:\n"
            f"  source .venv/bin/activate\n"
            f"  export EXAM_DB={db} EXAM_AGENTS={registry}\n"
            f"  exam runs\n"
            f"  exam run W1 W2 W3 --version v3 --repeats 3")
        try:
            app.run(host="127.0.0.1", port=port, threaded=True, use_reloader=False)
        except OSError as exc:
            raise InputError(f"--port {port}: cannot listen ({exc.strerror or exc}); "
                             f"choose another with --port") from None
        click.echo("demo stopped", err=True)  # the server returns only on Ctrl-C
        sys.exit(INTERRUPTED)

    return serve


# the other command modules register themselves on `main`
from exam import cli_agents, cli_reports, cli_service  # noqa: E402, F401

if __name__ == "__main__":  # pragma: no cover
    # as `python -m exam.cli`, this file is __main__; the commands registered themselves on
    # the `main` of the importable exam.cli module, so run that one
    from exam.cli import main as _main

    _main()
