"""The LINE channel: summaries (exam/notify/summary.py) as Flex carousels within LINE's
limits, pushed to the team's group.

Delivery neither duplicates nor loses: every push has an ``X-Line-Retry-Key`` (the retry key
kept with the notification, exam/notify/__init__.py); retries (tenacity) on timeouts, 5xx and
429 reuse it; 409 means LINE already accepted it; other 4xx are reported with LINE's message
and not retried. The SDK's own urllib3 retries are off so they do not stack on ours.

Pushes read ``LINE_CHANNEL_ACCESS_TOKEN``, ``LINE_GROUP_ID`` and ``LINE_API_HOST`` from the
environment (the webhook in exam/web/line.py reads ``LINE_CHANNEL_SECRET``); none is ever
logged or stored. Neither is a Scorecard share link: the stored push holds a marker, made a
link as the push is sent, and LINE's size limits are checked with the longest link it can
become. LINE's error messages may quote the push back: a failure's message (printed and
stored) is redacted of the send's share links and of the access token.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from exam import notify
from exam.backoff import backoff_s
from exam.errors import ExamError
from exam.notify.summary import (
    PREVIEW_NOTE,
    SHOW_REGRESSIONS,
    Summary,
    clip,
    compare_command,
    longest,
    made_links,
    page_link,
    queue_text,
    scorecard_link,
    summary_text,
    units,
)
from exam.redact import NO_SECRETS, Redactor
from exam.share import secret_from_env

DEFAULT_HOST = "https://api.line.me"
MAX_MESSAGES_PER_PUSH = 5
MAX_ALT_TEXT = 1500  # LINE counts characters as UTF-16 code units (summary.units)
REASON_SHOWN = 300  # characters of a verdict's reason a bubble shows (a phone's few lines)
ALT_REASON_LIMITS = (None, 300, 160)  # the altText's reasons, tried in turn until it fits
MAX_TEXT = 5000
MAX_BUBBLE_BYTES = 30_000
MAX_CAROUSEL_BYTES = 50_000
MAX_BUBBLES = 12
COLOURS = {"pass": "#2E7D32", "needs_human": "#B26A00", "fail": "#C62828", "muted": "#757575"}


@dataclass(frozen=True, slots=True)
class LineSettings:
    access_token: str = field(repr=False)
    group_id: str = ""
    host: str = DEFAULT_HOST
    public_url: str = ""
    share_secret: str | None = field(default=None, repr=False)  # signs the Scorecard links

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, need_group: bool = True) -> LineSettings:
        env = os.environ if env is None else env
        missing = [k for k in ("LINE_CHANNEL_ACCESS_TOKEN",) + (("LINE_GROUP_ID",) if need_group
                                                                 else ()) if not env.get(k)]
        if missing:
            raise ExamError(f"{' and '.join(missing)} not set: see docs/line.md for where to find "
                            "them")
        return cls(access_token=env["LINE_CHANNEL_ACCESS_TOKEN"],
                   group_id=env.get("LINE_GROUP_ID", ""),
                   host=(env.get("LINE_API_HOST") or DEFAULT_HOST).rstrip("/"),
                   public_url=(env.get("EXAM_PUBLIC_URL") or "").rstrip("/"),
                   share_secret=secret_from_env(env))


# -- building messages ----------------------------------------------------------------

def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())


def _text(text: str, **kw: Any) -> dict[str, Any]:
    return {"type": "text", "text": text[:2000] or " ", "wrap": True, "size": "sm", **kw}


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "–"
    return (f"{v:,.0f}" if v >= 10 else f"{v:g}") + unit


def _reason(s: Summary, text: str) -> str:
    """A verdict's reason as a bubble shows it: its first clause kept, cut at a boundary and
    saying where the whole of it is (the Scorecard page does not show it)."""
    return clip(text, REASON_SHOWN, "the whole reason: " + compare_command(s))


def bubble(s: Summary, link: str | None, regressions_shown: int = SHOW_REGRESSIONS) -> dict:
    counts = {"type": "box", "layout": "horizontal", "contents": [
        {"type": "box", "layout": "vertical", "contents": [
            _text(str(s.counts[k]), size="xl", weight="bold", color=COLOURS[k], align="center"),
            _text(k.replace("_", " "), size="xxs", color=COLOURS["muted"], align="center")]}
        for k in ("pass", "needs_human", "fail")]}
    body: list[dict[str, Any]] = [counts]
    if s.excluded:
        body.insert(0, _text(clip(f"EXCLUDED from every report: {s.excluded}", REASON_SHOWN),
                             weight="bold", color=COLOURS["fail"]))
    if s.not_answered:
        body.append(_text(f"not answered: {s.not_answered} (timeouts, errors)",
                          color=COLOURS["muted"]))
    if s.critical:
        body.append(_text("CRITICAL failing: " + ", ".join(s.critical[:5]), weight="bold",
                          color=COLOURS["fail"]))
    if s.previous:
        body.append({"type": "separator", "margin": "md"})
        if s.verdict:
            tone = {"ship": "pass", "hold": "fail", "incomplete": "fail"}.get(s.verdict,
                                                                              "needs_human")
            if tone == "pass" and s.still_failing:  # never green over a failure carried on
                tone = "needs_human"
            body.append(_text(f"verdict: {s.verdict.upper()} vs {s.baseline or s.previous}",
                              weight="bold", color=COLOURS[tone], margin="md"))
            if s.still_failing:
                body.append(_text(f"still failing since {s.previous}: "
                                  + ", ".join(s.still_failing[:5]), color=COLOURS["fail"]))
            body.append(_text(_reason(s, s.verdict_reason or ""), size="xs",
                              color=COLOURS["muted"]))
        if not s.verdict and s.verdict_reason:  # not compared: no regressions to count
            body.append(_text(_reason(s, f"vs {s.previous}: {s.verdict_reason}"), size="xs",
                              color=COLOURS["muted"], margin="md"))
        else:
            body.append(_text(f"vs {s.previous}: {len(s.regressions)} regression(s), "
                              f"{len(s.fixes)} fix(es)", margin="md"))
        shown = s.regressions[:regressions_shown]
        for case_no in shown:
            body.append(_text(f"✗ {case_no}", color=COLOURS["fail"]))
        more = len(s.regressions) - len(shown)
        if more:
            body.append(_text(f"… and {more} more", color=COLOURS["muted"]))
    cost = s.cost
    body.append({"type": "separator", "margin": "md"})
    body.append(_text(f"p50: {_fmt(cost['model_calls']['p50'])} model calls · "
                      f"{_fmt(cost['tokens']['p50'])} tokens · "
                      f"{_fmt(cost['latency_ms']['p50'], ' ms')}", color=COLOURS["muted"],
                      margin="md"))
    if s.review_queue:
        body.append(_text(f"review queue: {queue_text(s)} waiting", color=COLOURS["needs_human"]))
    out: dict[str, Any] = {
        "type": "bubble", "size": "kilo",
        "header": {"type": "box", "layout": "vertical", "contents": [
            _text(f"{s.agent} · {s.version}", weight="bold", size="md")]},
        "body": {"type": "box", "layout": "vertical", "spacing": "sm", "contents": body},
    }
    if link:
        out["footer"] = {"type": "box", "layout": "vertical", "contents": [
            {"type": "button", "style": "link", "height": "sm",
             "action": {"type": "uri", "label": "Scorecard", "uri": link}}]}
    return out


def _fit_bubble(s: Summary, link: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bubble as stored (``link``: perhaps a share link's marker) and the same bubble as
    long as it can be once sent (the marker as the longest link it becomes), which is what
    LINE's limits are checked on: fewer regressions are listed until that one fits."""
    sized = longest(link)
    shown = SHOW_REGRESSIONS
    b = bubble(s, sized, shown)
    while _size(b) > MAX_BUBBLE_BYTES and shown > 0:
        shown -= 1
        b = bubble(s, sized, shown)
    if _size(b) > MAX_BUBBLE_BYTES:
        raise ExamError(f"{s.agent}: the scorecard bubble exceeds LINE's 30 KB limit")
    return bubble(s, link, shown), b


