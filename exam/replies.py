"""Read an agent's reply body through a mapping of dot paths (``reply:`` in agents.yaml)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graders import Reply, Step

MISSING = object()


@dataclass(frozen=True, slots=True)
class StepsMapping:
    """Where an agent reports its tool steps; the default is n8n's ``intermediateSteps``."""

    path: str = "intermediateSteps"
    tool: str = "action.tool"
    args: str = "action.toolInput"


@dataclass(frozen=True, slots=True)
class ReplyMapping:
    text: tuple[str, ...] = ("answer", "output", "text")  # first path present wins
    status: str | None = "status"
    model_calls: str | None = "usage.model_calls"
    tokens: str | None = "usage.total_tokens"
    truncated: str | None = "truncated"
    steps: StepsMapping | None = StepsMapping()
    # the agent's own report that it could not answer (an n8n error output → Respond to Webhook)
    error: str | None = "agent_error"


DEFAULT_MAPPING = ReplyMapping()


def lookup(obj: Any, path: str) -> Any:
    """Follow a dot path (``usage.total_tokens``, ``items.0.name``); MISSING when absent."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return MISSING
    return cur


def unwrap(body: Any) -> Any:
    """n8n's "All Entries" response mode wraps the reply in a one-element array."""
    if isinstance(body, list) and len(body) == 1:
        return body[0]
    return body


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or value is MISSING or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


def _steps(body: Any, mapping: StepsMapping | None) -> tuple[Step, ...] | None:
    if mapping is None:
        return None
    raw = lookup(body, mapping.path)
    if raw is MISSING or not isinstance(raw, list):
        return None
    steps = []
    for item in raw:
        tool = lookup(item, mapping.tool)
        args = lookup(item, mapping.args)
        if tool is MISSING:
            continue
        if isinstance(args, str):
            args = {"input": args}
        elif not isinstance(args, Mapping):
            args = {}
        steps.append(Step(str(tool), dict(args)))
    return tuple(steps)


@dataclass(frozen=True, slots=True)
class ReadReply:
    """The parts of a body the mapping found; ``problem`` says why it is a bad reply."""

    text: str | None
    status: str | None
    model_calls: int | None
    tokens: int | None
    truncated: bool
    steps: tuple[Step, ...] | None
    body: Any
    problem: str = ""
    error: str | None = None  # what the agent said about its own failure, when it reports one


def _failure(value: Any) -> str | None:
    """The agent's own failure report as one line: a message, or the whole value."""
    if value is MISSING or value is None or value is False or value in ("", {}, []):
        return None
    if isinstance(value, Mapping):
        message = value.get("message") or value.get("description")
        value = message if message else json.dumps(value, ensure_ascii=False)
    return " ".join(str(value).split())[:300]


def read_body(body: Any, mapping: ReplyMapping = DEFAULT_MAPPING) -> ReadReply:
    body = unwrap(body)
    if isinstance(body, str):
        return ReadReply(body, None, None, None, False, None, body)
    if not isinstance(body, Mapping):
        return ReadReply(None, None, None, None, False, None, body,
                         problem=f"expected a JSON object, got {type(body).__name__}")
    text = MISSING
    for path in mapping.text:
        text = lookup(body, path)
        if text is not MISSING:
            break
    problem = ""
    if text is MISSING or text is None:
        problem = f"no text at {' / '.join(mapping.text)}"
        text = None
    elif not isinstance(text, str):
        text = str(text)
    status = lookup(body, mapping.status) if mapping.status else MISSING
    truncated = lookup(body, mapping.truncated) if mapping.truncated else MISSING
    return ReadReply(
        text=text,
        status=None if status is MISSING or status is None else str(status),
        model_calls=_number(lookup(body, mapping.model_calls)) if mapping.model_calls else None,
        tokens=_number(lookup(body, mapping.tokens)) if mapping.tokens else None,
        truncated=truncated is True or truncated == "true",
        steps=_steps(body, mapping.steps),
        body=body,
        problem=problem,
        error=_failure(lookup(body, mapping.error)) if mapping.error else None,
    )


def reported_failure(read: ReadReply | None) -> str | None:
    """What the agent said about its own failure, when it answered with that and no text."""
    if read is None or read.text is not None:
        return None
    return read.error


def to_reply(read: ReadReply, **figures: Any) -> Reply:
    """A graders.Reply from what was read; ``figures`` add attempts, latency, run status, and
    override what the body said (status, model_calls, tokens)."""
    return Reply(
        text=read.text, status=figures.pop("status", read.status), body=read.body,
        steps=read.steps,
        model_calls=figures.pop("model_calls", read.model_calls),
        tokens=figures.pop("tokens", read.tokens), **figures,
    )


def failure_in(body: str | None, mapping: ReplyMapping = DEFAULT_MAPPING) -> str | None:
    """The agent's own failure report in a raw JSON body (at any HTTP status), else None."""
    if not body or mapping.error is None:
        return None
    try:
        return reported_failure(read_body(json.loads(body), mapping))
    except (ValueError, RecursionError):
        return None
