"""Read an agent's reply body through a mapping of dot paths (``reply:`` in agents.yaml).

Whatever an agent sends, reading it never raises: NaN, Infinity, numbers beyond a double,
JSON nested deeper than ``MAX_DEPTH``, usage figures beyond a 64-bit integer or below 0 become
a ``problem`` (the cell's ``bad_reply`` reason); lone surrogates become U+FFFD so the text can
be stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exam.textsafe import clean_text, nests_deeper
from graders import Reply, Step
from graders.checks import lookup as find_path

MISSING = object()
MAX_DEPTH = 200  # JSON nesting read; real replies stay under 20
MAX_FIGURE = 2**63 - 1  # usage figures are stored as SQLite integers


class ReplyError(ValueError):
    """A body that cannot be read as a reply; the message is the one-line reason."""


def _clean(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ReplyError(f"JSON nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean(v, depth + 1) for k, v in value.items()}
    return value


def _no_constant(name: str) -> Any:
    raise ReplyError(f"not JSON: {name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ReplyError(f"not JSON: {text[:40]} is out of range for a number")
    return value


def _too_deep(body: str) -> bool:
    """Whether the reply's JSON nests deeper than MAX_DEPTH (``textsafe.nests_deeper``: the
    root is depth 0 here, and an empty innermost is fine)."""
    return nests_deeper(body, MAX_DEPTH + 1)


def parse_json(body: str) -> Any:
    """Strict JSON (no NaN/Infinity, finite numbers, bounded depth); ReplyError says why not."""
    if _too_deep(body):
        raise ReplyError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except ReplyError:
        raise
    except RecursionError:
        raise ReplyError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError:
        looks = "an HTML page" if body.lstrip()[:1] == "<" else repr(body.strip()[:60])
        raise ReplyError(f"not JSON: {looks}") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise ReplyError(f"not JSON: {str(exc)[:120]}") from None
    try:
        return _clean(data)
    except RecursionError:
        raise ReplyError(f"JSON nested deeper than {MAX_DEPTH} levels") from None


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
    # one dot path, or several whose figures are summed (prompt + completion tokens)
    model_calls: str | tuple[str, ...] | None = "usage.model_calls"
    tokens: str | tuple[str, ...] | None = "usage.total_tokens"
    truncated: str | None = "truncated"
    steps: StepsMapping | None = StepsMapping()
    # the agent's own report that it could not answer (an n8n error output → Respond to Webhook)
    error: str | None = "agent_error"


DEFAULT_MAPPING = ReplyMapping()


def _paths(value: Any) -> str | tuple[str, ...] | None:
    return tuple(value) if isinstance(value, list) else value


def mapping_from_dict(d: Mapping[str, Any]) -> ReplyMapping:
    """The mapping a run recorded in its settings (``run.settings["reply"]``)."""
    steps = d.get("steps")
    return ReplyMapping(
        text=tuple(d.get("text") or DEFAULT_MAPPING.text), status=d.get("status"),
        model_calls=_paths(d.get("model_calls")), tokens=_paths(d.get("tokens")),
        truncated=d.get("truncated"),
        steps=None if steps is None else StepsMapping(**steps),
        error=d.get("error", DEFAULT_MAPPING.error),
    )


def lookup(obj: Any, path: str) -> Any:
    """Follow a dot path (``usage.total_tokens``, ``items.0.name``); MISSING when absent."""
    found, value = find_path(obj, path)
    return value if found else MISSING


def unwrap(body: Any) -> Any:
    """n8n's "All Entries" response mode wraps the reply in a one-element array."""
    if isinstance(body, list) and len(body) == 1:
        return body[0]
    return body


def _count(value: Any, path: str) -> int | None:
    """A usage figure as a whole number; None when absent or not a number at all."""
    if isinstance(value, bool) or value is MISSING or value is None:
        return None
    if isinstance(value, str):
        try:
            number = float(value) if any(c in value for c in ".eEnN") else int(value)
        except ValueError:
            return None
    elif isinstance(value, int | float):
        number = value
    else:
        return None
    shown = repr(value) if isinstance(value, str) else str(value)
    if isinstance(number, float) and not math.isfinite(number) or abs(number) > MAX_FIGURE:
        raise ReplyError(f"{path}: {shown[:40]} is out of range for a count")
    if number < 0:  # summed into a budget, -50000 tokens would pay for a costly attempt
        raise ReplyError(f"{path}: {shown[:40]} is negative, not a count")
    return int(number)


def _figure(body: Any, paths: str | tuple[str, ...] | None) -> int | None:
    """The number at ``paths``; several paths are summed; None when none of them is present."""
    if not paths:
        return None
    found = [n for n in (_count(lookup(body, p), p) for p in
                         ((paths,) if isinstance(paths, str) else paths)) if n is not None]
    if not found:
        return None
    total = sum(found)
    if abs(total) > MAX_FIGURE:
        raise ReplyError(f"{' + '.join(paths)}: the sum {total} is out of range for a count")
    return total


