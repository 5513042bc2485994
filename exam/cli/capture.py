"""`exam capture`: a production failure (an n8n execution, or a recorded reply) becomes a
draft question in the agent's bank."""

from __future__ import annotations

import json
from pathlib import Path

import click

from exam.cli.common import InputError, agents_option, open_registry
from exam.textsafe import terminal


def _json_arg(text: str, what: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"{what}: not JSON ({exc})") from None


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}") \
            from None


@click.command("capture")
@click.argument("agent_name", metavar="AGENT")
@click.argument("execution", required=False, metavar="[EXECUTION]")
@click.option("--list", "list_", is_flag=True,
              help="List the agent's recent executions that failed or ended on an error "
                   "output, newest first; write nothing.")
@click.option("--since", default="7d", show_default=True, metavar="SPAN",
              help="With --list: how far back (30m, 24h, 7d, 2w).")
@click.option("--reply", "reply_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="The bad reply as recorded (the agent's JSON body, or its text), instead of "
                   "an n8n execution; give the work order with --input or --work-order.")
@click.option("--input", "input_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --reply: the work order the agent was sent (a JSON file).")
@click.option("--work-order", "work_order", metavar="JSON",
              help="With --reply: the work order the agent was sent, inline.")
@click.option("--dry-run", is_flag=True, help="Print the draft question; write nothing.")
@agents_option
def capture_cmd(agent_name: str, execution: str | None, list_: bool, since: str,
                reply_file: str | None, input_file: str | None, work_order: str | None,
                dry_run: bool, agents: str | None) -> None:
    """Turn a bad answer from production into a draft question in AGENT's bank.

    EXECUTION is an n8n execution id or the editor's URL of it, read through the public API
    the registry's `n8n:` block configures: the Webhook node's body is the work order, the
    workflow's answer the counterexample. Or give --reply FILE (any agent) with --input FILE
    or --work-order JSON.

    The draft's expect_status, expect_facts, expect_forbidden and golden are TODOs: exam bank
    check names each, and exam run refuses the question until they are written. Secrets and
    personal data are redacted, and the draft's notes say what was.

    \b
    Examples:
      exam capture W2 --list --since 7d
      exam capture W2 1234
      exam capture W2 https://n8n.example.com/workflow/AbC/executions/1234
      exam capture W2 --reply reply.json --work-order '{"question": "..."}'

    \b
    Exit status:
      0  the draft written (or printed: --dry-run), or the candidates listed
      2  bad input: the agent, the execution, the reply, the bank (one line says which), or
         n8n's API could not be read
    """
    from exam.pipeline import capture as cap

    agent = open_registry(agents).get(agent_name)
    if list_:
        if execution or reply_file:
            raise InputError("--list writes nothing: give no EXECUTION nor --reply with it")
        found = cap.candidates(agent, cap.parse_since(since))
        for c in found:
            click.echo(terminal(f"{c.id:>8}  {c.started}  {c.ended:<40.40}  {c.preview}"))
        click.echo(f"{len(found)} execution(s) of {agent.name} failed or ended on an error "
                   f"output in the last {since.strip()}; capture one with: exam capture "
                   f"{agent.name} ID")
        return
    if reply_file:
        if execution:
            raise InputError("give EXECUTION or --reply FILE, not both")
        if bool(input_file) == bool(work_order):
            raise InputError("--reply needs the work order: --input FILE or --work-order JSON "
                             "(one of them)")
        order = _json_arg(_read(input_file, "the work order") if input_file else work_order,
                          input_file or "--work-order")
        text = _read(reply_file, "the reply")
        try:
            reply = json.loads(text)
        except ValueError:
            reply = text.strip()
        captured = cap.recorded(order, reply, f"recorded reply {Path(reply_file).name}")
    elif execution:
        cfg = cap.n8n_of(agent)
        exec_id = cap.execution_ref(execution)
        captured = cap.from_execution(cap.fetch_execution(cfg, exec_id), agent.reply,
                                      cfg.safe_url)
    else:
        raise InputError("give an EXECUTION (id or URL), --reply FILE, or --list")
    d = cap.capture(agent, captured, write_it=not dry_run)
    if dry_run:
        for line in json.dumps(d.question, ensure_ascii=False, indent=2).splitlines():
            click.echo(terminal(line))
    else:
        click.echo(terminal(f"{d.bank}: {d.case_no}: draft question written from {d.origin}"))
    click.echo(terminal("redacted: " + (", ".join(d.redacted) if d.redacted else "nothing")))
    if not dry_run:
        click.echo(f"next: write its TODOs (exam bank check {d.bank} names them); exam run "
                   f"refuses {d.case_no} until then")
