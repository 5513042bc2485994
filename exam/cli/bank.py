"""`exam bank check`: validate bank files and prove their rubrics."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from exam.errors import RegistryError
from exam.textsafe import terminal


def _registry_view() -> tuple[dict[str, list[str]], dict[str, tuple[Any, str]]]:
    """(bank file's real path → the registry's agents that use it, agent → its reply mapping
    and format); both empty without a registry (``$EXAM_AGENTS`` or webhooks/agents.yaml): the
    files are then checked alone, their examples read with the default mapping. A registry
    that is there (or named) and cannot be read is said on stderr: the checks that need it
    were not made."""
    from exam.pipeline.registry import DEFAULT_PATH, load_registry

    if not os.environ.get("EXAM_AGENTS") and not os.path.exists(DEFAULT_PATH):
        return {}, {}  # no registry here: the banks alone, nothing to say
    try:
        registry = load_registry()
    except RegistryError as exc:
        click.echo(f"note: {exc}: the banks were checked without it (whether a bank is "
                   "attached to another agent was not looked at, example objects were read "
                   "with the default reply mapping)", err=True)
        return {}, {}
    out: dict[str, list[str]] = {}
    for name, agent in registry.agents.items():
        out.setdefault(os.path.realpath(agent.bank), []).append(name)
    return out, {name: (a.reply, a.reply_format) for name, a in registry.agents.items()}


@click.group("bank")
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
    from exam.bank.check import check_paths

    attached, readers = _registry_view()
    report = check_paths(paths or ("bank",), attached, readers)
    # a bank's case numbers and golden replies are text someone wrote: one problem, one
    # line, its control characters shown (a NUL, a newline faking a line, an OSC escape)
    for p in report.problems:
        click.echo(terminal(str(p)))
    if not quiet:
        for n in report.notes:
            click.echo(f"note: {terminal(str(n))}")
        proven = sum(len(i.golden) + len(i.counterexamples) for b in report.banks for i in b.items)
        status = "ok" if not report.problems else f"{len(report.problems)} problem(s)"
        click.echo(f"{report.files} file(s), {report.questions} question(s), "
                   f"{proven} example replies graded: {status}")
    sys.exit(report.exit_code)


@bank.command("schema")
def bank_schema() -> None:
    """Print the JSON Schema of a bank file, every check kind's keys included.

    Save it and point your editor at it for completion:
    exam bank schema > bank.schema.json

    \b
    Exit status:
      0  always
    """
    import json

    from exam.bank.load import json_schema

    click.echo(json.dumps(json_schema(), ensure_ascii=False, indent=2))
