"""Send one work order to an agent: every attempt recorded, retries for transport trouble only.

Retries (tenacity) happen on connection errors, timeouts, 429 (honouring Retry-After)
and 5xx, at most ``agent.retries`` times; a wrong answer is never retried. The reply is
then given exactly one run status: ok, timeout, http_error, bad_reply or truncated.

An attempt has one deadline, ``timeout_s`` from connect to the last byte (exam.pipeline.deadline ends
it however slowly the agent dribbles). Bodies are decoded (gzip, deflate: n8n compresses
every reply over 1 KB) with the body cap on the decoded size, read in bounded pieces, so a
decompression bomb stops at the cap.
"""

from __future__ import annotations

import codecs
import email.utils
import functools
import http.client
import threading
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any

import requests
from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_attempt
from urllib3 import Retry, Timeout
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import (
    DecodeError,
    LocationValueError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
)
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.response import HTTPResponse

from exam.backoff import backoff_s
from exam.pipeline.deadline import Deadline, DeadlineAdapter
from exam.pipeline.registry import Agent
from exam.reading import (
    ReadReply,
    ReplyError,
    agent_failure,
    parse_json,
    parse_once,
    read_reply,
    reported_failure,
    usage_over,
)
from exam.records import HEADER_CAP_CHARS, TEXT_CAP_CHARS, AttemptRow, cap_body, cap_text
from exam.redact import scrub_urls
from exam.textsafe import clean_text, no_lone_surrogates

MAX_BODY_BYTES = 8_000_000  # decoded; a reply larger than this is not read to the end: bad_reply
# an attempt ends within timeout_s plus this: the deadline timer waking up and the connection
# being shut (milliseconds on an idle machine; documented in docs/agents.md)
DEADLINE_SLACK_S = 0.5
_local = threading.local()
_NO_RETRIES = Retry(0, read=False)  # what requests' adapter passes for max_retries=0
# connection pools a thread keeps (requests' pool_connections): those of the agents it sent to
# last; the runner's threads send to one agent each, the service's may check any of them
POOLS_KEPT = 4


def _drop_session() -> None:
    """Close this thread's session and its pooled connections (a new one is made on demand)."""
    s = getattr(_local, "session", None)
    _local.pools = {}
    if s is not None:
        _local.session = None
        s.close()


def _session(pool: int) -> requests.Session:
    s = getattr(_local, "session", None)
    if s is None:
        s = requests.Session()
        adapter = DeadlineAdapter(pool_connections=POOLS_KEPT, pool_maxsize=max(4, pool), max_retries=0)
        s.mount("http://", adapter)
        s.mount("https://", adapter)
        s.trust_env = False  # never route exam traffic through a proxy from the environment
        _local.session = s
    return s


@functools.lru_cache(maxsize=256)
def _prepared(url: str, headers: tuple[tuple[str, str], ...], has_body: bool
              ) -> requests.PreparedRequest:
    """The POST as ``requests.Session.post(url, json=..., headers=...)`` prepares it (URL
    checks and quoting, default and agent headers, Basic auth from the URL's userinfo, a JSON
    Content-Type), without its body: one per agent, copied for each attempt. Preparing it
    anew for every request cost as much CPU as sending it. A header requests refuses raises
    here, at every attempt, as it did from ``post``."""
    session = requests.Session()
    session.trust_env = False
    return session.prepare_request(requests.Request("POST", url, headers=dict(headers),
                                                    json={} if has_body else None))


