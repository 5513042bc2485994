"""Production failures become draft questions (`exam capture`, ``POST /api/capture``).

A customer got a bad answer: the specialist's n8n execution holds what its Webhook node was
sent and what the workflow answered. ``capture`` writes that into the agent's bank as a
*draft*: the work order as received, the bad reply as a counterexample, every ``expect_*``
a ``TODO`` that ``exam bank check`` names and ``exam run`` refuses (exam.bank.placeholders),
and in ``notes`` where it came from and what was redacted. Nothing is graded until a person
has written what the right answer must and must not say.

Secrets the registry knows (exam.redact) and personal data found by shape (exam.personal) are
taken out of the work order and the reply before anything is written or shown.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from exam.bank import YAML_SUFFIXES, bank_from_text
from exam.bank.data import load_yaml
from exam.errors import PLACEHOLDER, ExamError
from exam.personal import scrub, scrub_text
from exam.pipeline.n8n_usage import UsageError, fetch_executions
from exam.pipeline.registry import Agent, N8nUsage
from exam.reading import DEFAULT_MAPPING, MISSING, ReplyMapping, lookup
from exam.redact import Redactor

WEBHOOK = "n8n-nodes-base.webhook"
TODO_FACTS = f"{PLACEHOLDER}: write what must appear (alternatives: a|b)"
TODO_FORBIDDEN = f"{PLACEHOLDER}: write what the captured reply said that must never be said"
TODO_STATUS = f"{PLACEHOLDER}: the status a right reply reports (ok, not_found, ...)"
TODO_GOLDEN = f"{PLACEHOLDER}: write a reply that must pass"
LIST_PAGE = 50  # executions asked for per page while listing
LIST_MAX = 500  # executions looked at, at most, for one listing
PREVIEW_CHARS = 60
API_TIMEOUT_S = 30.0
MAX_DRAFT_CHARS = 200_000  # a draft larger than this is a transcript, not a question


class CaptureError(ExamError):
    """The execution, reply or bank cannot make a draft: what to do instead."""


class N8nApiError(CaptureError):
    """n8n's API could not be read (unreachable, refused the key, answered oddly): the
    service's or the configuration's trouble, not the caller's (the API answers 502)."""


@dataclass(frozen=True, slots=True)
class Captured:
    """What a specialist was sent and what it answered, before redaction."""

    work_order: Any
    reply: Any  # text, or the agent's JSON body
    origin: str  # "n8n execution 42 (…/workflow/x/executions/42)", "recorded reply r.json"
    ended: str = ""  # "error output of node 'AI Agent'", "error: …", "success"


@dataclass(frozen=True, slots=True)
class Draft:
    """A draft question as written (or to be written) into ``bank``."""

    bank: str
    case_no: str
    question: dict[str, Any]
    redacted: tuple[str, ...]  # "phone at input.question", never the value
    origin: str = ""  # where it came from, redacted


# -- reading an n8n execution ---------------------------------------------------------------

def execution_ref(text: str) -> str:
    """An execution id, from the id itself or the editor's URL of the execution
    (``…/workflow/<wf>/executions/<id>``, or ``?executionId=<id>``)."""
    text = text.strip()
    if re.fullmatch(r"[A-Za-z0-9-]{1,64}", text):
        return text
    parts = urlsplit(text)
    if parts.scheme in ("http", "https"):
        m = re.search(r"/executions/([A-Za-z0-9-]{1,64})/?$", parts.path)
        if m:
            return m.group(1)
        ids = parse_qs(parts.query).get("executionId") or []
        if ids and re.fullmatch(r"[A-Za-z0-9-]{1,64}", ids[0]):
            return ids[0]
    raise CaptureError(f"{text[:80]!r}: not an execution id nor the n8n editor's URL of an "
                       "execution (…/workflow/<id>/executions/<id>)")


