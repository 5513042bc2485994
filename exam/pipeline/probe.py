"""Probe one agent with one work order: what came back, what the reply mapping read from it,
and (for ``exam init``) a proposed mapping for a reply shape nobody described yet.

Used by ``exam agents check`` and ``exam init``; nothing here writes to the store.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exam.errors import PLACEHOLDER
from exam.pipeline import n8n_usage
from exam.pipeline.gate import RequestGate
from exam.pipeline.registry import Agent
from exam.pipeline.transport import Result, cell_result, clean_error, send
from exam.reading import MISSING, ReplyMapping, keys_present, unwrap

TEXT_KEYS = ("answer", "output", "text", "reply", "response", "message", "content", "result")
STATUS_KEYS = ("status", "state", "result_status", "outcome")
CALL_KEYS = ("model_calls", "llm_calls", "calls", "modelCalls", "llmCalls")
TOTAL_TOKEN_KEYS = ("total_tokens", "totalTokens", "tokens", "token_count")
PART_TOKEN_KEYS = (("prompt_tokens", "completion_tokens"), ("promptTokens", "completionTokens"),
                   ("input_tokens", "output_tokens"), ("inputTokens", "outputTokens"))
STEP_KEYS = ("intermediateSteps", "steps", "tool_calls", "toolCalls", "trace")


@dataclass(frozen=True, slots=True)
class Probe:
    """One work order sent and read: the raw body of the last attempt and the cell's result."""

    http_status: int | None
    body: str | None
    result: Result
    attempts: int
    latency_ms: float
    usage: n8n_usage.Usage | None = None  # read from n8n's executions, as `exam run` does


def probe(agent: Agent, work_order: Any) -> Probe:
    outcomes = send(agent, work_order, RequestGate(1, 0.0))
    last = outcomes[-1]
    usage = None
    if agent.n8n is not None:  # the run reads usage there, so the check must read it there too
        usage = n8n_usage.measure(agent.n8n, [
            (o.row.n, o.row.error, o.body if o.body is not None else o.row.body)
            for o in outcomes])
        # the note names the n8n API's URL, whose path may hold a ${VAR}: cleaned as a run
        # cleans it before storing it (runner._run_cell)
        usage = dataclasses.replace(usage, note=clean_error(agent, usage.note))
    return Probe(last.row.http_status, last.row.body, cell_result(agent, outcomes), len(outcomes),
                 sum(o.row.latency_ms for o in outcomes), usage)