def _request(agent: Agent, work_order: Any) -> requests.PreparedRequest:
    """This attempt's request: the agent's prepared one with its own headers and the work
    order as its body (``PreparedRequest.copy`` also copies a cookie jar, which cost more)."""
    prepared = _prepared(agent.url, tuple(agent.headers.items()), work_order is not None)
    request = requests.PreparedRequest()
    request.method, request.url, request.hooks = prepared.method, prepared.url, prepared.hooks
    request.headers = prepared.headers.copy()
    request.prepare_body(None, None, work_order)
    return request


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt as it happened: kind is ok / timeout / connection / http / bad (a body that
    cannot be read: too large, not what its Content-Encoding or charset says)."""

    kind: str
    row: AttemptRow
    body: str | None
    retry_after: float | None

    @property
    def transient(self) -> bool:
        if self.kind in ("timeout", "connection"):
            return True
        status = self.row.http_status or 0
        return self.kind == "http" and (status == 429 or status >= 500)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _not_http(exc: BaseException) -> http.client.HTTPException | None:
    """What http.client refused in the agent's reply (more than 100 header lines, a header line
    over 64 KB, a status line that is not HTTP), when that is what went wrong; not a connection
    closed early (RemoteDisconnected, IncompleteRead), which the messages below name."""
    if isinstance(exc, MaxRetryError):
        exc = exc.reason
    cause = exc.args[1] if isinstance(exc, ProtocolError) and len(exc.args) > 1 else None
    if isinstance(cause, http.client.HTTPException) and not isinstance(
            cause, (http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return cause
    return None


def _describe_error(exc: BaseException, agent: Agent) -> str:
    if (refused := _not_http(exc)) is not None:  # "aborted" below would say "closed mid-reply"
        what = clean_error(agent, " ".join(str(refused).split()))
        return f"not a valid HTTP reply ({type(refused).__name__}: {what[:120]})"
    text = clean_error(agent, str(exc))  # before any cut: a cut secret is still a secret
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if "reset" in lowered:
        return "connection reset by the agent"
    if "broken" in lowered or "aborted" in lowered or "incomplete" in lowered or \
            "prematurely" in lowered:
        return "connection closed mid-reply"
    if "name or service" in lowered or "resolve" in lowered:
        return "cannot resolve the agent's host"
    # urllib3 wraps what went wrong (SSLError: a certificate refused ...) in MaxRetryError,
    # which says nothing: named by its cause, as requests named it
    cause = exc.reason if isinstance(exc, MaxRetryError) and exc.reason is not None else exc
    return f"{type(cause).__name__}: {text[:200]}"


def _http_error_text(status: int, body: str | None) -> str:
    """'HTTP 404: <n8n message> — hint: ...' where the body says something useful."""
    detail = ""
    if body:
        try:
            data = parse_json(body)
        except ReplyError:
            data = None
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        if isinstance(data, dict):
            msg = data.get("message") or data.get("error") or data.get("detail")
            if isinstance(msg, dict):
                msg = msg.get("message")
            if msg:
                detail = str(msg)
            if data.get("hint"):
                detail += f" — hint: {data['hint']}"
        elif body.lstrip()[:1] == "<":
            detail = "an HTML error page"
        else:
            detail = body.strip()[:200]
    return f"HTTP {status}" + (f": {detail}" if detail else "")


def _encoding_problem(content_encoding: str | None) -> str:
    """Why a Content-Encoding cannot be decoded ('' when it can: gzip, deflate, identity)."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    unknown = [c for c in codings if c not in HTTPResponse.CONTENT_DECODERS]
    if unknown:
        return (f"the body has Content-Encoding {content_encoding!r}, which the exam did not ask "
                f"for and cannot decode")
    return ""


def decode_text(raw: bytes, ctype: str | None) -> tuple[str, str]:
    """(text, problem): the body in its declared charset; UTF-8 with a problem when Python
    cannot decode with that charset (idna, punycode ...). Bytes that are not valid in the
    charset (a Big5 body without ``charset=big5``, a reply cut inside a character) are a
    problem too, the text kept with U+FFFD in their place: graded, the mangled answer would
    read as the agent's own."""
    name = _charset(ctype)
    if raw.startswith(codecs.BOM_UTF8) and codecs.lookup(name).name == "utf-8":
        raw = raw[len(codecs.BOM_UTF8):]  # a Windows agent's BOM: JSON parsers may ignore it
    try:
        with warnings.catch_warnings():
            # codecs that are not character sets (unicode_escape ...) warn on odd input
            warnings.simplefilter("error")
            text = clean_text(raw.decode(name, errors="replace"))  # idna ... raise here
            try:
                raw.decode(name)
            except UnicodeDecodeError as exc:
                bad = raw[exc.start:min(exc.end, exc.start + 4)].hex(" ")
                return text, (f"the body is not valid {name} (bytes {bad} at offset "
                              f"{exc.start}; does Content-Type name its charset?)")
            return text, ""
    except (UnicodeError, LookupError, ValueError, TypeError, Warning):
        return (raw.decode("utf-8", errors="replace"),
                f"the body cannot be read as its declared charset {name!r}")


