"""An n8n AI Agent's model calls and tokens, read from its executions through n8n's public API.

The AI Agent node passes no usage on, and a Code node after it cannot read its chat model's
data. n8n does keep that data in the execution: every run of a language-model sub-node is one
model call, with ``tokenUsage`` (the provider's count: Chat Completions) or only
``tokenUsageEstimate`` (n8n's own estimate: the Responses API). So the workflow's reply carries
``$execution.id``, and the exam fetches ``GET /api/v1/executions/<id>?includeData=true`` (waiting
briefly until the execution has finished) and sums over those runs. Counting runs is right for
parallel tool calls too (two tools in one turn are one model call).

Usage is all or nothing per cell: when any attempt's execution cannot be read, model calls and
tokens are unknown (None) with the reason, never a partial sum and never 0.

Reading a cell's executions (one per attempt) has one overall deadline, ``wait_s`` +
``API_SLACK_S`` from the first request to the last byte of the last answer
(exam.pipeline.deadline shuts the socket), and one wait of ``wait_s`` for them to finish: an API
that trickles bytes, answers slowly or answers "running" forever cannot hold the cell, however
many attempts it made; its answer stays graded as it is, and the usage is unknown, an
infrastructure fault, never the agent's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests

from exam.pipeline.deadline import Deadline, DeadlineAdapter
from exam.pipeline.registry import N8nUsage
from exam.reading import MISSING, lookup, unwrap

MODEL_CONNECTION = "ai_languageModel"  # the connection type of every chat model sub-node
RUNNING = ("new", "running", "waiting")
MAX_ID_CHARS = 64  # an execution id longer than this is not one (n8n's are integers)
NOTHING_SENT = ("connection refused", "cannot resolve")  # exam.pipeline.transport's words for these
API_SLACK_S = 5.0  # beyond wait_s, for the last request to be answered in full
MAX_ANSWER_BYTES = 64_000_000  # an execution with its data is large, but not this large


@dataclass(frozen=True, slots=True)
class Usage:
    """A cell's usage: ``None`` figures are unknown, and ``note`` says where they came from."""

    model_calls: int | None
    tokens: int | None
    estimated: bool
    note: str


@dataclass(frozen=True, slots=True)
class ExecutionUsage:
    model_calls: int
    tokens: int | None  # None: a model call reported no usage at all
    estimated: bool
    nodes: tuple[str, ...]  # the model nodes that ran, one entry per call
    failed: int = 0  # calls that ended in an error: counted, with no tokens


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if value < 0 or value > 2**53:
        return None
    return int(value)


def _tokens(output: Any) -> tuple[int | None, bool]:
    """(total tokens, estimated) from one model run's output items."""
    total, estimated, found = 0, False, False
    for branch in output if isinstance(output, list) else []:
        for item in branch if isinstance(branch, list) else []:
            data = item.get("json") if isinstance(item, Mapping) else None
            if not isinstance(data, Mapping):
                continue
            for key, is_estimate in (("tokenUsage", False), ("tokenUsageEstimate", True)):
                usage = data.get(key)
                if not isinstance(usage, Mapping):
                    continue
                n = _count(usage.get("totalTokens"))
                if n is None:
                    p, c = _count(usage.get("promptTokens")), _count(usage.get("completionTokens"))
                    n = None if p is None or c is None else p + c
                if n is not None:
                    total, found = total + n, True
                    estimated = estimated or is_estimate
                    break
    return (total if found else None), estimated


def usage_of_execution(execution: Mapping[str, Any]) -> ExecutionUsage:
    """Sum model calls and tokens over the language-model runs of one execution (pure)."""
    data = execution.get("data")
    run_data = lookup(data, "resultData.runData") if isinstance(data, Mapping) else MISSING
    calls, tokens, estimated, unknown, failed = 0, 0, False, False, 0
    nodes: list[str] = []
    for node, runs in (run_data.items() if isinstance(run_data, Mapping) else ()):
        for run in runs if isinstance(runs, list) else []:
            if not isinstance(run, Mapping):
                continue
            out = run.get("data") if isinstance(run.get("data"), Mapping) else {}
            into = run.get("inputOverride") if isinstance(run.get("inputOverride"), Mapping) else {}
            if MODEL_CONNECTION not in out and MODEL_CONNECTION not in into:
                continue
            calls += 1
            nodes.append(str(node))
            if run.get("error") is not None or run.get("executionStatus") == "error":
                failed += 1  # the provider refused it (its data is the request): no usage
                continue
            n, est = _tokens(out.get(MODEL_CONNECTION))
            if n is None:
                unknown = True
            else:
                tokens += n
                estimated = estimated or est
    return ExecutionUsage(calls, None if unknown else tokens, estimated, tuple(nodes), failed)


def execution_id(body: str | None, path: str) -> str | None:
    """The execution id the reply carries at ``path``, if any."""
    if not body:
        return None
    try:
        value = lookup(unwrap(json.loads(body)), path)
    except (ValueError, RecursionError):
        return None
    if value is MISSING or value is None or isinstance(value, bool | dict | list):
        return None
    text = str(value).strip()
    if len(text) > MAX_ID_CHARS:  # n8n's ids are numbers; this one would fill every message
        return None
    return text if text.isdigit() or (text and text.replace("-", "").isalnum()) else None


