"""The LINE group's chat: ``exam …`` commands and a join, answered in the group.

The webhook (exam/web/line.py) only carries events: it checks the signature, records each
event once and hands it here (``handle``), from its own thread or from a sweep of events an
instance left unhandled. What an event asks for, who may ask it and how the answer gets back
to the group are this module's.

Commands, from an allowed group (``EXAM_LINE_ALLOWED_GROUPS`` or ``LINE_GROUP_ID``):
``exam status``, ``exam scorecard W1``, ``exam run W1 v3`` (``EXAM_LINE_RUN_GROUPS`` only;
the event is marked handled as its run is queued, so a sweep never queues it twice).
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any
from urllib.parse import quote

from exam.errors import ExamError
from exam.notify.summary import agent_summary, summary_text
from exam.reports import kinds
from exam.reports.inputs import SERVICE
from exam.reports.selection import excluded_runs, excluded_words, select_runs

# The web app imports this module when it starts: what answers a command (the LINE SDK, the
# reports, the runner, requests) is imported when one comes. Imported here, they took
# `import exam.app` from 480 modules to 660.
log = logging.getLogger("exam.line")
NOT_KEPT = "not-kept"  # stands in, once read back, for a token the store never keeps
HELP = ("agent-exam commands:\n"
        "exam status — the latest runs\n"
        "exam scorecard W1 — the latest scorecard of W1\n"
        "exam run W1 v3 — queue a run of W1 labelled v3 (allowed groups only)")


def event_id(event: Any) -> str | None:
    return getattr(event, "webhook_event_id", None) or None


def groups(value: str | None) -> set[str]:
    return {g.strip() for g in (value or "").split(",") if g.strip()}


def _words(event: Any) -> list[str] | None:
    """The words of an ``exam …`` text message; None for any other event."""
    from linebot.v3.webhooks import MessageEvent, TextMessageContent

    if not (isinstance(event, MessageEvent) and isinstance(event.message, TextMessageContent)):
        return None
    words = event.message.text.strip().split()
    return words if words and words[0].lower() == "exam" else None


def acts_on(event: Any) -> bool:
    """The event asks something of agent-exam (a join, an ``exam …`` command): the rest of
    a group's messages are people talking, never kept."""
    from linebot.v3.webhooks import JoinEvent

    return isinstance(event, JoinEvent) or _words(event) is not None


def handle(store, event: Any, cfg: dict[str, Any]) -> None:
    """Answer one event in its group: a join says the group's id, a command from an allowed
    group gets its answer (``cfg``: the service's settings, web/line.py ``SETTINGS``)."""
    from linebot.v3.webhooks import JoinEvent

    group_id = getattr(getattr(event, "source", None), "group_id", None)
    if isinstance(event, JoinEvent) and group_id:
        store.add_group(group_id)
        reply(event,
              f"agent-exam joined this group.\nGroup id: {group_id}\n"
              "Set LINE_GROUP_ID to it to receive scorecards here and use commands "
              "(another group's commands: add its id to EXAM_LINE_ALLOWED_GROUPS).")
        return
    words = _words(event)
    if words is None:
        return
    allowed = groups(cfg["LINE_ALLOWED_GROUPS"]) | groups(os.environ.get("LINE_GROUP_ID"))
    if group_id not in allowed:
        log.info("LINE command from a group that is not allowed; ignored")
        return
    reply(event, command(store, words[1:], group_id, cfg, event_id(event)))


def reply(event: Any, text: str) -> None:
    """Answer an event: a reply with its token; without one (an event handled after its
    instance died), a push to its group, with a retry key made from the event's id so LINE
    delivers it once however often it is sent."""
    from linebot.v3.messaging import PushMessageRequest, ReplyMessageRequest

    from exam.notify.line import LineSettings, messaging_api, text_messages

    settings = LineSettings.from_env(need_group=False)
    messages = text_messages(text)[:5]
    group_id = getattr(getattr(event, "source", None), "group_id", None)
    if event.reply_token and event.reply_token != NOT_KEPT:
        messaging_api(settings).reply_message(
            ReplyMessageRequest.from_dict({"replyToken": event.reply_token, "messages": messages}),
            _request_timeout=10)
    elif group_id:
        retry_key = str(uuid.uuid5(uuid.NAMESPACE_URL, f"line-event:{event_id(event)}"))
        messaging_api(settings).push_message(
            PushMessageRequest.from_dict({"to": group_id, "messages": messages}),
            x_line_retry_key=retry_key, _request_timeout=10)


def command(store, args: list[str], group_id: str | None, cfg: dict[str, Any],
            event_id: str | None = None) -> str:
    """The answer to ``exam <args>`` from an allowed group (``event_id``: the LINE event it
    came in)."""
    if not args or args[0].lower() in ("help", "?"):
        return HELP
    verb = args[0].lower()
    if verb == "status":
        return _status(store)
    if verb == "scorecard" and len(args) == 2:
        return _scorecard(store, args[1], cfg)
    if verb == "run" and len(args) == 3:
        return _run(store, args[1], args[2], group_id, cfg, event_id)
    return HELP


def _status(store) -> str:
    runs = store.list_runs(limit=5)
    if not runs:
        return "No runs yet."
    return "Latest runs:\n" + "\n".join(
        f"#{r.id} {r.agent} {r.version}: {r.shown_status} "
        f"({store.count_cells(r.id)}/{r.total_cells})" for r in runs)


def _scorecard(store, agent: str, cfg: dict[str, Any]) -> str:
    runs = select_runs(store, agent)
    if not runs:
        gone = excluded_runs(store, agent)
        if gone:  # missing because excluded: said so, never "no runs"
            return f"Every run of {agent} is excluded: {excluded_words(gone)}"
        return f"No runs of {agent} yet."
    latest = [r for r in runs if r.version == runs[0].version]
    report = kinds.build("scorecard", store, SERVICE, latest)
    if not report["scorecards"]:
        return "Cannot show it: " + "; ".join(m["message"] for m in report["missing_banks"])
    card = report["scorecards"][0]
    text = summary_text(agent_summary(card, None))
    if cfg.get("PUBLIC_URL"):
        text += (f"\n{cfg['PUBLIC_URL'].rstrip('/')}/scorecard/"
                 f"{quote(card['agent'], safe='')}/{quote(card['version'], safe='')}")
    return text


def _run(store, agent_name: str, version: str, group_id: str | None, cfg: dict[str, Any],
         event_id: str | None) -> str:
    if group_id not in groups(cfg["LINE_RUN_GROUPS"]):
        return "This group may not start runs (EXAM_LINE_RUN_GROUPS)."
    from exam.pipeline.registry import load_registry
    from exam.pipeline.runner import queue_run

    try:
        agent = load_registry(cfg["AGENTS"]).get(agent_name)
        run_id = queue_run(store, agent, version, source="line")
    except ExamError as exc:
        return f"Cannot start the run: {exc}"
    if event_id:  # done at once, not after the reply: an instance dying while it answers
        store.line_event_handled(event_id)  # must not leave the event to queue a 2nd run
    return f"Queued run #{run_id}: {agent_name} {version}. Ask 'exam status' for progress."