def _charset(ctype: str | None) -> str:
    """The declared charset, else UTF-8 (JSON's own default; not ISO-8859-1 for text/*)."""
    for part in (ctype or "").split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            try:
                "".encode(value.strip('"'))
                return value.strip('"')
            except LookupError:
                break
    return "utf-8"


def redact(agent: Agent, text: str | None) -> str | None:
    """Remove the agent's secrets, in every encoding, from text an agent sent back."""
    return agent.redactor.text(text)


def clean_error(agent: Agent, text: str) -> str:
    """An error text (often from a library) without secrets, URL userinfo or query strings."""
    return scrub_urls(agent.redactor.text(text) or "")


def _pool(session: requests.Session, request: requests.PreparedRequest) -> HTTPConnectionPool:
    """The connection pool requests' adapter would send ``request`` on, with requests' own TLS
    settings (certificate checks against its CA bundle); kept per thread and URL, for the
    last ``POOLS_KEPT`` URLs it took up. urllib3 2 never closes a pool its manager lets go (nor
    does ``Session.close``): its connections close when nothing holds it, so one kept here for
    every URL would keep an idle connection open to every agent the thread ever sent to."""
    pools = _local.__dict__.setdefault("pools", {})
    pool = pools.get(request.url)
    if pool is None or pool.pool is None:  # None: closed
        while len(pools) >= POOLS_KEPT:
            del pools[next(iter(pools))]  # the oldest: once the adapter lets it go too, closed
        pool = pools[request.url] = _adapter_pool(session, request)
    return pool


def _adapter_pool(session: requests.Session, request: requests.PreparedRequest
                  ) -> HTTPConnectionPool:
    adapter = session.get_adapter(request.url)
    try:
        pool = adapter.get_connection_with_tls_context(request, True, proxies={}, cert=None)
    except LocationValueError as exc:
        raise requests.exceptions.InvalidURL(exc, request=request) from None
    adapter.cert_verify(pool, request.url, True, None)
    return pool


def _urlopen(session: requests.Session, request: requests.PreparedRequest,
             timeout_s: float) -> HTTPResponse:
    """Send ``request`` on its pooled connection and return urllib3's response with its body
    unread, as ``HTTPAdapter.send(stream=True)`` does, without building a requests
    ``Response`` around it (its cookie jar and header copies cost as much CPU as the rest of
    an attempt). No retries and no redirects here: the retries are ``send``'s; urllib3 is
    told so the way requests tells it, so its errors read as before (naming the URL, which
    ``clean_error`` scrubs)."""
    return _pool(session, request).urlopen(
        method=request.method, url=request.path_url, body=request.body, headers=request.headers,
        redirect=False, assert_same_host=False, preload_content=False, decode_content=False,
        retries=_NO_RETRIES, timeout=Timeout(connect=min(10.0, timeout_s), read=timeout_s),
        chunked=False)


def _timed_out(exc: BaseException) -> bool:
    """A timeout of urllib3's own (connect or read), not a refused or broken connection."""
    if isinstance(exc, MaxRetryError):
        exc = exc.reason
    if isinstance(exc, NewConnectionError):
        return False
    return isinstance(exc, (TimeoutError, Urllib3Timeout, requests.Timeout))


