"""`exam grade`: grade replies recorded elsewhere, calling nothing."""

from __future__ import annotations

import json
import sys

import click

from exam.cli.common import InputError, agents_option, open_bank, open_registry
from exam.textsafe import terminal


@click.command("grade")
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
    from exam.grading.recorded import grade_file
    from exam.marks import grade_lines, use_colour
    from exam.reading import DEFAULT_MAPPING
    from graders import GRADER_VERSION

    mapping = DEFAULT_MAPPING
    if agent_name:
        agent = open_registry(agents).get(agent_name)
        mapping = agent.reply
    if len(paths) == 1 and agent_name:
        bank_path, replies = agent.bank, paths[0]
    elif len(paths) == 2:
        bank_path, replies = paths
    else:
        raise InputError("give BANK and REPLIES (or --agent NAME and REPLIES)")
    b = open_bank(bank_path)
    graded = grade_file(b, replies, mapping)
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
            if g.problem:  # it quotes the reply's keys
                click.echo(f"  {terminal(g.problem)}")
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        click.echo(f"\n{len(graded)} repl(ies): {summary}  (grader {GRADER_VERSION})")
    if any(g.grade.run_status != "ok" for g in graded):
        sys.exit(3)
    sys.exit(1 if any(g.grade.verdict == "fail" for g in graded) else 0)
