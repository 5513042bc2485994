"""`exam bank check`: validate bank files and prove their rubrics."""

from __future__ import annotations

import sys

import click


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