def post_once(agent: Agent, work_order: Any, n: int) -> Attempt:
    """One attempt, ended at ``agent.timeout_s`` from its start whatever the agent does."""
    started_wall, t0 = time.time(), time.perf_counter()
    session = _session(agent.concurrency)

    def elapsed_ms() -> float:
        return (time.perf_counter() - t0) * 1000

    def row(status=None, error="", ctype=None, body=None) -> AttemptRow:
        stored, size, cut = cap_body(agent.redactor.body(body))
        error = " ".join(clean_error(agent, error).split())  # one line, whatever the body
        ctype = redact(agent, ctype)  # a hostile agent can put anything in a header
        if ctype is not None and len(ctype) > HEADER_CAP_CHARS:  # and up to 64 KB of it
            ctype = ctype[:HEADER_CAP_CHARS] + "…"
        return AttemptRow(n, started_wall, status, elapsed_ms(), error, ctype, stored, size, cut)

    deadline = Deadline(agent.timeout_s)
    read_to_the_end = False
    try:
        with deadline:
            try:
                request = _request(agent, work_order)
                resp = _urlopen(session, request, agent.timeout_s)
            except (requests.RequestException, Urllib3Error, OSError) as exc:
                if deadline.fired or _timed_out(exc):
                    return Attempt("timeout", row(error=f"no reply within {agent.timeout_s:g} s"),
                                   None, None)
                # say where: "connection refused" alone sends people to debug the wrong agent
                return Attempt("connection", row(error=f"{_describe_error(exc, agent)} ({agent.safe_url})"),
                               None, None)
            if deadline.fired:  # http.client reads a header block cut by the deadline as complete
                resp.close()
                return Attempt("timeout", row(error=f"no reply within {agent.timeout_s:g} s"),
                               None, None)
            status, ctype = resp.status, resp.headers.get("Content-Type")
            retry_after = _retry_after(resp.headers.get("Retry-After"))

            def unreadable(reason: str, body: str | None = None) -> Attempt:
                if not 200 <= status < 300:  # the HTTP status says more than its body
                    return Attempt("http", row(status, f"HTTP {status} ({reason})", ctype, body),
                                   body, retry_after)
                return Attempt("bad", row(status, reason, ctype, body), None, None)

            def late() -> Attempt:
                return Attempt("timeout", row(status, f"reply not complete within "
                                                      f"{agent.timeout_s:g} s", ctype), None, None)

            problem = _encoding_problem(resp.headers.get("Content-Encoding"))
            if problem:
                resp.close()
                return unreadable(problem)
            chunks: list[bytes] = []
            size = 0
            try:
                with resp:
                    while True:
                        # decoded, at most 64 KB per read: urllib3 inflates gzip/deflate in bounded
                        # pieces, so the cap below holds for a decompression bomb too
                        chunk = resp.read1(65536, decode_content=True)
                        if not chunk:
                            break
                        size += len(chunk)
                        if size > MAX_BODY_BYTES:
                            return unreadable(f"reply body over {MAX_BODY_BYTES:,} bytes (decoded)")
                        chunks.append(chunk)
            except DecodeError as exc:
                if deadline.fired:
                    return late()
                cause = exc.args[1] if len(exc.args) > 1 else exc
                return unreadable(f"the body says Content-Encoding: "
                                  f"{resp.headers.get('Content-Encoding')} but it cannot be decoded "
                                  f"({str(cause)[:120]})")
            except Exception as exc:  # urllib3 raises several kinds when a body is cut
                if deadline.fired or "timed out" in str(exc).lower():
                    return late()
                return Attempt("connection", row(status, _describe_error(exc, agent), ctype), None, None)
            if deadline.fired:  # the body "ended" because the deadline shut the socket
                return late()
        read_to_the_end = True
        body, problem = decode_text(b"".join(chunks), ctype)
        body = agent.redactor.body(body)
        if problem:
            return unreadable(problem, body)
        if not 200 <= status < 300:
            return Attempt("http", row(status, _http_error_text(status, body), ctype, body), body,
                           retry_after)
        return Attempt("ok", row(status, "", ctype, body), body, None)
    finally:
        # a reply given up mid-way (the deadline, the cap, a broken stream) leaves its connection
        # in no state to reuse: close this thread's pooled connections and start afresh
        if deadline.fired or not read_to_the_end:
            _drop_session()


def _wait(retry_state: RetryCallState) -> float:
    last: Attempt = retry_state.outcome.result()
    return backoff_s(retry_state.attempt_number, last.retry_after)