def _alt(summaries: Sequence[Summary]) -> str:
    """The carousel's plain text within LINE's 1,500 characters (UTF-16 units): the reasons
    cut shorter before any summary loses its head line; then whole lines go, marked "…"."""
    for limit in ALT_REASON_LIMITS:
        text = "agent-exam\n" + "\n".join(summary_text(s, limit) for s in summaries)
        if units(text) <= MAX_ALT_TEXT:
            return text
    kept: list[str] = []
    for line_ in text.split("\n"):
        if units("\n".join([*kept, line_, "…"])) > MAX_ALT_TEXT:
            break
        kept.append(line_)
    return "\n".join([*kept, "…"])


def build_messages(summaries: Sequence[Summary], public_url: str = "",
                   share_secret: str | None = None) -> list[dict]:
    """Flex carousels (≤ 12 bubbles, ≤ 50 KB each), altText as the plain-text fallback. With
    a signing key each Scorecard button holds a marker, made a share link as it is sent
    (``with_links``); the sizes are those of the longest link it can become."""
    bubbles = [(s, *_fit_bubble(s, scorecard_link(s, public_url, share_secret)))
               for s in summaries]
    messages: list[dict[str, Any]] = []
    group: list[tuple[Summary, dict, dict]] = []

    def flush() -> None:
        if group:
            carousel = {"type": "carousel", "contents": [b for _, b, _ in group]}
            messages.append({"type": "flex", "altText": _alt([s for s, _, _ in group]),
                             "contents": carousel})
            group.clear()

    for s, b, sized in bubbles:
        candidate = {"type": "carousel", "contents": [x for _, _, x in group] + [sized]}
        if len(group) >= MAX_BUBBLES or _size(candidate) > MAX_CAROUSEL_BYTES:
            flush()
        group.append((s, b, sized))
    flush()
    return messages