def _run_data(execution: Mapping[str, Any]) -> Mapping[str, Any]:
    found = lookup(execution.get("data"), "resultData.runData")
    return found if isinstance(found, Mapping) else {}


def _outputs(run: Any) -> list[Any]:
    main = lookup(run, "data.main") if isinstance(run, Mapping) else MISSING
    return main if isinstance(main, list) else []


def _first_json(items: Any) -> Mapping[str, Any] | None:
    """The first item's ``json`` of one output's items."""
    if isinstance(items, list) and items and isinstance(items[0], Mapping):
        data = items[0].get("json")
        return data if isinstance(data, Mapping) else None
    return None


def _order(run: Any) -> tuple[float, float]:
    if not isinstance(run, Mapping):
        return (-1.0, -1.0)
    index, start = run.get("executionIndex"), run.get("startTime")
    return (float(index) if isinstance(index, int | float) else -1.0,
            float(start) if isinstance(start, int | float) else -1.0)


def _runs(execution: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every node run with main data, in the order n8n ran them."""
    out = [(name, run) for name, runs in _run_data(execution).items()
           for run in (runs if isinstance(runs, list) else []) if _outputs(run)]
    return sorted(out, key=lambda nr: _order(nr[1]))


def _is_webhook_item(item: Mapping[str, Any] | None) -> bool:
    return item is not None and "body" in item and "headers" in item


def error_output(execution: Mapping[str, Any]) -> str | None:
    """The node whose error output the execution took (``onError: continueErrorOutput``): its
    last output holds the items, each with the ``error`` n8n put there. The public API gives
    no workflow with an execution, so this is read from the data alone."""
    for name, run in _runs(execution):
        main = _outputs(run)
        item = _first_json(main[-1]) if len(main) > 1 else None
        if item is not None and "error" in item and not any(main[:-1]):
            return name
    return None


def how_it_ended(execution: Mapping[str, Any]) -> str:
    """"error output of node 'AI Agent'", "error: <message>", or the execution's status."""
    node = error_output(execution)
    if node is not None:
        return f"error output of node {node!r}"
    status = str(execution.get("status") or ("success" if execution.get("finished") else "?"))
    if status in ("error", "crashed"):
        message = lookup(execution.get("data"), "resultData.error.message")
        return f"{status}: {message}" if isinstance(message, str) else status
    return status


def _webhook_body(execution: Mapping[str, Any]) -> Any:
    """What the Webhook node received: the first node run's item, n8n's ``body`` in it."""
    for _, run in _runs(execution):
        item = _first_json(_outputs(run)[0])
        if _is_webhook_item(item):
            return item["body"]
    return MISSING


WEBHOOK_KEYS = ("headers", "params", "query", "body", "webhookUrl", "executionMode")


def _slim(item: Mapping[str, Any], mapping: ReplyMapping) -> dict[str, Any]:
    """The reply body as a counterexample: no webhook request carried along (its headers),
    each tool step only its tool, input and observation (not the model's message log)."""
    out = {k: v for k, v in item.items() if not (_is_webhook_item(item) and k in WEBHOOK_KEYS)}
    steps_path = mapping.steps.path if mapping.steps else None
    steps = out.get(steps_path) if steps_path else None
    if isinstance(steps, list):
        out[steps_path] = [
            {**({"action": {k: s["action"][k] for k in ("tool", "toolInput")
                            if k in s["action"]}} if isinstance(s.get("action"), Mapping) else {}),
             **({"observation": s["observation"]} if "observation" in s else {})}
            if isinstance(s, Mapping) else s for s in steps]
    return out


def _reply(execution: Mapping[str, Any], mapping: ReplyMapping) -> Any:
    """What the workflow answered, as n8n recorded it: the item its last node (the Respond
    to Webhook) answered from, read as the agent's body when it holds the answer text, as the
    error text when it holds n8n's error, else as it is; the workflow's own error without."""
    runs = _runs(execution)
    message = lookup(execution.get("data"), "resultData.error.message")
    if execution.get("status") in ("error", "crashed") and isinstance(message, str):
        return message  # the workflow stopped: n8n answered with its error, not a node's item
    if runs:
        main = _outputs(runs[-1][1])
        item = next((j for items in main if (j := _first_json(items)) is not None), None)
        if item is not None:
            if any(lookup(item, p) is not MISSING for p in mapping.text):
                return _slim(item, mapping)
            if isinstance(item.get("error"), str):
                return item["error"]
            if not _is_webhook_item(item) or len(runs) > 1:
                return _slim(item, mapping)
    if isinstance(message, str):
        return message
    raise CaptureError(f"n8n execution {execution.get('id', '?')} holds no reply: no node "
                       "answered and no error was recorded (are executions' data saved? "
                       "n8n's EXECUTIONS_DATA_SAVE_ON_*)")


def from_execution(execution: Mapping[str, Any], mapping: ReplyMapping = DEFAULT_MAPPING,
                   where: str = "") -> Captured:
    """The work order and reply an n8n execution holds (pure)."""
    exec_id = str(execution.get("id", "?"))
    body = _webhook_body(execution)
    if body is MISSING:
        raise CaptureError(f"n8n execution {exec_id} has no Webhook node's data: it was not "
                           "started by a webhook, or its data was not saved")
    if not isinstance(body, Mapping):
        raise CaptureError(f"n8n execution {exec_id}: the webhook received "
                           f"{type(body).__name__}, not a JSON object: a work order is one")
    wf = execution.get("workflowId")
    link = f" ({where}/workflow/{wf}/executions/{exec_id})" if where and wf else ""
    return Captured(dict(body), _reply(execution, mapping), f"n8n execution {exec_id}{link}",
                    how_it_ended(execution))


def fetch_execution(cfg: N8nUsage, exec_id: str) -> Mapping[str, Any]:
    """One execution with its data, through n8n's public API (waits while it runs)."""
    try:
        return fetch_executions(cfg, [exec_id])[0]
    except UsageError as exc:
        if "n8n has no execution" in str(exc):
            raise CaptureError(str(exc)) from None  # the caller named one that is not there
        raise N8nApiError(str(exc)) from None


def n8n_of(agent: Agent) -> N8nUsage:
    """The agent's n8n API, or what to set for it."""
    if agent.blocked:  # a secret missing: its API key may be the one
        raise CaptureError(f"agent {agent.name} is blocked: {agent.blocked}")
    if agent.n8n is None:
        raise CaptureError(f"agent {agent.name} has no `n8n:` block in the registry (api_url, "
                           "api_key): capturing an execution reads n8n's public API with it "
                           "(docs/n8n.md); or give the reply with --reply FILE")
    return agent.n8n


# -- listing candidates ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    started: str  # ISO time as n8n gave it
    ended: str
    preview: str  # the work order, redacted and clipped


def parse_since(text: str) -> dt.timedelta:
    """``7d``, ``24h``, ``30m``, ``2w``."""
    m = re.fullmatch(r"\s*(\d{1,5})\s*([mhdw])\s*", text or "")
    if not m:
        raise CaptureError(f"--since: expected a span such as 7d, 24h, 30m or 2w, found {text!r}")
    n, unit = int(m.group(1)), m.group(2)
    return dt.timedelta(**{{"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: n})


def _api_get(cfg: N8nUsage, path: str, params: dict[str, Any], session: requests.Session) -> Any:
    where = f"{cfg.safe_url}{path}"
    try:
        resp = session.get(f"{cfg.api_url}{path}", params=params, allow_redirects=False,
                           headers={"X-N8N-API-KEY": cfg.api_key, "Accept": "application/json"},
                           timeout=(5, API_TIMEOUT_S))
    except requests.RequestException as exc:
        raise N8nApiError(f"cannot reach the n8n API ({where}): {type(exc).__name__}") from None
    if resp.status_code in (401, 403):
        raise N8nApiError(f"the n8n API refused the key (HTTP {resp.status_code}, {where}): "
                           "check n8n.api_key and its scopes (workflow:read, execution:read)")
    if resp.status_code != 200:
        raise N8nApiError(f"the n8n API answered HTTP {resp.status_code} ({where})")
    try:
        return resp.json()
    except ValueError:
        raise N8nApiError(f"the n8n API answered with something not JSON ({where})") from None


def _pages(cfg: N8nUsage, path: str, params: dict[str, Any], session: requests.Session,
           most: int):
    cursor, seen = None, 0
    while seen < most:
        page = _api_get(cfg, path, {**params, **({"cursor": cursor} if cursor else {})}, session)
        items = page.get("data") if isinstance(page, Mapping) else None
        if not isinstance(items, list):
            raise N8nApiError(f"the n8n API answered with no list ({cfg.safe_url}{path})")
        for item in items:
            seen += 1
            yield item
        cursor = page.get("nextCursor")
        if not cursor or not items:
            return


def webhook_path(url: str) -> str:
    """The Webhook node's path an agent's URL calls (``…/webhook/<path>``)."""
    path = urlsplit(url).path
    m = re.search(r"/webhook(?:-test)?/(.+?)/?$", path)
    return m.group(1) if m else path.strip("/")


def workflow_of(agent: Agent, session: requests.Session) -> str:
    """The id of the workflow whose Webhook node the agent's URL calls."""
    cfg = n8n_of(agent)
    want = webhook_path(agent.url)
    for wf in _pages(cfg, "/api/v1/workflows", {"limit": 100}, session, 5000):
        for node in (wf.get("nodes") or []) if isinstance(wf, Mapping) else []:
            if isinstance(node, Mapping) and node.get("type") == WEBHOOK and \
                    str(lookup(node, "parameters.path")).strip("/") == want:
                return str(wf.get("id"))
    raise CaptureError(f"no workflow on {cfg.safe_url} has a Webhook node with path {want!r} "
                       f"(agent {agent.name}'s url)")


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # the API key goes to the configured n8n, never via a proxy
    return session


def candidates(agent: Agent, since: dt.timedelta, now: dt.datetime | None = None,
               session: requests.Session | None = None) -> list[Candidate]:
    """The specialist's executions since ``since`` ago that failed or ended on an error
    output, newest first; nothing is written."""
    cfg = n8n_of(agent)
    secrets = redactor_of(agent).text
    session = session or _session()
    cutoff = (now or dt.datetime.now(dt.UTC)) - since
    wf = workflow_of(agent, session)
    found = []
    for ex in _pages(cfg, "/api/v1/executions", {"workflowId": wf, "includeData": "true",
                                                 "limit": LIST_PAGE}, session, LIST_MAX):
        if not isinstance(ex, Mapping):
            continue
        started = str(ex.get("startedAt") or "")
        try:
            when = dt.datetime.fromisoformat(started.replace("Z", "+00:00"))
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        if when < cutoff:
            continue
        ended = how_it_ended(ex)
        if not (ended.startswith(("error", "crashed"))):
            continue
        body = _webhook_body(ex)
        try:
            size = len(json.dumps(body, ensure_ascii=False)) if body is not MISSING else 0
            shown = ("(no body)" if body is MISSING else f"({size:,} characters)"
                     if size > MAX_DRAFT_CHARS else scrub(body, secrets).value)
        except (ValueError, RecursionError):  # nested past what a bank holds
            shown = "(too deeply nested to show)"
        text = json.dumps(shown, ensure_ascii=False)
        preview = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"
        found.append((when, Candidate(str(ex.get("id")), when.isoformat(timespec="seconds"),
                                      scrub_text(secrets(ended) or "")[0][:80],
                                      preview)))
    found.sort(key=lambda c: c[0], reverse=True)
    return [c for _, c in found]


# -- the draft ------------------------------------------------------------------------------

def next_case_no(case_nos: Sequence[str], agent: str) -> str:
    """The next free case number in the bank's style: ``W2-13`` after ``W2-12`` (the prefix
    most questions share, the width of its widest number)."""
    numbered = [m.groups() for c in case_nos if (m := re.fullmatch(r"(.*?)(\d+)", c))]
    if not numbered:
        return f"{agent}-01"
    prefixes: dict[str, int] = {}
    for prefix, _ in numbered:
        prefixes[prefix] = prefixes.get(prefix, 0) + 1
    prefix = max(prefixes, key=lambda p: (prefixes[p], p == numbered[-1][0]))
    numbers = [d for p, d in numbered if p == prefix]
    width = max(len(d) for d in numbers)
    taken = set(case_nos)
    n = max(int(d) for d in numbers) + 1
    while f"{prefix}{n:0{width}d}" in taken:
        n += 1
    return f"{prefix}{n:0{width}d}"


def draft(bank_path: str, bank_text: str, agent: str, captured: Captured,
          secrets: Callable[[str], str | None], today: dt.date) -> Draft:
    """The draft question for ``captured`` in the bank ``bank_text`` (pure)."""
    questions = _questions(bank_path, bank_text)
    case_no = next_case_no([q.get("case_no") for q in questions
                            if isinstance(q, Mapping) and isinstance(q.get("case_no"), str)],
                           agent)
    try:
        size = len(json.dumps([captured.work_order, captured.reply], ensure_ascii=False))
    except (ValueError, RecursionError):
        raise CaptureError(f"{bank_path}: {case_no}: the captured work order or reply is "
                           "nested too deeply for a bank (at most 100 levels)") from None
    if size > MAX_DRAFT_CHARS:  # before any pattern reads it
        raise CaptureError(f"{bank_path}: {case_no}: the captured work order and reply take "
                           f"{size:,} characters (at most {MAX_DRAFT_CHARS:,}): a question is "
                           "a work order, not a transcript; capture it with --reply and a "
                           "shorter --work-order")
    try:
        order = scrub(captured.work_order, secrets, "input")
        reply = scrub(captured.reply, secrets, "reply")
    except ValueError as exc:
        raise CaptureError(f"{bank_path}: {case_no}: the captured value is {exc}") from None
    origin = scrub_text(secrets(captured.origin) or "")[0]
    ended = scrub_text(secrets(captured.ended) or "")[0]
    redacted = (*order.found, *reply.found)
    said = ("; redacted: " + ", ".join(redacted)) if redacted else "; nothing redacted"
    notes = (f"DRAFT captured from {origin} of agent {agent} on {today.isoformat()}"
             f"{f' (it ended: {ended})' if ended else ''}{said}. The counterexample is the "
             f"reply as captured (redacted). Replace every TODO, then: exam bank check "
             f"{bank_path}")
    question = {
        "case_no": case_no, "category": "captured", "severity": "major", "input": order.value,
        "expect_status": TODO_STATUS, "expect_facts": [TODO_FACTS],
        "expect_forbidden": [TODO_FORBIDDEN], "golden": [TODO_GOLDEN],
        "counterexamples": [reply.value], "tags": ["captured"], "notes": notes,
    }
    return Draft(bank_path, case_no, question, redacted, origin)


def _questions(bank_path: str, text: str) -> list[Any]:
    """The bank's questions (JSON or YAML), to number the draft after."""
    if Path(bank_path).suffix.lower() not in YAML_SUFFIXES:
        data = _bank_data(bank_path, text)
        return data["questions"] if isinstance(data, dict) else data
    try:
        data = load_yaml(text)
    except Exception as exc:  # noqa: BLE001 - any YAML trouble: bank check says more
        raise CaptureError(f"{bank_path}: cannot read ({type(exc).__name__}): exam bank check "
                           "says more") from None
    questions = data.get("questions") if isinstance(data, dict) else data
    return questions if isinstance(questions, list) else []


def _bank_data(bank_path: str, text: str) -> Any:
    if Path(bank_path).suffix.lower() in YAML_SUFFIXES:
        raise CaptureError(f"{bank_path}: capture writes JSON banks only (a YAML bank's "
                           "comments and layout would be lost): give --dry-run and paste the "
                           "printed draft into the file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CaptureError(f"{bank_path}: not JSON ({exc}): exam bank check says more") from None
    if isinstance(data, dict) and isinstance(data.get("questions"), list) or \
            isinstance(data, list):
        return data
    raise CaptureError(f"{bank_path}: questions: expected a list of questions to add to")


def _indent(text: str) -> int | None:
    """The bank's indent: the white space before its second line's key (None: one line)."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    spaces = len(lines[1]) - len(lines[1].lstrip(" "))
    return spaces or None


def with_draft(bank_text: str, d: Draft) -> str:
    """The bank's text with the draft question appended, in the file's JSON layout."""
    data = _bank_data(d.bank, bank_text)
    (data["questions"] if isinstance(data, dict) else data).append(d.question)
    out = json.dumps(data, ensure_ascii=False, indent=_indent(bank_text))
    return out + ("\n" if bank_text.endswith("\n") else "")


def write(d: Draft, text: str) -> None:
    """Append the draft to its bank (whose text is ``text``); the bank must still read as one
    (only its TODOs left), and is replaced whole (a rename), never left half written."""
    path = Path(d.bank)
    new = with_draft(text, d)
    _, problems = bank_from_text(new, d.bank)
    if problems:
        raise CaptureError(f"{d.bank}: the bank would not read with the draft "
                           f"({problems[0]}); nothing was written")
    tmp = path.with_name(f".{path.name}.capture")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(path)


_WRITING = threading.Lock()  # one draft at a time in this process (the API's threads)


@contextlib.contextmanager
def _bank_lock(path: Path):
    """One capture at a time per bank folder, across processes too (two at once would both
    number their draft W2-13, and the second write would drop the first)."""
    with _WRITING:
        try:
            fd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            yield  # the read below says what is wrong with the folder
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def redactor_of(agent: Agent):
    """Every secret the registry knows (the agent's redactor holds every agent's and the
    service's), and n8n's API key even when the registry writes it out."""

    known = list(agent.redactor.secrets)
    if agent.n8n is not None:
        known.append(agent.n8n.api_key)
    return Redactor.of(known)


def capture(agent: Agent, captured: Captured, *, write_it: bool = True,
            today: dt.date | None = None) -> Draft:
    """The draft for ``captured`` in ``agent``'s bank, written unless ``write_it`` is False.
    Redacted of every secret the registry knows (the agent's redactor holds every agent's
    and the service's) and of n8n's API key, and of personal data (exam.personal)."""
    path = Path(agent.bank)
    redactor = redactor_of(agent)
    with _bank_lock(path):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CaptureError(f"{agent.bank}: cannot read agent {agent.name}'s bank: "
                               f"{getattr(exc, 'strerror', None) or exc}") from None
        d = draft(agent.bank, text, agent.name, captured, redactor.text,
                  today or dt.datetime.now(dt.UTC).date())
        if write_it:
            write(d, text)
    return d


def recorded(work_order: Any, reply: Any, origin: str) -> Captured:
    """A work order and a reply recorded elsewhere (any agent, n8n or not)."""
    if not isinstance(work_order, Mapping):
        raise CaptureError(f"the work order: expected a JSON object, found "
                           f"{type(work_order).__name__}")
    if reply is None or reply == "":
        raise CaptureError("the reply: empty: a counterexample needs the reply as it was")
    return Captured(dict(work_order), reply, origin, "")
