"""``POST /line/webhook``: the team's LINE group asks for scorecards and starts runs.

The signature (``X-Line-Signature``, HMAC-SHA256 of the raw body with the channel secret)
is checked before anything is read; a bad or missing one is 400 and nothing happens.
LINE gives up after about two seconds, so the answer is 200 at once and the events are
handled afterwards, each ``webhookEventId`` once (LINE redelivers).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

from flask import Blueprint, current_app, jsonify, request

from exam.errors import ExamError

bp = Blueprint("line", __name__, url_prefix="/line")
log = logging.getLogger("exam.line")
_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="line-webhook")
HELP = ("agent-exam commands:\n"
        "exam status — the latest runs\n"
        "exam scorecard W1 — the latest scorecard of W1\n"
        "exam run W1 v3 — queue a run of W1 labelled v3 (allowed groups only)")


def _groups(value: str | None) -> set[str]:
    return {g.strip() for g in (value or "").split(",") if g.strip()}


@bp.post("/webhook")
def webhook():
    from linebot.v3.exceptions import InvalidSignatureError
    from linebot.v3.webhook import WebhookParser

    secret = os.environ.get("LINE_CHANNEL_SECRET")
    if not secret:
        return jsonify(error="LINE webhook not configured: set LINE_CHANNEL_SECRET"), 503
    signature = request.headers.get("X-Line-Signature")
    if not signature:
        return jsonify(error="missing X-Line-Signature"), 400
    body = request.get_data(as_text=True)
    try:
        events = WebhookParser(secret).parse(body, signature)
    except InvalidSignatureError:
        return jsonify(error="invalid signature"), 400
    except Exception:  # a signed body the SDK cannot parse: acknowledge, do nothing
        log.warning("signed LINE body could not be parsed; ignored")
        return jsonify(ok=True), 200
    if events:
        cfg = {k: current_app.config[k] for k in ("DB", "AGENTS", "LINE_ALLOWED_GROUPS",
                                                   "LINE_RUN_GROUPS", "PUBLIC_URL")}
        _executor.submit(_handle_all, events, cfg)
    return jsonify(ok=True), 200


def _handle_all(events: list[Any], cfg: dict[str, Any]) -> None:
    from exam.store import Store

    store = Store(cfg["DB"])
    try:
        for event in events:
            try:
                _handle(store, event, cfg)
            except Exception:
                log.exception("LINE event %s failed", getattr(event, "webhook_event_id", "?"))
    finally:
        store.close()


def _reply(token: str | None, text: str) -> None:
    from linebot.v3.messaging import ReplyMessageRequest

    from exam.notify.line import LineSettings, messaging_api, text_messages

    if not token:
        return
    settings = LineSettings.from_env(need_group=False)
    messages = text_messages(text)[:5]
    messaging_api(settings).reply_message(
        ReplyMessageRequest.from_dict({"replyToken": token, "messages": messages}),
        _request_timeout=10)


def _handle(store, event, cfg: dict[str, Any]) -> None:
    from linebot.v3.webhooks import JoinEvent, MessageEvent, TextMessageContent

    event_id = getattr(event, "webhook_event_id", None)
    if event_id and not store.first_sight_of_event(event_id, type(event).__name__):
        log.info("LINE event %s already handled (redelivery)", event_id)
        return
    group_id = getattr(getattr(event, "source", None), "group_id", None)
    if isinstance(event, JoinEvent) and group_id:
        store.add_group(group_id)
        _reply(event.reply_token,
               f"agent-exam joined this group.\nGroup id: {group_id}\n"
               "Set LINE_GROUP_ID to it to receive scorecards here, and add it to "
               "EXAM_LINE_ALLOWED_GROUPS to use commands.")
        return
    if not (isinstance(event, MessageEvent) and isinstance(event.message, TextMessageContent)):
        return
    words = event.message.text.strip().split()
    if not words or words[0].lower() != "exam":
        return
    allowed = _groups(cfg["LINE_ALLOWED_GROUPS"]) | _groups(os.environ.get("LINE_GROUP_ID"))
    if group_id not in allowed:
        log.info("LINE command from a group that is not allowed; ignored")
        return
    _reply(event.reply_token, command(store, words[1:], group_id, cfg))


def command(store, args: list[str], group_id: str | None, cfg: dict[str, Any]) -> str:
    """The answer to ``exam <args>`` from an allowed group."""
    if not args or args[0].lower() in ("help", "?"):
        return HELP
    verb = args[0].lower()
    if verb == "status":
        runs = store.list_runs(limit=5)
        if not runs:
            return "No runs yet."
        return "Latest runs:\n" + "\n".join(
            f"#{r.id} {r.agent} {r.version}: {r.shown_status} "
            f"({store.count_cells(r.id)}/{r.total_cells})" for r in runs)
    if verb == "scorecard" and len(args) == 2:
        from exam.notify.summary import agent_summary, summary_text
        from exam.reports import scorecard
        from exam.reports.regrade import regrade
        from exam.reports.selection import select_runs

        runs = select_runs(store, args[1])
        if not runs:
            return f"No runs of {args[1]} yet."
        latest = [r for r in runs if r.version == runs[0].version]
        report = scorecard.build(regrade(store, latest, texts=False))
        if not report["scorecards"]:
            return "Cannot show it: " + "; ".join(m["message"] for m in report["missing_banks"])
        card = report["scorecards"][0]
        text = summary_text(agent_summary(card, None))
        if cfg.get("PUBLIC_URL"):
            text += (f"\n{cfg['PUBLIC_URL'].rstrip('/')}/scorecard/"
                     f"{quote(card['agent'], safe='')}/{quote(card['version'], safe='')}")
        return text
    if verb == "run" and len(args) == 3:
        if group_id not in _groups(cfg["LINE_RUN_GROUPS"]):
            return "This group may not start runs (EXAM_LINE_RUN_GROUPS)."
        from exam.pipeline.registry import load_registry
        from exam.pipeline.runner import queue_run

        try:
            agent = load_registry(cfg["AGENTS"]).get(args[1])
            run_id = queue_run(store, agent, args[2], source="line")
        except ExamError as exc:
            return f"Cannot start the run: {exc}"
        return f"Queued run #{run_id}: {args[1]} {args[2]}. Ask 'exam status' for progress."
    return HELP
