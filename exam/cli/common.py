"""What every ``exam`` command shares: options, openers, output helpers and the one place that
turns an ``ExamError`` into a message and an exit status.

Heavy imports (flask, linebot, requests) happen inside the functions that need them, so
``exam --help`` stays instant.
"""

from __future__ import annotations

import sys

import click

from exam.errors import ExamError

INTERRUPTED = 130  # the shell's convention for Ctrl-C (128 + SIGINT), never a verdict's code


class InputError(click.ClickException):
    """Bad input from the user: one line, exit status 2."""

    exit_code = 2


class Interrupted(click.ClickException):
    """Ctrl-C: what arrived is kept; exit 130, not 1 (1 means a verdict failed)."""

    exit_code = INTERRUPTED


def few_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc's malloc keep at most ``arenas`` arenas, unless MALLOC_ARENA_MAX says.

    By default it gives each thread its own, up to 8 per core; with the GIL only one thread
    allocates at a time, so the 64 threads of a run gained nothing from them but resident
    memory (peak of 10,000 cells at concurrency 64: 93 → 89 MB with SQLite, 100 → 95 MB
    with PostgreSQL; docs/performance.md). Not glibc (musl, macOS): nothing to do."""
    import os

    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-8, arenas)  # M_ARENA_MAX in glibc's malloc.h
    except (OSError, AttributeError):  # no mallopt: not glibc
        pass


class ExamGroup(click.Group):
    """The ``exam`` group, the one error handler of every command under it: an ``ExamError``
    (bad input, a damaged store, wherever it is raised) is one line and exit 2; Ctrl-C anywhere
    exits 130 with one line, not click's 'Aborted!' and 1."""

    def invoke(self, ctx: click.Context):
        few_malloc_arenas()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            sys.exit(INTERRUPTED)
        except ExamError as exc:
            raise InputError(str(exc)) from None


db_option = click.option("--db", envvar="EXAM_DB", type=click.Path(dir_okay=False),
                         help="The store: a SQLite path or a postgresql:// URL"
                              " (default results/exam.db, or $EXAM_DB).")
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
        # the baseline is always OLD alone now (issue 32); the flag stays for old scripts
        click.option("--no-history", is_flag=True, hidden=True,
                     help="Accepted and ignored: the baseline is always OLD alone."),
    )):
        f = opt(f)
    return f


def verdict_settings(alpha, min_effect, min_answered, coverage, severity, no_history):
    from exam.reports.verdict import settings_from

    try:
        return settings_from(alpha, min_effect, min_answered, coverage, severity)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def open_store(db: str | None):
    from exam.store import Store

    return Store.open(db)


def open_registry(agents: str | None):
    from exam.pipeline.registry import load_registry

    return load_registry(agents)


class ChannelChoice(click.Choice):
    """The registered notification channels (exam/notify), read when the option is parsed: a
    channel registered after this module was imported is offered too."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from exam import notify

        return tuple(notify.names())

    @choices.setter
    def choices(self, _value) -> None:  # click.Choice sets it in __init__
        pass


def open_bank(path: str):
    from exam.bank import load_bank

    return load_bank(path)


def stored_runs(store, agent=None, label=None, run_ids=(), since=None):
    """The runs a report reads; none matching is bad input that says how to make one."""
    from exam.reports.selection import report_runs

    return report_runs(store, agent, label, run_ids, since)


def emit(output: str) -> None:
    """Print a rendered report, ending it with exactly one newline."""
    click.echo(output, nl=not output.endswith("\n"))


def warn_missing_banks(report: dict, fmt: str = "") -> None:
    """Runs left out for a missing bank, on stderr (text and markdown say it in the report)."""
    if fmt not in ("text", "markdown", "html"):
        for m in report.get("missing_banks", []):
            click.echo(f"warning: {m['message']}", err=True)


def print_report(kind: str, report: dict, fmt: str) -> None:
    """Print ``report`` (of this registered kind) in ``fmt``; runs left out for a missing bank
    are warned about on stderr. A format the kind does not render is bad input (exit 2)."""
    from exam.marks import use_colour
    from exam.reports.formats import render

    emit(render(kind, report, fmt, use_colour()))
    warn_missing_banks(report, fmt)


def print_scorecards(store, runs, fmt: str, details: bool = True) -> dict:
    """Re-grade ``runs``, print their scorecards in ``fmt``, return the report."""
    from exam.reports import kinds
    from exam.reports.inputs import CLI

    return print_scorecard(kinds.build("scorecard", store, CLI, runs, every_cell=fmt != "text"),
                           fmt, details, store)


def print_scorecard(report: dict, fmt: str, details: bool = True, store=None) -> dict:
    """Print a scorecard report in ``fmt`` (the text one with or without its details). An HTML
    file of one version says that version's verdict first, as the dashboard's page does."""
    from exam.marks import use_colour
    from exam.reports import changes, kinds, scorecard
    from exam.reports.formats import render
    from exam.reports.inputs import CLI

    if fmt == "text":
        emit(scorecard.render_text(report, use_colour(), details=details))
    else:
        context = {}
        cards = report["scorecards"]
        if fmt == "html" and store is not None and len(cards) == 1:
            agent, version = cards[0]["agent"], cards[0]["version"]
            context["version_verdict"] = changes.version_verdict(lambda: kinds.build(
                "compare", store, CLI, agent=agent, old=None, new=version))
        emit(render("scorecard", report, fmt, context=context))
    warn_missing_banks(report, fmt)
    return report
