"""Per-agent scorecards to the team's LINE group: Flex carousels, LINE's limits, safe delivery.

Delivery neither duplicates nor loses: every push has an ``X-Line-Retry-Key`` (a UUID
kept with the notification); retries (tenacity) on timeouts, 5xx and 429 reuse it; 409
means LINE already accepted it; other 4xx are reported with LINE's message and not
retried. The SDK's own urllib3 retries are off so they do not stack on ours. A failed
notification never touches stored results: it is recorded, and ``exam notify`` resends it.

Pushes read ``LINE_CHANNEL_ACCESS_TOKEN``, ``LINE_GROUP_ID`` and ``LINE_API_HOST`` from the
environment (the webhook in exam/web/line.py reads ``LINE_CHANNEL_SECRET``); none is ever
logged or stored.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from exam.backoff import backoff_s
from exam.errors import ExamError
from exam.store import Store
from exam.web.share import make_link, secret_from_env

DEFAULT_HOST = "https://api.line.me"
MAX_MESSAGES_PER_PUSH = 5
MAX_ALT_TEXT = 1500
MAX_TEXT = 5000
MAX_BUBBLE_BYTES = 30_000
MAX_CAROUSEL_BYTES = 50_000
MAX_BUBBLES = 12
SHOW_REGRESSIONS = 3
SHARE_DAYS = 7.0  # how long the Scorecard button's share link works
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


def agent_summary(card: dict[str, Any], change: dict[str, Any] | None,
                  review_queue: int = 0) -> dict[str, Any]:
    """What one bubble says, as data: easy to test, and the plain-text fallback uses it too."""
    v = card["verdicts"]
    return {
        "agent": card["agent"], "version": card["version"], "pass": v["pass"],
        "needs_human": v["needs_human"], "fail": v["fail"],
        "not_answered": sum(n for k, n in card["run_status"].items() if k != "ok"),
        "critical": card["critical_failures"], "cost": card["cost"],
        "previous": change and change["old"],
        "regressions": [r["case_no"] for r in (change or {}).get("regressions", [])],
        "verdict": change and change["verdict"],
        "verdict_reason": change and change["decision"]["reason"],
        "fixes": [r["case_no"] for r in (change or {}).get("fixes", [])],
        "review_queue": review_queue,
        "review_replies": card.get("review_replies", review_queue),
    }


def _queue(s: dict[str, Any]) -> str:
    from exam.reports.scorecard import queue_words

    return queue_words({"review_queue": s["review_queue"],
                        "review_replies": s.get("review_replies", s["review_queue"])})


def summary_text(s: dict[str, Any]) -> str:
    line = (f"{s['agent']} {s['version']}: pass {s['pass']} · needs_human {s['needs_human']} · "
            f"fail {s['fail']}")
    if s["not_answered"]:
        line += f" · not answered {s['not_answered']}"
    if s["critical"]:
        line += f"\n  CRITICAL failing: {', '.join(s['critical'][:5])}"
    if s["previous"]:
        if s.get("verdict"):
            line += f"\n  verdict vs {s['previous']}: {s['verdict'].upper()}"
            line += f"\n  {s['verdict_reason']}"
        line += (f"\n  vs {s['previous']}: {len(s['regressions'])} regression(s), "
                 f"{len(s['fixes'])} fix(es)")
        if s["regressions"]:
            shown = s["regressions"][:SHOW_REGRESSIONS]
            more = len(s["regressions"]) - len(shown)
            line += f": {', '.join(shown)}" + (f" and {more} more" if more else "")
    if s["review_queue"]:
        line += f"\n  review queue: {_queue(s)} waiting"
    return line


def bubble(s: dict[str, Any], link: str | None, regressions_shown: int = SHOW_REGRESSIONS) -> dict:
    counts = {"type": "box", "layout": "horizontal", "contents": [
        {"type": "box", "layout": "vertical", "contents": [
            _text(str(s[k]), size="xl", weight="bold", color=COLOURS[k], align="center"),
            _text(k.replace("_", " "), size="xxs", color=COLOURS["muted"], align="center")]}
        for k in ("pass", "needs_human", "fail")]}
    body: list[dict[str, Any]] = [counts]
    if s["not_answered"]:
        body.append(_text(f"not answered: {s['not_answered']} (timeouts, errors)",
                          color=COLOURS["muted"]))
    if s["critical"]:
        body.append(_text("CRITICAL failing: " + ", ".join(s["critical"][:5]), weight="bold",
                          color=COLOURS["fail"]))
    if s["previous"]:
        body.append({"type": "separator", "margin": "md"})
        if s.get("verdict"):
            tone = {"ship": "pass", "hold": "fail", "incomplete": "fail"}.get(s["verdict"],
                                                                              "needs_human")
            body.append(_text(f"verdict: {s['verdict'].upper()}", weight="bold",
                              color=COLOURS[tone], margin="md"))
            body.append(_text(s["verdict_reason"][:300], size="xs", color=COLOURS["muted"]))
        body.append(_text(f"vs {s['previous']}: {len(s['regressions'])} regression(s), "
                          f"{len(s['fixes'])} fix(es)", margin="md"))
        shown = s["regressions"][:regressions_shown]
        for case_no in shown:
            body.append(_text(f"✗ {case_no}", color=COLOURS["fail"]))
        more = len(s["regressions"]) - len(shown)
        if more:
            body.append(_text(f"… and {more} more", color=COLOURS["muted"]))
    cost = s["cost"]
    body.append({"type": "separator", "margin": "md"})
    body.append(_text(f"p50: {_fmt(cost['model_calls']['p50'])} model calls · "
                      f"{_fmt(cost['tokens']['p50'])} tokens · "
                      f"{_fmt(cost['latency_ms']['p50'], ' ms')}", color=COLOURS["muted"],
                      margin="md"))
    if s["review_queue"]:
        body.append(_text(f"review queue: {_queue(s)} waiting", color=COLOURS["needs_human"]))
    out: dict[str, Any] = {
        "type": "bubble", "size": "kilo",
        "header": {"type": "box", "layout": "vertical", "contents": [
            _text(f"{s['agent']} · {s['version']}", weight="bold", size="md")]},
        "body": {"type": "box", "layout": "vertical", "spacing": "sm", "contents": body},
    }
    if link:
        out["footer"] = {"type": "box", "layout": "vertical", "contents": [
            {"type": "button", "style": "link", "height": "sm",
             "action": {"type": "uri", "label": "Scorecard", "uri": link}}]}
    return out


def _fit_bubble(s: dict[str, Any], link: str | None) -> dict[str, Any]:
    shown = SHOW_REGRESSIONS
    b = bubble(s, link, shown)
    while _size(b) > MAX_BUBBLE_BYTES and shown > 0:
        shown -= 1
        b = bubble(s, link, shown)
    if _size(b) > MAX_BUBBLE_BYTES:
        raise ExamError(f"{s['agent']}: the scorecard bubble exceeds LINE's 30 KB limit")
    return b


def _alt(summaries: Sequence[dict[str, Any]]) -> str:
    text = "agent-exam\n" + "\n".join(summary_text(s) for s in summaries)
    return text if len(text) <= MAX_ALT_TEXT else text[:MAX_ALT_TEXT - 1] + "…"


def scorecard_link(s: dict[str, Any], public_url: str, share_secret: str | None) -> str | None:
    """The Scorecard button's URI: a signed, expiring read-only share link when the signing
    key is known (a phone has no admin token, and must never need one); else the plain page."""
    if not public_url:
        return None
    path = f"/scorecard/{quote(s['agent'], safe='')}/{quote(s['version'], safe='')}"
    if not share_secret:
        return public_url + path
    return make_link(share_secret, public_url, path, SHARE_DAYS)


def build_messages(summaries: Sequence[dict[str, Any]], public_url: str = "",
                   share_secret: str | None = None) -> list[dict]:
    """Flex carousels (≤ 12 bubbles, ≤ 50 KB each), altText as the plain-text fallback."""
    bubbles = []
    for s in summaries:
        bubbles.append((s, _fit_bubble(s, scorecard_link(s, public_url, share_secret))))
    messages: list[dict[str, Any]] = []
    group: list[tuple[dict, dict]] = []

    def flush() -> None:
        if group:
            carousel = {"type": "carousel", "contents": [b for _, b in group]}
            messages.append({"type": "flex", "altText": _alt([s for s, _ in group]),
                             "contents": carousel})
            group.clear()

    for s, b in bubbles:
        candidate = {"type": "carousel", "contents": [x for _, x in group] + [b]}
        if len(group) >= MAX_BUBBLES or _size(candidate) > MAX_CAROUSEL_BYTES:
            flush()
        group.append((s, b))
    flush()
    return messages


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

class LineError(ExamError):
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


def _line_message(exc: Exception) -> LineError:
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
        return LineError(exc.status, f"LINE answered {exc.status}: {detail or exc.reason}",
                         retry_after)
    return LineError(None, f"cannot reach LINE: {type(exc).__name__}")


def push(settings: LineSettings, to: str, messages: list[dict[str, Any]], retry_key: str,
         attempts: int = 4, sleep=None) -> int:
    """Push with retries reusing ``retry_key``; returns attempts made. 409 counts as delivered."""
    from linebot.v3.messaging import PushMessageRequest

    api = messaging_api(settings)
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
            err = _line_message(exc)
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


def deliver(store: Store, settings: LineSettings, nids: Sequence[int], sleep=None) -> list[dict]:
    """Send recorded notifications; each outcome is recorded, none touches stored results."""
    results = []
    for n in store.notifications(ids=list(nids)):
        if n["status"] == "delivered":
            results.append({**n, "outcome": "already delivered"})
            continue
        try:
            made = push(settings, n["target"], n["payload"], n["retry_key"], sleep=sleep)
        except LineError as exc:
            store.update_notification(n["id"], "failed", 1, str(exc))
            results.append({**n, "status": "failed", "outcome": str(exc)})
            continue
        store.update_notification(n["id"], "delivered", made)
        results.append({**n, "status": "delivered", "outcome": f"delivered in {made} attempt(s)"})
    return results


def notify_runs(store: Store, settings: LineSettings, run_ids: Sequence[int],
                compare_to: str | None = None, sleep=None) -> list[dict[str, Any]]:
    """Build the scorecards of these runs, record the pushes, deliver them."""
    messages = build_messages(summaries_for(store, run_ids, compare_to), settings.public_url,
                              settings.share_secret)
    batch = uuid.uuid4().hex
    nids = [store.add_notification(batch=batch, channel="line", target=settings.group_id,
                                   run_ids=run_ids, retry_key=str(uuid.uuid4()), payload=chunk)
            for chunk in pushes(messages)]
    return deliver(store, settings, nids, sleep=sleep)


def summaries_for(store: Store, run_ids: Sequence[int], compare_to: str | None = None) -> list[dict]:
    from exam.reports import compare, scorecard
    from exam.reports.regrade import regrade, select_runs

    runs = [store.get_run(i) for i in run_ids]
    report = scorecard.build(regrade(store, runs))
    out = []
    for card in report["scorecards"]:
        agent, version = card["agent"], card["version"]
        previous = compare_to
        if previous is None:
            earlier = [r for r in select_runs(store, agent)
                       if r.version != version and r.id < min(card["run_ids"])]
            previous = earlier[0].version if earlier else None
        change = None
        if previous and previous != version:
            both = [r for r in select_runs(store, agent)
                    if r.version != version] + [r for r in runs if r.id in card["run_ids"]]
            try:
                change = compare.build(regrade(store, both), agent, previous, version)
            except ExamError:
                change = None
        # the open review queue: needs_human cells no person has decided yet
        out.append(agent_summary(card, change, card["review_queue"]))
    return out
