"""``exam agents check`` and ``exam init``: the first hour with an agent of one's own."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import click

from exam.cli.common import InputError, agents_option, open_registry
from exam.textsafe import terminal

_HEADER = re.compile(r"^\s*([A-Za-z0-9-]+)\s*:\s*(.+?)\s*$")


def _show(text: str, err: bool = False) -> None:
    """A line (or lines) holding what an agent sent: its control characters printed as
    escapes, as every report prints replies (exam.textsafe), its line breaks kept."""

    click.echo("\n".join(terminal(line) for line in text.split("\n")), err=err)


@click.group("agents")
def agents_group() -> None:
    """The agents in the registry (webhooks/agents.yaml)."""


@agents_group.command("check")
@click.argument("names", metavar="[AGENT]...", nargs=-1)
@click.option("--question", "case_no", metavar="CASE_NO",
              help="Send this question's work order (default: the first of the agent's bank).")
@click.option("--full", is_flag=True, help="Print the whole raw reply (default: cut at 3,000 characters).")
@agents_option
def agents_check(names, case_no, full, agents) -> None:
    """Send one work order to each AGENT (default: every agent) and show what came back.

    Prints the raw reply, then what the registry's `reply:` mapping read from it (text, status,
    model calls, tokens, steps) and, for what it could not find, the keys the reply had. With
    `n8n:` in the registry, model calls and tokens are read from the execution, as a run does.
    Stores nothing.

    \b
    Exit status: 0 every agent answered readably · 2 bad input · 3 an agent's reply did not
    arrive or could not be read, or its n8n usage could not be read (the line says why).
    """
    from exam.pipeline.probe import describe_read, next_step, probe, show_body
    from exam.pipeline.runner import agent_bank

    registry = open_registry(agents)
    chosen = [registry.get(n) for n in names] if names else list(registry.agents.values())
    banks = {a.name: agent_bank(a) for a in chosen if not a.blocked}  # before anything is sent
    trouble = False
    for agent in chosen:
        click.echo(f"== {agent.name}  {agent.safe_url}")
        if agent.blocked:
            click.echo(f"blocked, nothing sent: {agent.blocked}")
            trouble = True
            continue
        items = banks[agent.name].by_case()
        if case_no and case_no not in items:
            raise InputError(f"--question: {case_no!r} is not in {agent.bank}")
        item = items[case_no] if case_no else next(iter(items.values()))
        click.echo(f"work order   {item.case_no}")
        p = probe(agent, item.question.input)
        click.echo(f"HTTP         {p.http_status or '-'}")
        click.echo("raw reply:")
        _show(show_body(p.body, 0 if full else 3000))
        click.echo("the mapping read:")
        for line in describe_read(agent, p):
            _show(f"  {line}")
        if hint := next_step(agent, p, registry.path):
            _show(f"next: {hint}")
        trouble |= p.result.run_status != "ok"
        trouble |= p.usage is not None and p.usage.model_calls is None  # `n8n:` set, not read
        click.echo("")
    sys.exit(3 if trouble else 0)


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    from exam.pipeline.registry import ENV_VAR

    out = {}
    for value in values:
        m = _HEADER.match(value)
        if not m:
            raise InputError(f"--header {value!r}: expected 'Name: value'")
        name, val = m.groups()
        if not ENV_VAR.search(val):
            raise InputError(f"--header {name}: give the value as ${{VAR}} (and export VAR), so the "
                             f"secret stays out of the registry file")
        out[name] = val
    return out


def _append_agent(path: Path, name: str, entry: dict) -> str:
    """The registry text with ``name`` added, comments kept; the whole file is re-written only
    when appending would not parse."""
    import yaml

    block = yaml.safe_dump({name: entry}, allow_unicode=True, sort_keys=False)
    if not path.exists():
        return "agents:\n" + "".join(f"  {line}\n" for line in block.splitlines())
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    agents = data.get("agents") or {}
    if name in agents:
        raise InputError(f"{path}: agents.{name} already exists: choose another --name, or edit it")
    appended = text.rstrip("\n") + "\n" + "".join(f"  {line}\n" for line in block.splitlines())
    try:
        if name in (yaml.safe_load(appended) or {}).get("agents", {}):
            return appended
    except yaml.YAMLError:
        pass
    data["agents"] = {**agents, name: entry}
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def _starter_bank(name: str, work_order: dict, status: str | None, answer: str | None) -> str:
    import yaml

    question = {
        "case_no": f"{name}-01", "category": "starter", "severity": "major",
        "input": work_order,
        **({"expect_status": status} if status else {}),
        "expect_facts": ["TODO: a phrase the answer must contain (alternatives: a|b)"],
        "expect_forbidden": ["TODO: a phrase the answer must never assert"],
        "golden": ["TODO: a reply that must pass"],
        "counterexamples": ["TODO: a wrong reply that must fail"],
    }
    head = (f"# Starter bank for {name}, written by `exam init`. Replace every TODO, then run\n"
            f"#   exam bank check {{path}}\n# until it says ok. docs/bank.md has every field.\n")
    if answer:
        head += "# The agent's answer to the probe (a start for golden, if it is right):\n"
        head += "".join(f"#   {line}\n" for line in answer.splitlines()[:20])
    return head + yaml.safe_dump({"agent": name, "questions": [question]}, allow_unicode=True,
                                 sort_keys=False)


@click.command("init")
@click.argument("url")
@click.option("--name", required=True, help="The agent's name in the registry (e.g. W4).")
@click.option("--question", default="What can you help me with?", show_default=True,
              help="The question of the probe work order.")
@click.option("--header", "header_values", multiple=True, metavar="'NAME: ${VAR}'",
              help="A header to send, its value from the environment (repeatable).")
@click.option("--bank", "bank_path", type=click.Path(dir_okay=False),
              help="Where to write the starter bank (default bank/NAME.yaml).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=60,
              show_default=True, help="Seconds the probe may take.")
@agents_option
def init_cmd(url, name, question, header_values, bank_path, timeout_s, agents) -> None:
    """Probe a webhook at URL and write its registry entry and a starter bank.

    Sends one work order {"task_id": "NAME-01", "question": ...}, shows the raw reply, proposes
    the `reply:` mapping (where the text, status, usage and steps are), adds NAME to the
    registry and writes a one-question bank whose facts, golden reply and counterexample you
    fill in; `exam bank check` then says what is left.

    \b
    Exit status: 0 written · 2 bad input (URL, name, header, an existing agent) · 3 the probe
    got no usable reply (none, or a bad_reply: nothing written).
    """
    from exam.pipeline.probe import next_step, probe, propose_mapping, show_body
    from exam.pipeline.registry import DEFAULT_PATH, parse_agent

    registry_path = Path(agents or os.environ.get("EXAM_AGENTS") or DEFAULT_PATH)
    bank = Path(bank_path or Path("bank") / f"{name}.yaml")
    if bank.exists():
        raise InputError(f"{bank}: already exists: choose another --bank, or remove it")
    headers = _headers(header_values)
    raw = {"url": url, "headers": headers, "timeout_s": timeout_s,
           "bank": os.path.relpath(bank.resolve(), registry_path.resolve().parent)}
    agent = parse_agent(str(registry_path), name, raw, os.environ)
    if agent.blocked:
        raise InputError(f"{name}: {agent.blocked}")
    work_order = {"task_id": f"{name}-01", "question": question}
    import dataclasses

    if "/webhook-test/" in agent.safe_url:  # it may answer now, but not the exam's next call
        from exam.pipeline.probe import test_to_production

        click.echo(f"warning: {agent.safe_url} is n8n's test URL: it answers one call after "
                   f"Execute workflow in the editor, so a run's second work order gets a 404. "
                   f"Register the production URL ({test_to_production(agent.safe_url)}) with "
                   f"the workflow active", err=True)
    p = probe(dataclasses.replace(agent, reply_format="text"), work_order)
    click.echo(f"POST {agent.safe_url} → HTTP {p.http_status or '-'} in {p.latency_ms:.0f} ms")
    _show(show_body(p.body, 3000))
    # bad_reply: what came back is not the agent's words as sent (n8n's 'Workflow was started',
    # bytes not in the body's charset, a body over the cap): every run would be a bad_reply
    if p.result.run_status in ("timeout", "http_error", "bad_reply") or not p.body:
        _show(f"\nno usable reply ({p.result.run_status}: {p.result.error or 'empty body'}); "
              f"nothing written", err=True)
        if hint := next_step(agent, p):
            _show(f"next: {hint}", err=True)
        sys.exit(3)
    import json

    try:
        body = json.loads(p.body)
    except ValueError:
        body = p.body
    mapping, notes = propose_mapping(body)
    entry = {"url": url, "bank": raw["bank"], **({"headers": headers} if headers else {}),
             "timeout_s": timeout_s, "reply": mapping}
    click.echo("\nproposed reply mapping:")
    for key, value in mapping.items():
        shown = ("null" if value is None else  # as the registry file has it, not Python's None
                 f"[{', '.join(value)}]" if isinstance(value, list) else value)
        _show(f"  {key}: {shown}")
    for note in notes:
        _show(f"  note: {note}")
    from exam.reading import lookup, unwrap

    text_path = mapping.get("text")
    answer = body if isinstance(body, str) else (
        lookup(unwrap(body), text_path) if isinstance(text_path, str) else None)
    status_path = mapping.get("status")
    status = lookup(unwrap(body), status_path) if status_path else None
    new_registry = _append_agent(registry_path, name, entry)
    registry_path.parent.mkdir(parents=True, exist_ok=True)
    registry_path.write_text(new_registry, encoding="utf-8")
    bank.parent.mkdir(parents=True, exist_ok=True)
    bank.write_text(_starter_bank(name, work_order, status if isinstance(status, str) else None,
                                  answer if isinstance(answer, str) else None)
                    .replace("{path}", str(bank)), encoding="utf-8")
    click.echo(f"\nwrote {registry_path} (agents.{name}) and {bank}. Next:\n"
               f"  1. fill in the TODOs of {bank}; exam bank check {bank} says what is left\n"
               f"  2. exam agents check {name}        # what the mapping reads, stores nothing\n"
               f"  3. exam run {name} --version v1")
