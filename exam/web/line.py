"""``POST /line/webhook``: the transport of the team's LINE group's events.

What an event asks for (``exam …`` commands, a join) and the answer are the LINE channel's
(exam/notify/line_chat.py); this module carries the events there, each once.

The signature (``X-Line-Signature``, HMAC-SHA256 of the raw body with the channel secret) is
checked before anything is read; a bad or missing one is 400 and nothing happens.
LINE gives up after about two seconds, so the answer is 200 at once and the events are
handled afterwards, each ``webhookEventId`` once (LINE redelivers; several instances share
the store). Before the 200, each event is recorded in the store (``line_events``, without its
reply token) and held by this instance for ``CLAIM_S``; it is marked handled afterwards.

An instance that dies between the 200 and the end of the handling does not lose the event:
every service process with LINE configured looks for events left unhandled on a timer (a
daemon thread per process and store, every ``LINE_SWEEP_SECONDS``, default 10, started in
the process that serves: a gunicorn worker, never a master that forks them), and so does
each webhook at most every ``SWEEP_EVERY_S``. An event whose claim has run out is claimed by
one of the lookers (the store's claim: one wins) and answered in its group by a push (the
reply token was never stored, and would have expired). Without new traffic the answer comes
at worst ``CLAIM_S`` + ``LINE_SWEEP_SECONDS`` (130 s) after the event, plus its handling.

At least once, not exactly once: an instance that dies after its answer reached LINE and
before it marked the event handled leaves it to a sweep, which answers again (a push, after
the reply). An ``exam run`` command is marked handled before its answer, so its run is never
queued twice, nor answered twice; only its answer can be lost.

An event marked handled loses its JSON at once (only its id, type and times stay), and the
timer deletes the handled events older than ``LINE_EVENTS_KEEP_DAYS`` (default 30; 0 keeps
them), at most once every ``PRUNE_EVERY_S`` per process. LINE redelivers only a delivery that
failed, soon after, so an id is needed for hours; a redelivery of a deleted id would be
handled again, the accepted price of a table that does not grow forever.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, request

from exam.notify import line_chat
from exam.notify.line_chat import NOT_KEPT
from exam.notify.line_chat import event_id as _event_id
from exam.store import Store
from exam.web.context import store

bp = Blueprint("line", __name__, url_prefix="/line")
log = logging.getLogger("exam.line")
_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="line-webhook")
CLAIM_S = 120.0  # an instance handling an event holds it this long before another may take it
SWEEP_EVERY_S = 10.0  # webhooks look for events left unhandled at most this often per process
SETTINGS = ("DB", "AGENTS", "LINE_ALLOWED_GROUPS", "LINE_RUN_GROUPS", "PUBLIC_URL",
            "LINE_EVENTS_KEEP_DAYS")
PRUNE_EVERY_S = 3600.0  # each process deletes old handled events at most this often
FORK_WAIT_S = 5.0  # how long a fork waits for this process's sweep in progress to end
_last_sweep: dict[str, float] = {}
_last_prune: dict[str, float] = {}  # by store: when this process last pruned (time.time())
_sweep_lock = threading.Lock()
# the timers of this process, by store: (settings, interval, stop, thread)
_sweepers: dict[str, tuple[dict[str, Any], float, threading.Event, threading.Thread]] = {}
_sweepers_lock = threading.Lock()

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
        cfg = {k: current_app.config[k] for k in SETTINGS}
        try:
            new = _record(events, body)
        except Exception:  # the store is unreachable: not accepted, so LINE may redeliver
            log.exception("LINE events could not be recorded; answered 503")
            return jsonify(error="the events could not be recorded; try again"), 503
        # each with the end of this instance's hold on it (None: an event without an id)
        todo = [(e, new.get(_event_id(e))) for e in events
                if _event_id(e) is None or _event_id(e) in new]
        for e in events:
            if _event_id(e) is not None and _event_id(e) not in new:
                log.info("LINE event %s already recorded (a redelivery, or another instance "
                         "has it)", _event_id(e))
        if todo:
            _executor.submit(_handle_all, todo, cfg)
        if _sweep_due(cfg["DB"]):
            _executor.submit(_sweep, cfg)
    return jsonify(ok=True), 200


def _record(events: list[Any], body: str) -> dict[str, float]:
    """Record the events that have an id (``exam.store.Store.record_line_events``): {id
    recorded now: the end of this instance's hold on it (CLAIM_S)}."""

    raw = {e.get("webhookEventId"): e for e in json.loads(body).get("events", [])
           if isinstance(e, dict)}
    records = []
    for event in events:
        event_id = _event_id(event)
        if event_id is None:
            continue
        kept = _to_keep(event, raw.get(event_id, {}))
        records.append((event_id, type(event).__name__,
                        None if kept is None else json.dumps(kept, ensure_ascii=False)))
    return store().record_line_events(records, CLAIM_S) if records else {}


def _to_keep(event: Any, raw: dict[str, Any]) -> dict[str, Any] | None:
    """What the store keeps of an event, so another instance can handle it if this one dies:
    only events that do something (a join, an ``exam …`` command), without the reply, quote
    and mark-as-read tokens (credentials for acting on the message; ``_read_back`` stands in
    for those the SDK requires). The group's other messages are people talking: their id is
    kept (each is handled once), their text never."""
    if not line_chat.acts_on(event):
        return None
    kept = {k: v for k, v in raw.items() if k != "replyToken"}
    if isinstance(kept.get("message"), dict):
        kept["message"] = {k: v for k, v in kept["message"].items()
                           if k not in ("quoteToken", "markAsReadToken")}
    return kept


def _read_back(kept: str) -> Any:
    """An event the store kept (``_to_keep``), as the SDK's model. The SDK requires some of
    the tokens the store never keeps (a join's ``replyToken``, a text message's
    ``quoteToken``): ``NOT_KEPT`` stands in for them, and is never used to answer."""
    from linebot.v3.webhooks import Event

    data = json.loads(kept)
    data.setdefault("replyToken", NOT_KEPT)
    if isinstance(data.get("message"), dict):
        data["message"].setdefault("quoteToken", NOT_KEPT)
    return Event.from_dict(data)


def _sweep_due(db: str) -> bool:
    now = time.monotonic()
    with _sweep_lock:
        if now - _last_sweep.get(db, -SWEEP_EVERY_S) < SWEEP_EVERY_S:
            return False
        _last_sweep[db] = now
        return True


def start_sweeping(app: Flask) -> bool:
    """Look for events left unhandled every ``LINE_SWEEP_SECONDS`` in this process, on a
    daemon thread, without waiting for a webhook (a quiet group sends none). Only a serving
    app with LINE configured (``LINE_CHANNEL_SECRET``; not ``TESTING``, not an interval of
    0); one thread per process and store. True when a timer runs for the app's store."""
    every = app.config["LINE_SWEEP_SECONDS"]
    if not every or app.testing or not os.environ.get("LINE_CHANNEL_SECRET"):
        return False
    _start({k: app.config[k] for k in SETTINGS}, float(every))
    return True


def stop_sweeping(wait_s: float = FORK_WAIT_S) -> list[tuple[dict[str, Any], float]]:
    """Stop this process's timers (a sweep in progress ends first, for up to ``wait_s``);
    returns what they were (settings, interval)."""
    with _sweepers_lock:
        timers = list(_sweepers.values())
        _sweepers.clear()
    for _cfg, _every, stop, _thread in timers:
        stop.set()
    for _cfg, _every, _stop, thread in timers:
        if thread is not threading.current_thread():
            thread.join(wait_s)
    return [(cfg, every) for cfg, every, _stop, _thread in timers]


def _start(cfg: dict[str, Any], every: float) -> None:
    with _sweepers_lock:
        held = _sweepers.get(cfg["DB"])
        if held is not None and held[3].is_alive():
            return
        stop = threading.Event()
        thread = threading.Thread(target=_sweep_every, args=(cfg, every, stop),
                                  name="line-sweep", daemon=True)
        _sweepers[cfg["DB"]] = (cfg, every, stop, thread)
        thread.start()


def _sweep_every(cfg: dict[str, Any], every: float, stop: threading.Event) -> None:
    """The timer: a look every ``every`` seconds until stopped. A store that cannot be reached
    is logged once, when it starts failing, not at every look."""
    failing = False
    log.info("looking for LINE events left unhandled every %g s", every)  # a sign it runs
    while not stop.wait(every):
        with _sweep_lock:  # a webhook arriving now need not look again
            _last_sweep[cfg["DB"]] = time.monotonic()
        try:
            _sweep_left(cfg)
            _prune_if_due(cfg)
            if failing:
                log.info("looking for LINE events left unhandled works again")
            failing = False
        except Exception:
            if not failing:
                log.exception("looking for LINE events left unhandled failed; trying again "
                              "every %g s", every)
            failing = True


# the timers this process stopped to fork, by store: every child it forks runs them (a
# gunicorn master under --preload forks a worker per slot, and again for each that dies)
_for_children: dict[str, tuple[dict[str, Any], float]] = {}


def _stop_before_fork() -> None:
    """A process that forks (gunicorn's master, under ``--preload``) leaves the sweeping to
    its children, and forks between two sweeps, so a child copies no lock a sweep holds."""
    for cfg, every in stop_sweeping():
        _for_children[cfg["DB"]] = (cfg, every)


def _start_in_child() -> None:
    """A forked child has none of its parent's threads: it starts the timers its parent ran
    or left to its children."""
    global _sweepers_lock, _sweep_lock
    _sweepers_lock, _sweep_lock = threading.Lock(), threading.Lock()
    _last_sweep.clear()
    timers = list(_for_children.values())
    _for_children.clear()  # this child runs them; a child of its own gets them from it
    for cfg, every in timers:
        _start(cfg, every)


os.register_at_fork(before=_stop_before_fork, after_in_child=_start_in_child)


def _handle_all(events: list[tuple[Any, float | None]], cfg: dict[str, Any]) -> None:
    """Handle each ``(event, end of this instance's hold on it)``. An event whose hold ran
    out before its turn (it waited behind others, or a slow handler) and that another
    instance claimed is left to that instance: handling it here too would answer it twice
    (and a run command would queue two runs)."""

    store = Store(cfg["DB"])
    try:
        for event, held_until in events:
            event_id = _event_id(event)
            if event_id and held_until is not None:
                try:
                    mine = store.hold_line_event(event_id, held_until, CLAIM_S) is not None
                except Exception:  # left pending: a sweep takes it once the hold runs out
                    log.exception("LINE event %s could not be held; left for later", event_id)
                    continue
                if not mine:
                    log.info("LINE event %s was taken over by another instance (its hold ran "
                             "out while it waited); left to it", event_id)
                    continue
            try:
                line_chat.handle(store, event, cfg)
            except Exception:
                log.exception("LINE event %s failed", _event_id(event) or "?")
            finally:
                if _event_id(event):
                    store.line_event_handled(_event_id(event))
    finally:
        store.close()


def _sweep(cfg: dict[str, Any]) -> None:
    """A webhook's look for events left unhandled (on its pool): trouble is logged."""
    try:
        _sweep_left(cfg)
    except Exception:
        log.exception("looking for LINE events left unhandled failed")
    _prune_if_due(cfg)


def _sweep_left(cfg: dict[str, Any]) -> None:
    """Handle the events another instance recorded and never finished (it died after the
    200); a store that cannot be reached raises."""

    store = Store(cfg["DB"])
    try:
        left = store.claim_unhandled_line_events(CLAIM_S)
    finally:
        store.close()
    events = []
    for event_id, kept, held_until in left:
        try:
            events.append((_read_back(kept), held_until))
            log.warning("LINE event %s was left unhandled (its instance stopped); handling it "
                        "now, answering in its group", event_id)
        except Exception:
            log.exception("LINE event %s left unhandled cannot be read back; dropped", event_id)
            _mark_handled(cfg["DB"], event_id)
    if events:
        _handle_all(events, cfg)


def _prune_if_due(cfg: dict[str, Any], now: float | None = None) -> int | None:
    """Delete the events handled more than ``LINE_EVENTS_KEEP_DAYS`` days before ``now``
    (default: the time; 0 days: none, though the JSON an older version kept is still dropped),
    if this process has not tried in the last ``PRUNE_EVERY_S``: how many, or None when not
    due, without the setting, or failed. Trouble is logged, and tried again an hour later, not
    at the next look."""

    days = cfg.get("LINE_EVENTS_KEEP_DAYS")
    if days is None:
        return None
    now = time.time() if now is None else now
    with _sweep_lock:
        last = _last_prune.get(cfg["DB"])
        if last is not None and 0 <= now - last < PRUNE_EVERY_S:  # a clock set back: due
            return None
        _last_prune[cfg["DB"]] = now
    try:
        store = Store(cfg["DB"])
        try:
            # 0 days: nothing deleted (the JSON an older version kept is still dropped)
            deleted = store.prune_line_events(now - days * 86400.0 if days else None)
        finally:
            store.close()
    except Exception:
        log.exception("deleting LINE events handled more than %d days ago failed; trying "
                      "again in %g s", days, PRUNE_EVERY_S)
        return None
    if deleted:
        log.info("deleted %d LINE event(s) handled more than %d day(s) ago", deleted, days)
    return deleted


def _mark_handled(db: str, event_id: str) -> None:
    store = Store(db)
    try:
        store.line_event_handled(event_id)
    finally:
        store.close()
