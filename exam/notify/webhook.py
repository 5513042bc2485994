"""The webhook channel: the channel-neutral summaries, as JSON, POSTed to a URL of the team's.

For teams not on LINE: a Slack or Teams workflow, an n8n webhook, a chat bot of their own reads
``{"summaries": [...], "text": ...}`` (docs/webhook.md). The URL may carry a token (userinfo
or a query value) and ``EXAM_WEBHOOK_AUTH`` an Authorization value: both are secrets, so what
is stored and shown is the URL without them, and every error is redacted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from exam.backoff import backoff_s
from exam.errors import ExamError
from exam.notify import DeliveryError
from exam.notify.summary import (
    PREVIEW_NOTE,
    Summary,
    made_links,
    page_link,
    scorecard_link,
    summary_text,
)
from exam.redact import NO_SECRETS, Redactor, safe_url, url_secrets
from exam.share import secret_from_env

ATTEMPTS = 4  # one try and three retries, on 429, 5xx and connection trouble
TIMEOUT_S = 10.0
DETAIL_CHARS = 200  # of the receiver's answer, in a failure's message


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    url: str = field(repr=False)  # may hold a token: never stored or shown
    authorization: str = field(default="", repr=False)
    public_url: str = ""
    share_secret: str | None = field(default=None, repr=False)
    redactor: Redactor = field(default=NO_SECRETS, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, sending: bool = True) -> WebhookSettings:
        url = (env.get("EXAM_WEBHOOK_URL") or "").strip()
        if sending and not url:
            raise ExamError("EXAM_WEBHOOK_URL not set: the URL the summaries are POSTed to "
                            "(docs/webhook.md)")
        if url:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ExamError(f"EXAM_WEBHOOK_URL: expected an http(s) URL, found "
                                f"{safe_url(url)!r}")
        auth = (env.get("EXAM_WEBHOOK_AUTH") or "").strip()
        return cls(url=url, authorization=auth,
                   public_url=(env.get("EXAM_PUBLIC_URL") or "").rstrip("/"),
                   share_secret=secret_from_env(env),
                   redactor=Redactor.of([*url_secrets(url), auth, *auth.split()[1:]]))


class WebhookError(DeliveryError):
    def __init__(self, message: str, transient: bool, retry_after: float | None = None):
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def post(settings: WebhookSettings, payload: Any, retry_key: str, sleep: Any = None) -> int:
    """POST ``payload`` with ``Idempotency-Key: retry_key`` on every try; the attempts made.
    A 2xx is delivered; 429, 5xx and connection trouble are retried; any other answer is a
    WebhookError at once."""
    import requests

    headers = {"Content-Type": "application/json", "Idempotency-Key": retry_key,
               **({"Authorization": settings.authorization} if settings.authorization else {})}
    data = json.dumps(payload, ensure_ascii=False).encode()
    session = requests.Session()
    session.trust_env = False  # the URL's token goes to the configured URL, never via a proxy
    made = 0

    def once() -> None:
        nonlocal made
        made += 1
        try:
            # an explicit auth keeps user:password in the URL from replacing our Authorization
            r = session.post(settings.url, data=data, headers=headers, timeout=TIMEOUT_S,
                             allow_redirects=False,
                             auth=(lambda req: req) if settings.authorization else None)
        except requests.RequestException as exc:
            raise WebhookError(f"cannot reach the webhook: {type(exc).__name__}",
                               transient=True) from None
        if 200 <= r.status_code < 300:
            return
        # redacted before it is cut: a link quoted across the cut leaves no head behind (a
        # bounded window, long enough for any secret that starts before the cut)
        detail = (settings.redactor.text(r.text[:DETAIL_CHARS * 20]) or "")[:DETAIL_CHARS]
        detail = detail.strip() or r.reason
        raise WebhookError(f"the webhook answered {r.status_code}: {detail}",
                           transient=r.status_code == 429 or r.status_code >= 500,
                           retry_after=_retry_after(r.headers.get("Retry-After")))

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception()
        return backoff_s(state.attempt_number,
                         exc.retry_after if isinstance(exc, WebhookError) else None)

    try:
        Retrying(stop=stop_after_attempt(ATTEMPTS), wait=wait, reraise=True,
                 retry=retry_if_exception(lambda e: isinstance(e, WebhookError) and e.transient),
                 **({"sleep": sleep} if sleep else {}))(once)
    finally:
        session.close()
    return made


def with_links(payload: dict[str, Any], link: Callable[[Any], Any]) -> dict[str, Any]:
    """``payload`` with each summary's ``scorecard_link`` made ``link(scorecard_link)``, and
    nothing else changed (a case number in ``regressions`` is the bank's text, never a link)."""
    return {**payload, "summaries": [
        {**s, "scorecard_link": link(s.get("scorecard_link"))} if isinstance(s, dict) else s
        for s in payload.get("summaries", [])]}


class WebhookChannel:
    """A URL of the team's as a notification channel: one POST of every summary per send."""

    name = "webhook"
    label = "Webhook"
    help = """POST the scorecard summaries as JSON to EXAM_WEBHOOK_URL (docs/webhook.md).

    Needs EXAM_WEBHOOK_URL (not with --dry-run); EXAM_WEBHOOK_AUTH, when set, is sent as the
    Authorization header; EXAM_PUBLIC_URL adds each summary's scorecard link."""

    def settings(self, env: Mapping[str, str], *, sending: bool = True) -> WebhookSettings:
        return WebhookSettings.from_env(env, sending=sending)

    def target(self, settings: WebhookSettings) -> str:
        return safe_url(settings.url, settings.redactor)

    def payloads(self, summaries: Sequence[Summary],
                 settings: WebhookSettings) -> list[dict[str, Any]]:
        return [{"summaries": [{**s.as_dict(), "scorecard_link": scorecard_link(
                    s, settings.public_url, settings.share_secret)} for s in summaries],
                 "text": "\n".join(summary_text(s) for s in summaries)}]

    def preview(self, payloads: Sequence[dict[str, Any]],
                out_path: str) -> tuple[list[str], Any]:
        shown = [with_links(p, page_link) for p in payloads]  # no share link in a file
        lines = [line for p in shown for line in p["text"].splitlines()]
        lines.append(f"{len(shown)} POST(s), nothing sent; the JSON is in {out_path}")
        if shown != list(payloads):
            lines.append(PREVIEW_NOTE.format(out=out_path))
        return lines, shown

    def send(self, settings: WebhookSettings, target: str, payload: dict[str, Any],
             retry_key: str, sleep: Any = None, made: float | None = None) -> int:
        # the share links are made here, once, as of the notification (``made``): every try
        # of this send, and every resend of it, POSTs the same body under its key; and kept
        # out of a failure's message, which quotes the receiver's answer
        sent, tokens = made_links(with_links, payload, settings.share_secret, made)
        if tokens:
            settings = replace(settings, redactor=Redactor.of(
                [*settings.redactor.secrets, *tokens]))
        return post(settings, sent, retry_key, sleep=sleep)


CHANNEL = WebhookChannel()