def with_links(messages: list[dict[str, Any]], link: Callable[[Any], Any]) -> list[dict]:
    """``messages`` (one push, as stored) with each bubble's Scorecard button's URI made
    ``link(uri)``, and nothing else changed: where ``bubble`` puts the link, in this
    version's pushes and in those stored by older ones."""
    out = []
    for m in messages:
        carousel = m.get("contents") if m.get("type") == "flex" else None
        if isinstance(carousel, dict) and isinstance(carousel.get("contents"), list):
            bubbles = [_with_link(b, link) for b in carousel["contents"]]
            m = {**m, "contents": {**carousel, "contents": bubbles}}
        out.append(m)
    return out


def _with_link(b: Any, link: Callable[[Any], Any]) -> Any:
    footer = b.get("footer") if isinstance(b, dict) else None
    if not isinstance(footer, dict) or not isinstance(footer.get("contents"), list):
        return b
    buttons = [{**c, "action": {**c["action"], "uri": link(c["action"].get("uri"))}}
               if c.get("type") == "button" and isinstance(c.get("action"), dict) else c
               for c in footer["contents"]]
    return {**b, "footer": {**footer, "contents": buttons}}


def text_messages(text: str) -> list[dict[str, Any]]:
    """Plain text, split into messages within LINE's 5,000 characters."""
    chunks, current = [], ""
    for line in text.splitlines(keepends=True):
        while len(line) > MAX_TEXT:
            chunks.append(line[:MAX_TEXT])
            line = line[MAX_TEXT:]
        if len(current) + len(line) > MAX_TEXT:
            chunks.append(current)
            current = ""
        current += line
    if current.strip():
        chunks.append(current)
    return [{"type": "text", "text": c.rstrip("\n")} for c in chunks]


