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


if __name__ == "__main__":  # pragma: no cover
    main()