class UsageError(Exception):
    """The execution could not be read: the reason, without secrets."""


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # the API key goes to the configured n8n, never via a proxy
    adapter = DeadlineAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def fetch_executions(cfg: N8nUsage, exec_ids: Sequence[str],
                     session: requests.Session | None = None, clock=time.monotonic,
                     sleep=time.sleep) -> list[Mapping[str, Any]]:
    """A cell's finished executions, in order, polling each until it finishes; one wait of
    ``cfg.wait_s`` covers them all, and the whole lookup ends by ``wait_s + API_SLACK_S``
    whatever the API does (``session``, if given, must be one of ``_session()``'s, or that
    bound does not hold). The first that cannot be read raises ``UsageError``."""
    session = session or _session()
    limit_s = cfg.wait_s + API_SLACK_S
    found: list[Mapping[str, Any]] = []
    with Deadline(limit_s) as overall:
        until = clock() + cfg.wait_s
        for exec_id in exec_ids:
            where = f"{cfg.safe_url}/api/v1/executions/{exec_id}"
            try:
                found.append(_poll(cfg, exec_id, session, where, until, clock, sleep))
            except UsageError:
                if overall.fired:  # a read the deadline cut short: say so, not what it looked like
                    raise UsageError(f"the n8n API did not answer within {limit_s:g} s "
                                     f"({where})") from None
                raise
    return found


def _read(resp: requests.Response, where: str) -> Any:
    """The answer's JSON, read in pieces up to ``MAX_ANSWER_BYTES``."""
    chunks, size = [], 0
    try:
        for chunk in resp.iter_content(65536):
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise UsageError(f"the n8n API answered with over {MAX_ANSWER_BYTES:,} bytes "
                                 f"({where})")
            chunks.append(chunk)
    except requests.RequestException as exc:
        raise UsageError(f"the n8n API's answer broke off ({where}): "
                         f"{type(exc).__name__}") from None
    finally:
        resp.close()
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise UsageError(f"the n8n API answered with something not JSON ({where})") from None


def _poll(cfg: N8nUsage, exec_id: str, session: requests.Session, where: str, deadline: float,
          clock, sleep) -> Mapping[str, Any]:
    """The execution once finished; ``deadline`` (of ``clock``): when to stop waiting."""
    url = f"{cfg.api_url}/api/v1/executions/{exec_id}"
    pause = 0.1
    while True:
        try:
            resp = session.get(url, params={"includeData": "true"}, allow_redirects=False,
                               headers={"X-N8N-API-KEY": cfg.api_key, "Accept": "application/json"},
                               timeout=(5, max(5.0, cfg.wait_s)), stream=True)
        except requests.RequestException as exc:
            raise UsageError(f"cannot reach the n8n API ({where}): {type(exc).__name__}") from None
        if resp.status_code != 200:
            resp.close()
        if resp.status_code in (401, 403):
            raise UsageError(f"the n8n API refused the key (HTTP {resp.status_code}, {where}): "
                             "check n8n.api_key and the key's scopes (execution:read)")
        if resp.status_code == 404:
            raise UsageError(f"n8n has no execution {exec_id} ({where}): is the public API on, "
                             "and are successful production executions saved?")
        if resp.status_code != 200:
            raise UsageError(f"the n8n API answered HTTP {resp.status_code} ({where})")
        execution = _read(resp, where)
        if not isinstance(execution, Mapping):
            raise UsageError(f"the n8n API answered with no execution object ({where})")
        status = execution.get("status")
        running = status in RUNNING if status else not execution.get("finished", True)
        if not running:
            return execution
        if clock() + pause > deadline:
            raise UsageError(f"execution {exec_id} still {status or 'running'} after "
                             f"{cfg.wait_s:g} s")
        sleep(pause)
        pause = min(pause * 2, 1.0)


def measure(cfg: N8nUsage, attempts: Iterable[tuple[int, str, str | None]],
            session: requests.Session | None = None) -> Usage:
    """A cell's usage over its attempts: (attempt number, transport error, body) each.

    An attempt whose connection was refused (or whose host did not resolve) started nothing;
    any other attempt, a timeout included, may have started an execution, so it must carry
    its execution id, or the usage is unknown.
    """
    ids: list[str] = []
    for n, error, body in attempts:
        exec_id = execution_id(body, cfg.execution_id)
        if exec_id is None:
            if error.startswith(NOTHING_SENT):
                continue
            return Usage(None, None, False, f"usage unknown: attempt {n}'s reply carries no "
                         f"execution id at {cfg.execution_id!r}")
        ids.append(exec_id)
    if not ids:
        return Usage(None, None, False, "usage unknown: no attempt reached the workflow")
    calls, tokens, estimated, failed = 0, 0, False, 0
    own = session is None
    session = session or _session()
    try:
        found = [usage_of_execution(e) for e in fetch_executions(cfg, ids, session)]
    except UsageError as exc:
        return Usage(None, None, False, f"usage unknown: {exc}")
    finally:
        if own:
            session.close()
    for u in found:
        calls += u.model_calls
        failed += u.failed
        if u.tokens is None:
            tokens = None
        elif tokens is not None:
            tokens += u.tokens
        estimated = estimated or u.estimated
    where = "execution" + ("s " if len(ids) > 1 else " ") + ", ".join(ids)
    refused = f" ({failed} failed, no tokens)" if failed else ""
    if tokens is None:
        return Usage(calls, None, False, f"from n8n {where}: {calls} model call(s){refused}; "
                     "a model call reported no token usage")
    kind = "n8n's estimate of tokens" if estimated else "tokens as the provider counted them"
    return Usage(calls, tokens, estimated,
                 f"from n8n {where}: {calls} model call(s){refused}, {kind}")