def pushes(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """At most 5 messages per push."""
    return [messages[i:i + MAX_MESSAGES_PER_PUSH]
            for i in range(0, len(messages), MAX_MESSAGES_PER_PUSH)]


# -- sending ------------------------------------------------------------------------------

class LineError(notify.DeliveryError):
    def __init__(self, status: int | None, message: str, retry_after: float | None = None):
        self.status, self.retry_after = status, retry_after
        super().__init__(message)

    @property
    def transient(self) -> bool:
        # None/0: no HTTP answer at all (connection refused, TLS, timeout)
        return not self.status or self.status == 429 or self.status >= 500


def messaging_api(settings: LineSettings):
    from linebot.v3.messaging import ApiClient, Configuration, MessagingApi

    config = Configuration(host=settings.host, access_token=settings.access_token)
    config.retries = False  # our tenacity loop retries with the same key; urllib3 must not
    return MessagingApi(ApiClient(config))


def _line_message(exc: Exception, redactor: Redactor = NO_SECRETS) -> LineError:
    """The SDK's error as a LineError whose message is ``redactor``'s: LINE's message and
    details may quote the push back (a share link in it)."""
    from linebot.v3.messaging.exceptions import ApiException

    if isinstance(exc, ApiException) and exc.status:
        detail = ""
        try:
            data = json.loads(exc.body or b"{}")
            detail = data.get("message", "")
            if data.get("details"):
                detail += " (" + "; ".join(f"{d.get('property', '')}: {d.get('message', '')}"
                                           for d in data["details"][:3]) + ")"
        except (ValueError, AttributeError):
            detail = str(exc.reason or "")
        retry_after = None
        for k, v in (exc.headers or {}).items():
            if k.lower() == "retry-after":
                try:
                    retry_after = float(v)
                except ValueError:
                    pass
        return LineError(exc.status, redactor.text(f"LINE answered {exc.status}: "
                                                   f"{detail or exc.reason}") or "", retry_after)
    return LineError(None, f"cannot reach LINE: {type(exc).__name__}")


def push(settings: LineSettings, to: str, messages: list[dict[str, Any]], retry_key: str,
         attempts: int = 4, sleep=None, redactor: Redactor = NO_SECRETS) -> int:
    """Push with retries reusing ``retry_key``; returns attempts made. 409 counts as delivered.
    A failure's message is redacted by ``redactor`` and of the access token."""
    from linebot.v3.messaging import PushMessageRequest

    api = messaging_api(settings)
    redactor = Redactor.of([*redactor.secrets, settings.access_token])
    request = PushMessageRequest.from_dict({"to": to, "messages": messages})
    made = 0

    def once() -> None:
        nonlocal made
        made += 1
        try:
            # a 2xx is delivery; not parsing LINE's reply keeps a schema change from
            # looking like a failure (which would only be retried into a 409 anyway)
            api.push_message_with_http_info(request, x_line_retry_key=retry_key, _request_timeout=10,
                                            _preload_content=False)
        except Exception as exc:  # the SDK raises ApiException, urllib3 its own errors
            err = _line_message(exc, redactor)
            if err.status == 409:  # "already accepted" for this retry key: delivered
                return
            raise err from None

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception()
        return backoff_s(state.attempt_number, exc.retry_after if isinstance(exc, LineError) else None)

    kwargs = {"sleep": sleep} if sleep else {}
    Retrying(stop=stop_after_attempt(attempts), wait=wait, reraise=True,
             retry=retry_if_exception(lambda e: isinstance(e, LineError) and e.transient),
             **kwargs)(once)
    return made


class LineChannel:
    """LINE as a notification channel (exam/notify): one push of ≤ 5 messages per send."""

    name = "line"
    label = "LINE"
    help = """Push per-agent scorecards to the LINE group (LINE_* settings from the environment).

    Needs LINE_CHANNEL_ACCESS_TOKEN and LINE_GROUP_ID (not with --dry-run); EXAM_PUBLIC_URL
    makes the buttons open the dashboard (docs/line.md)."""

    def settings(self, env: Mapping[str, str], *, sending: bool = True) -> LineSettings:
        if sending:
            return LineSettings.from_env(env)
        return LineSettings(access_token="", public_url=(env.get("EXAM_PUBLIC_URL") or "")
                            .rstrip("/"), share_secret=secret_from_env(env))

    def target(self, settings: LineSettings) -> str:
        return settings.group_id

    def payloads(self, summaries: Sequence[Summary],
                 settings: LineSettings) -> list[list[dict[str, Any]]]:
        return pushes(build_messages(summaries, settings.public_url, settings.share_secret))

    def preview(self, payloads: Sequence[list[dict[str, Any]]],
                out_path: str) -> tuple[list[str], Any]:
        stored = [m for p in payloads for m in p]
        # no share link in a file anyone reading the folder may open: the plain pages (the
        # Flex Message Simulator takes only real URIs, which a marker is not)
        messages = with_links(stored, page_link)
        lines = [f"message {i} altText: {m['altText'].replace(chr(10), ' / ')}"
                 for i, m in enumerate(messages, 1)]
        lines.append(f"{len(messages)} message(s), nothing sent; the Flex JSON is in {out_path} "
                     f"(paste it into LINE's Flex Message Simulator to see it)")
        if messages != stored:
            lines.append(PREVIEW_NOTE.format(out=out_path))
        return lines, messages

    def send(self, settings: LineSettings, target: str, payload: list[dict[str, Any]],
             retry_key: str, sleep: Any = None, made: float | None = None) -> int:
        # the share links are made here, once, as of the notification (``made``): every try
        # of this send, and every resend of it, pushes the same body under its retry key;
        # and kept out of a failure's message, which quotes LINE's answer (the push, at times)
        sent, tokens = made_links(with_links, payload, settings.share_secret, made)
        return push(settings, target, sent, retry_key, sleep=sleep, redactor=Redactor.of(tokens))


CHANNEL = LineChannel()