def keys_present(body: Any, paths: str | tuple[str, ...] | None = None, limit: int = 12) -> str:
    """The keys where a mapping's path broke off (the reply's top level when the first part is
    already missing), for messages about what a mapping could not find."""
    where, at = "the reply", body
    for path in ((paths,) if isinstance(paths, str) else paths or ())[:1]:
        parts = path.split(".")
        for i in range(len(parts) - 1, 0, -1):  # the longest prefix that is there
            found = lookup(body, ".".join(parts[:i]))
            if found is not MISSING:
                where, at = ".".join(parts[:i]), found
                break
    if isinstance(at, Mapping):
        # JSON-escaped and cut: a key is the agent's text, and a message is one line
        keys = [json.dumps(str(k), ensure_ascii=False)[1:-1][:40] for k in at]
        shown = ", ".join(keys[:limit]) + (f" … ({len(keys)} keys)" if len(keys) > limit else "")
        label = "the reply's keys" if where == "the reply" else f"keys under {where}"
        return f"{label}: {shown}" if keys else f"{where} is an empty object"
    if isinstance(at, list):
        return f"{where} is an array of {len(at)}"
    return f"{where} is {type(at).__name__}"


def _shape(value: Mapping | list) -> str:
    """'an object (keys: a, b)', 'an empty object', 'an array of 3'."""
    if isinstance(value, list):
        return f"an array of {len(value)}"
    keys = [json.dumps(str(k), ensure_ascii=False)[1:-1][:40] for k in list(value)[:12]]
    more = f" … ({len(value)} keys)" if len(value) > 12 else ""
    return f"an object (keys: {', '.join(keys)}{more})" if keys else "an empty object"


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
    text, found_at = MISSING, ""
    for found_at in mapping.text:
        text = lookup(body, found_at)
        if text is not MISSING:
            break
    problem = ""
    if text is MISSING or text is None:
        problem = f"no text at {' / '.join(mapping.text)} ({keys_present(body, mapping.text)})"
        text = None
    elif isinstance(text, Mapping | list):
        # not an answer: graded as its Python repr, a fact inside it would pass
        problem = f"no text at {found_at}: {_shape(text)}, not text"
        text = None
    elif not isinstance(text, str):
        text = json.dumps(text)  # a number or true/false, as the agent wrote it
    status = lookup(body, mapping.status) if mapping.status else MISSING
    truncated = lookup(body, mapping.truncated) if mapping.truncated else MISSING
    figures: dict[str, int | None] = {"model_calls": None, "tokens": None}
    for key in figures:
        try:
            figures[key] = _figure(body, getattr(mapping, key))
        except ReplyError as exc:
            problem = problem or str(exc)
    return ReadReply(
        text=text,
        status=None if status is MISSING or status is None else str(status),
        **figures,
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
        return reported_failure(read_body(parse_json(body), mapping))
    except (ValueError, RecursionError):
        return None


# --- a recorded attempt, as the transport reads it -------------------------------------------


def read_reply(body: str, mapping: ReplyMapping, reply_format: str,
               clean: Callable[[Any], Any] = lambda data: data,
               parse: Callable[[str], Any] = parse_json) -> tuple[ReadReply | None, str]:
    """A raw body read as the agent's ``reply_format`` says: (what was read, why it is a bad
    reply or ""). ``clean`` sees the decoded JSON before the mapping does (the transport
    redacts secrets there); ``parse`` is ``parse_json`` or one that remembers its answers."""
    if not body.strip():
        return None, "empty body"
    if reply_format == "text":
        return read_body(body.strip(), mapping), ""
    try:
        data = parse(body)
    except ReplyError as exc:
        return None, str(exc)
    read = read_body(clean(data), mapping)
    if isinstance(read.body, str) and reply_format == "json":
        return None, "a JSON string, not an object"
    return read, read.problem


def agent_failure(body: str | None, mapping: ReplyMapping, reply_format: str) -> str | None:
    """The agent's own failure report in a body (any HTTP status), else None."""
    return None if reply_format == "text" else failure_in(body, mapping)


def usage_over(bodies: Iterable[str | None], mapping: ReplyMapping, reply_format: str,
               parse: Callable[[str], Any] = parse_json) -> tuple[int | None, int | None]:
    """(model calls, tokens) summed over the bodies of every attempt that reported them."""
    calls = tokens = None
    for body in bodies:
        if not body or reply_format == "text":
            continue
        try:
            read = read_body(parse(body), mapping)
        except ReplyError:
            continue
        if read.model_calls is not None:
            calls = (calls or 0) + read.model_calls
        if read.tokens is not None:
            tokens = (tokens or 0) + read.tokens
    return calls, tokens


def parse_once() -> Callable[[str], Any]:
    """``parse_json`` that parses each body once (a cell's usage and its reply read the same
    body); its answers, and its ReplyErrors, are kept as long as the function is."""
    seen: dict[str, Any] = {}

    def parse(body: str) -> Any:
        if body not in seen:
            try:
                seen[body] = parse_json(body)
            except ReplyError as exc:
                seen[body] = exc
        found = seen[body]
        if isinstance(found, ReplyError):
            raise found
        return found

    return parse