def send(agent: Agent, work_order: Any, gate,
         outcomes: list[Attempt] | None = None) -> list[Attempt]:
    """POST with retries for transport trouble; every attempt is returned, in order (and
    appended to ``outcomes`` as it happens, so a caller still has them if something raises)."""
    outcomes = [] if outcomes is None else outcomes

    def attempt() -> Attempt:
        with gate.slot():
            out = post_once(agent, work_order, len(outcomes) + 1)
        outcomes.append(out)
        return out

    def retried(o: Attempt) -> bool:
        # an agent that reported its own failure has answered: sending again is not a retry
        return o.transient and not agent_failure(o.body, agent.reply, agent.reply_format)

    first = attempt()
    if not agent.retries or not retried(first):
        return outcomes  # most cells: no retry machinery built for them
    done = [first]  # tenacity takes over from the first attempt, as if it had made it

    def again() -> Attempt:
        return done.pop() if done else attempt()

    # the back-off is slept by the gate: a run told to stop does not wait it out (Stopped)
    Retrying(stop=stop_after_attempt(agent.retries + 1), wait=_wait, sleep=gate.pause,
             retry=retry_if_result(retried),
             retry_error_callback=lambda state: state.outcome.result())(again)
    return outcomes


@dataclass(frozen=True, slots=True)
class Result:
    run_status: str
    error: str
    read: ReadReply | None
    model_calls: int | None
    tokens: int | None


def _within(figure: int | None) -> int | None:
    """A sum over attempts that no longer fits a stored integer is not a figure."""
    return figure if figure is None or abs(figure) < 2**63 else None


# n8n's whole reply when the Webhook node responds *Immediately*: the workflow has not run yet,
# so there is no answer to grade (a mapping reading `message` would grade these words)
N8N_STARTED = {"message": "Workflow was started"}
N8N_STARTED_ERROR = ("n8n answered 'Workflow was started' before the workflow ran (the Webhook "
                     "node responds Immediately): set its Respond to \"Using 'Respond to "
                     "Webhook' Node\" (docs/n8n.md, Response modes)")


def _n8n_started(body: str | None, parse) -> bool:
    if not body or "Workflow was started" not in body:
        return False
    try:
        return parse(body) == N8N_STARTED
    except ReplyError:
        return False


def cell_result(agent: Agent, outcomes: list[Attempt]) -> Result:
    """The run status of a cell from its last attempt; usage summed over every attempt."""
    last = outcomes[-1]
    parse = parse_once()  # usage and the reply come from the same body: parsed once
    calls, tokens = (_within(f) for f in usage_over([o.body for o in outcomes], agent.reply,
                                                         agent.reply_format, parse))
    if last.kind == "timeout":
        return Result("timeout", last.row.error, None, calls, tokens)
    if last.kind == "http" and (failure := agent_failure(last.body, agent.reply,
                                                          agent.reply_format)):
        return Result("agent_error", f"HTTP {last.row.http_status}: the agent reported its own "
                      f"failure: {failure}", None, calls, tokens)
    if last.kind in ("connection", "http"):
        return Result("http_error", last.row.error, None, calls, tokens)
    if last.kind == "bad":
        return Result("bad_reply", last.row.error, None, calls, tokens)
    if _n8n_started(last.body, parse):
        return Result("bad_reply", N8N_STARTED_ERROR, None, calls, tokens)
    # decoding can assemble a secret form the raw body did not show (\u0025 + "41" → %41)
    read, problem = read_reply(last.body or "", agent.reply, agent.reply_format,
                               clean=lambda data: no_lone_surrogates(agent.redactor.data(data)),
                               parse=parse)
    if (failure := reported_failure(read)) is not None:
        return Result("agent_error", f"the agent reported its own failure: {failure}", read,
                      calls, tokens)
    if read is not None and read.text is not None and len(read.text) > TEXT_CAP_CHARS:
        kept, _ = cap_text(read.text)
        return Result("bad_reply", f"reply text is {len(read.text):,} characters, over the "
                                   f"{TEXT_CAP_CHARS:,} the exam stores and grades; the first "
                                   f"{TEXT_CAP_CHARS:,} are kept",
                      replace(read, text=kept), calls, tokens)
    if read is None or problem:
        return Result("bad_reply", problem, read, calls, tokens)
    if read.truncated:
        return Result("truncated", "the agent flagged its reply as truncated", read, calls, tokens)
    return Result("ok", "", read, calls, tokens)