def _paths(obj: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    """Every (dot path, value) down to depth 4; lists are entered at their first element."""
    out: list[tuple[str, Any]] = []
    if depth > 4:
        return out
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out.append((path, v))
            out.extend(_paths(v, path, depth + 1))
    elif isinstance(obj, list) and obj and depth > 0:
        out.extend(_paths(obj[0], f"{prefix}.0", depth + 1))
    return out


def _last(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _find(paths: list[tuple[str, Any]], names: tuple[str, ...], kind: type | tuple) -> str | None:
    for name in names:  # by preference of name, then shallowest
        hits = [p for p, v in paths if _last(p) == name and isinstance(v, kind)
                and not isinstance(v, bool)]
        if hits:
            return min(hits, key=lambda p: p.count("."))
    return None


def propose_mapping(body: Any) -> tuple[dict[str, Any], list[str]]:
    """A ``reply:`` mapping for this body, and a note per part saying how it was chosen."""
    body = unwrap(body)
    notes: list[str] = []
    mapping: dict[str, Any] = {}
    if isinstance(body, str):
        return {"format": "text"}, ["the reply is plain text: format: text"]
    paths = _paths(body)
    text = _find(paths, TEXT_KEYS, str)
    if text is None:
        strings = [(p, v) for p, v in paths if isinstance(v, str) and "." not in p]
        strings += [(p, v) for p, v in paths if isinstance(v, str) and "." in p]
        text = max(strings, key=lambda pv: len(pv[1]))[0] if strings else None
        if text:
            notes.append(f"text: {text} is the longest string in the reply; check it is the answer")
    mapping["text"] = text or f"{PLACEHOLDER}: the dot path of the answer text"
    if text is None:
        notes.append(f"text: no string found ({keys_present(body)})")
    status = _find(paths, STATUS_KEYS, str)
    mapping["status"] = status
    calls = _find(paths, CALL_KEYS, (int, float))
    mapping["model_calls"] = calls
    tokens: str | list[str] | None = _find(paths, TOTAL_TOKEN_KEYS, (int, float))
    if tokens is None:
        for a, b in PART_TOKEN_KEYS:
            pa, pb = _find(paths, (a,), (int, float)), _find(paths, (b,), (int, float))
            if pa and pb:
                tokens = [pa, pb]
                notes.append(f"tokens: {pa} + {pb} (summed)")
                break
    if tokens is None:  # counts under other names: numbers inside a usage/token/cost object
        parents = [p for p, v in paths if isinstance(v, Mapping)
                   and any(w in _last(p).lower() for w in ("usage", "token", "cost"))]
        for parent in parents:
            numbers = [p for p, v in paths if p.startswith(parent + ".") and "." not in
                       p[len(parent) + 1:] and isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers:
                tokens = numbers[0] if len(numbers) == 1 else numbers
                notes.append(f"tokens: guessed {' + '.join(numbers)} (the numbers under {parent}); "
                             f"check they are token counts")
                break
    mapping["tokens"] = tokens
    for key in ("status", "model_calls", "tokens"):
        if mapping[key] is None:
            graded = "expect_status is" if key == "status" else "budgets on it are"
            more = "" if key == "status" else " (or a list of paths, summed)"
            notes.append(f"{key}: not found (null); {graded} not graded. If the reply has it "
                         f"under another name, give its dot path{more}")
    steps = next((p for p, v in paths if _last(p) in STEP_KEYS and isinstance(v, list)), None)
    mapping["steps"] = steps
    return mapping, notes


def describe_read(agent: Agent, p: Probe) -> list[str]:
    """What the agent's mapping read from the probe, and what it could not find, with the keys
    that were there."""
    r = p.result
    lines = [f"run status   {r.run_status}" + (f": {r.error}" if r.error else "")]
    if r.run_status in ("http_error", "timeout"):
        # an error page or nothing at all: "nothing at answer" would send people to the mapping
        why = "nothing came back" if p.body is None else "an error reply, not an answer"
        return [*lines, f"(the reply mapping was not applied: {why})",
                f"attempts     {p.attempts}, {p.latency_ms:.0f} ms"]
    m: ReplyMapping = agent.reply
    body: Any = MISSING
    if p.body and agent.reply_format == "json":
        try:
            body = unwrap(json.loads(p.body))
        except ValueError:
            body = MISSING
    read = r.read

    def where(paths) -> str:
        if paths is None:
            return "not mapped"
        paths = (paths,) if isinstance(paths, str) else paths
        return " + ".join(paths)

    def missing(paths) -> str:
        if paths is None:
            return "not mapped (null)"
        extra = f" ({keys_present(body, paths)})" if body is not MISSING else ""
        return f"nothing at {where(paths)}{extra}"

    text = read.text if read else None
    lines.append(f"text         {_short(text)}" if text is not None else
                 f"text         {missing(m.text if agent.reply_format == 'json' else None)}")
    status = read.status if read else None
    lines.append(f"status       {status}" if status is not None else f"status       {missing(m.status)}")
    if p.usage is not None:  # `n8n:` in the registry: the reply's own figures are not used
        u = p.usage
        lines.append(f"model calls  {u.model_calls if u.model_calls is not None else 'unknown'}")
        lines.append(f"tokens       {u.tokens if u.tokens is not None else 'unknown'}"
                     + (" (estimated)" if u.estimated and u.tokens is not None else ""))
        lines.append(f"usage        {u.note}")
    else:
        lines.append(f"model calls  {r.model_calls}" if r.model_calls is not None else
                     f"model calls  {missing(m.model_calls)}")
        lines.append(f"tokens       {r.tokens}" if r.tokens is not None else
                     f"tokens       {missing(m.tokens)}")
    steps = read.steps if read else None
    if steps is not None:
        tools = ", ".join(s.tool for s in steps) or "none called"
        lines.append(f"steps        {len(steps)}: {tools}")
    else:
        lines.append(f"steps        {missing(m.steps.path if m.steps else None)}")
    lines.append(f"attempts     {p.attempts}, {p.latency_ms:.0f} ms")
    return lines


def test_to_production(url: str) -> str:
    """n8n's production URL for a test URL (``/webhook-test/<path>`` → ``/webhook/<path>``)."""
    return url.replace("/webhook-test/", "/webhook/", 1)


def next_step(agent: Agent, p: Probe, registry: str | None = None) -> str | None:
    """What to do about a probe that got no answer, naming the registry key to look at (or,
    for ``exam init``, which has no entry yet, its argument and options)."""
    r = p.result
    key = f"{registry}: agents.{agent.name}" if registry else None
    url, headers, timeout = ((f"{key}.url", f"{key}.headers", f"{key}.timeout_s") if key else
                             ("the URL", "--header", "--timeout"))
    if r.run_status == "timeout":
        return (f"no answer within {agent.timeout_s:g} s: is the workflow stuck (its executions "
                f"in n8n say), or does it need longer ({timeout})?")
    if r.run_status != "http_error":
        return None
    if r.error.startswith("connection refused"):
        return (f"nothing listens there: start the agent (n8n), or correct the host and port in "
                f"{url}")
    if r.error.startswith("cannot resolve"):
        return f"no such host: correct the host name in {url}"
    if p.http_status == 404 and "not registered for POST" in r.error:
        return ("the Webhook node takes another HTTP method: set its HTTP Method to POST (the "
                "exam POSTs every work order as JSON)")
    if "Unused Respond to Webhook node" in r.error:
        return ("the Webhook node does not wait for the Respond to Webhook node: set its "
                "Respond to \"Using 'Respond to Webhook' Node\"")
    if p.http_status == 404 and "/webhook-test/" in agent.safe_url:
        return (f"{url} is n8n's test URL, which answers one call after Execute workflow in the "
                f"editor: use the production URL ({test_to_production(agent.safe_url)}) with "
                f"the workflow active (published)")
    if p.http_status == 404 and "not registered" in r.error:
        return (f"n8n knows no such webhook: activate (publish) the workflow, and check that "
                f"{url} ends in /webhook/<the Webhook node's Path> (a /webhook-test/ URL "
                f"answers only while the editor listens)")
    if p.http_status in (401, 403):
        return (f"the agent refused the request: the header in {headers} (name, and the "
                f"value of its variable) must be what the Webhook node's Header Auth credential "
                f"expects")
    return None


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


def show_body(body: str | None, limit: int) -> str:
    """The raw body, pretty-printed when it is JSON, cut at ``limit`` characters."""
    if body is None:
        return "(no body)"
    try:
        text = json.dumps(json.loads(body), ensure_ascii=False, indent=2)
    except ValueError:
        text = body
    if limit and len(text) > limit:
        return text[:limit] + f"\n… ({len(text) - limit:,} more characters; --full shows all)"
    return text
