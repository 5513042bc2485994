"""The LINE webhook: signed bodies, answered at once, handled afterwards, each event once."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from exam.store import Store
from exam.web.app import create_app
from tests.fakes.line_api import FakeLineApi

SECRET = "channel-secret-for-tests"
GROUP = "C0123456789abcdef0123456789abcdef"


@pytest.fixture
def fake_line(monkeypatch):
    with FakeLineApi() as fake:
        monkeypatch.setenv("LINE_CHANNEL_SECRET", SECRET)
        monkeypatch.setenv("LINE_CHANNEL_ACCESS_TOKEN", "line-token")
        monkeypatch.setenv("LINE_API_HOST", fake.host)
        yield fake


@pytest.fixture
def settle(monkeypatch):
    """Webhook events are handled on a pool after the 200; ``settle()`` waits until every
    event posted so far has been handled, so "nothing happened" is checked after the fact."""
    from concurrent.futures import ThreadPoolExecutor

    import exam.web.line as line_bp

    pool = [ThreadPoolExecutor(max_workers=2, thread_name_prefix="line-webhook-test")]
    monkeypatch.setattr(line_bp, "_executor", pool[0])

    def wait() -> None:
        pool[0].shutdown(wait=True)
        pool[0] = ThreadPoolExecutor(max_workers=2, thread_name_prefix="line-webhook-test")
        monkeypatch.setattr(line_bp, "_executor", pool[0])

    yield wait
    pool[0].shutdown(wait=True)


@pytest.fixture
def line_app(tmp_path, registry_path, fake_line):
    return create_app({"API_TOKEN": "t", "DB": str(tmp_path / "exam.db"),
                       "AGENTS": str(registry_path), "LINE_ALLOWED_GROUPS": GROUP,
                       "LINE_RUN_GROUPS": GROUP,
                       "LINE_SWEEP_SECONDS": 0})  # no timer: these tests decide when to sweep


def sign(body: bytes, secret: str = SECRET) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def event(kind: str, event_id: str, text: str | None = None, group: str = GROUP) -> dict:
    e = {"type": kind, "mode": "active", "timestamp": 1764400000000,
         "source": {"type": "group", "groupId": group, "userId": "U1234"},
         "webhookEventId": event_id, "deliveryContext": {"isRedelivery": False},
         "replyToken": f"reply-{event_id}"}
    if text is not None:
        e["message"] = {"type": "text", "id": "468789577898262530", "text": text,
                        "quoteToken": "q-token", "markAsReadToken": "m-token"}
    return e


def as_kept(raw: dict) -> str:
    """An event as the webhook records it for another instance (``line._to_keep``): what a
    sweep reads back."""
    from linebot.v3.webhooks import Event

    from exam.web.line import _to_keep

    kept = _to_keep(Event.from_dict(raw), raw)
    assert kept is not None, raw
    return json.dumps(kept)


def post(client, events: list[dict], signature: str | None = "auto", body: bytes | None = None):
    raw = body if body is not None else json.dumps(
        {"destination": "Uxxxxxxxx", "events": events}).encode()
    headers = {"Content-Type": "application/json"}
    if signature == "auto":
        headers["X-Line-Signature"] = sign(raw)
    elif signature:
        headers["X-Line-Signature"] = signature
    return client.post("/line/webhook", data=raw, headers=headers)


def replies(fake, n: int = 1, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(fake.replies()) < n:
        time.sleep(0.02)
    return fake.replies()


def reply_text(req: dict) -> str:
    return "\n".join(m["text"] for m in req["body"]["messages"])


def test_verify_button_empty_events_is_200(line_app, fake_line):
    assert post(line_app.test_client(), []).status_code == 200


def test_bad_signature_is_400_and_nothing_happens(line_app, fake_line, settle):
    resp = post(line_app.test_client(), [event("join", "01J0BAD")], signature=sign(b"x"))
    assert resp.status_code == 400
    settle()
    assert fake_line.requests == []
    assert Store(line_app.config["DB"]).line_event_state("01J0BAD") is None


def test_missing_signature_is_400(line_app, fake_line, settle):
    assert post(line_app.test_client(), [event("join", "01J0X")], signature=None).status_code == 400
    settle()
    assert fake_line.requests == []
    assert Store(line_app.config["DB"]).line_event_state("01J0X") is None  # never recorded


def test_body_signed_with_another_secret_is_400(line_app, fake_line):
    raw = json.dumps({"events": [event("join", "01J0Y")]}).encode()
    resp = post(line_app.test_client(), [], signature=sign(raw, "other"), body=raw)
    assert resp.status_code == 400


def test_join_records_the_group_and_replies_with_its_id(line_app, fake_line):
    assert post(line_app.test_client(), [event("join", "01J1JOIN")]).status_code == 200
    (req,) = replies(fake_line)
    assert req["body"]["replyToken"] == "reply-01J1JOIN"
    assert f"Group id: {GROUP}" in reply_text(req)
    import sqlite3

    with sqlite3.connect(line_app.config["DB"]) as db:
        assert db.execute("SELECT group_id FROM line_groups").fetchall() == [(GROUP,)]


def test_status_command(line_app, fake_line):
    post(line_app.test_client(), [event("message", "01J2STAT", "exam status")])
    (req,) = replies(fake_line)
    assert reply_text(req) == "No runs yet."


def test_run_command_queues_through_the_api_path(line_app, fake_line):
    post(line_app.test_client(), [event("message", "01J3RUN", "exam run T v3")])
    (req,) = replies(fake_line)
    assert "Queued run #1: T v3" in reply_text(req)
    run = Store(line_app.config["DB"]).get_run(1)
    assert (run.agent, run.version, run.status, run.source) == ("T", "v3", "queued", "line")


def test_a_run_commands_event_is_done_before_it_is_answered(line_app, fake_line, settle,
                                                            monkeypatch):
    """An instance that dies while answering "exam run" must not leave the event to a sweep
    that would queue the run again: the event is marked handled as the run is queued."""
    from exam.notify import line_chat

    db = line_app.config["DB"]
    states = []
    real = line_chat.reply
    monkeypatch.setattr(line_chat, "reply", lambda event, text: (
        states.append(Store(db).line_event_state(event.webhook_event_id)), real(event, text)))
    post(line_app.test_client(), [event("message", "01J3RUN2", "exam run T v3"),
                                  event("message", "01J3STAT", "exam status")])
    settle()
    assert states == ["handled", "pending"]  # a status answer is safe to give again
    assert [r.id for r in Store(db).list_runs()] == [1]


def test_run_command_from_a_group_not_allowed_to_run(line_app, fake_line):
    line_app.config["LINE_RUN_GROUPS"] = ""
    post(line_app.test_client(), [event("message", "01J4NO", "exam run T v3")])
    (req,) = replies(fake_line)
    assert "may not start runs" in reply_text(req)


def test_commands_from_unknown_groups_are_ignored(line_app, fake_line, settle):
    post(line_app.test_client(), [event("message", "01J5X", "exam status", group="Cstranger")])
    settle()
    assert fake_line.requests == []
    # it was handled (recorded as seen), and ignored
    assert Store(line_app.config["DB"]).line_event_state("01J5X") == "handled"


def test_commands_from_the_group_of_line_group_id_are_answered_without_the_allowed_list(
        line_app, fake_line, monkeypatch):
    # line.md said the webhook did not read LINE_GROUP_ID; it answers that group's commands
    line_app.config["LINE_ALLOWED_GROUPS"] = ""
    monkeypatch.setenv("LINE_GROUP_ID", GROUP)
    post(line_app.test_client(), [event("message", "01J5GID", "exam status")])
    (req,) = replies(fake_line)
    assert reply_text(req) == "No runs yet."


def test_scorecard_command(line_app, fake_line, fake_agent):
    from exam.pipeline.registry import load_registry
    from exam.pipeline.runner import create_run, execute, job_for

    store = Store(line_app.config["DB"])
    agent = load_registry(line_app.config["AGENTS"]).get("T")
    execute(store, [job_for(store, create_run(store, agent, "v1"), agent)])
    post(line_app.test_client(), [event("message", "01J6SC", "exam scorecard T")])
    (req,) = replies(fake_line)
    assert reply_text(req).startswith("T v1: pass 2 · needs_human 0 · fail 0 · not answered 1")


def test_redelivered_event_is_handled_once(line_app, fake_line, settle):
    client = line_app.test_client()
    e = event("message", "01J7SAME", "exam run T v9")
    post(client, [e])
    settle()
    assert len(replies(fake_line)) == 1
    again = {**e, "deliveryContext": {"isRedelivery": True}}
    assert post(client, [again]).status_code == 200
    settle()
    assert len(fake_line.replies()) == 1
    assert len(Store(line_app.config["DB"]).list_runs()) == 1


def test_webhook_without_channel_secret_is_503(tmp_path, monkeypatch):
    monkeypatch.delenv("LINE_CHANNEL_SECRET", raising=False)
    app = create_app({"API_TOKEN": "t", "DB": str(tmp_path / "x.db")})
    assert post(app.test_client(), []).status_code == 503


def left_by_a_dead_instance(db: str, event_id: str, text: str, claim_s: float = 0.0) -> None:
    """What an instance leaves when it dies after answering LINE's 200 but before handling the
    event: the event recorded (without its reply token), held for ``claim_s``, not handled."""
    store = Store(db)
    try:
        assert set(store.record_line_events(
            [(event_id, "MessageEvent", as_kept(event("message", event_id, text)))],
            claim_s)) == {event_id}
    finally:
        store.close()


def test_an_event_left_unhandled_by_a_dead_instance_is_answered_in_its_group(
        line_app, fake_line, settle):
    db = line_app.config["DB"]
    left_by_a_dead_instance(db, "01J9DEAD", "exam status")
    assert post(line_app.test_client(), [event("message", "01J9NEXT", "hello")]).status_code == 200
    settle()
    (push,) = fake_line.pushes()
    assert push["body"]["to"] == GROUP
    assert reply_text(push) == "No runs yet."
    assert push["headers"].get("X-Line-Retry-Key")  # LINE delivers it once, however often sent
    assert Store(db).line_event_state("01J9DEAD") == "handled"
    assert fake_line.replies() == []  # "hello" is not a command: nothing to answer

    import exam.web.line as line_bp

    line_bp._last_sweep.clear()  # the next webhook looks again: nothing is left
    post(line_app.test_client(), [event("message", "01J9NEXT2", "hello")])
    settle()
    assert len(fake_line.pushes()) == 1


def test_an_event_still_held_by_its_instance_is_left_to_it(line_app, fake_line, settle):
    db = line_app.config["DB"]
    left_by_a_dead_instance(db, "01J9BUSY", "exam status", claim_s=600)
    post(line_app.test_client(), [event("message", "01J9OTHER", "hello")])
    settle()
    assert fake_line.requests == []
    assert Store(db).line_event_state("01J9BUSY") == "pending"


def kept_events(db: str) -> dict[str, str | None]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT webhook_event_id, event FROM line_events").fetchall())


class Held:
    """The instance's handlers, busy: what is submitted waits in ``queued``."""

    def __init__(self) -> None:
        self.queued: list = []

    def submit(self, fn, *args):
        self.queued.append((fn, args))


def test_the_recorded_events_keep_no_tokens_and_no_chat(line_app, fake_line, monkeypatch):
    import exam.web.line as line_bp

    held = Held()
    monkeypatch.setattr(line_bp, "_executor", held)  # what is kept before the handling
    post(line_app.test_client(), [event("join", "01J9JOIN"),
                                  event("message", "01J9CMD", "exam status"),
                                  event("message", "01J9CHAT", "see you at lunch")])
    kept = kept_events(line_app.config["DB"])
    assert json.loads(kept["01J9JOIN"])["webhookEventId"] == "01J9JOIN"
    assert json.loads(kept["01J9CMD"])["message"]["text"] == "exam status"
    for text in kept.values():  # the reply and quote tokens are credentials for answering
        assert text is None or not any(t in text for t in ("reply-01J9", "replyToken",
                                                           "q-token", "quoteToken"))
    assert kept["01J9CHAT"] is None  # people talking: handled once, their words not kept
    for fn, args in held.queued:
        fn(*args)
    assert Store(line_app.config["DB"]).line_event_state("01J9CHAT") == "handled"


def test_a_handled_event_keeps_its_id_and_not_its_json(line_app, fake_line, settle):
    """Once handled, an event's JSON (the command's words, user ids) is dropped: its id is
    all that de-duplicating a redelivery needs."""
    client = line_app.test_client()
    e = event("message", "01J9DONE", "exam status")
    post(client, [event("join", "01J9JOINED"), e])
    settle()
    assert kept_events(line_app.config["DB"]) == {"01J9JOINED": None, "01J9DONE": None}
    post(client, [{**e, "deliveryContext": {"isRedelivery": True}}])
    settle()
    assert len(replies(fake_line, 2)) == 2  # the join's and the command's, not the redelivery


def test_events_that_cannot_be_recorded_are_refused_so_line_may_redeliver(
        line_app, fake_line, settle, monkeypatch):
    from exam.errors import StoreError

    def unreachable(*_a, **_k):
        raise StoreError("the store is unreachable")

    monkeypatch.setattr(Store, "record_line_events", unreachable)
    resp = post(line_app.test_client(), [event("message", "01J9DOWN", "exam status")])
    settle()
    assert resp.status_code == 503
    assert fake_line.requests == []


def test_an_event_taken_over_while_it_waited_is_not_handled_twice(
        line_app, fake_line, monkeypatch):
    """An event waits in the instance's queue (or behind a slow handler) past its hold;
    another instance's sweep takes it and answers it. The first instance, reaching it at
    last, must leave it: handling it too would answer twice, and queue a run twice."""
    import exam.web.line as line_bp

    queued = []

    class Held:  # the instance's handlers, busy: what is submitted waits
        def submit(self, fn, *args):
            queued.append((fn, args))

    monkeypatch.setattr(line_bp, "_executor", Held())
    monkeypatch.setattr(line_bp, "CLAIM_S", 0.0)  # the hold has run out by the time it runs
    db = line_app.config["DB"]
    assert post(line_app.test_client(),
                [event("message", "01JAWAIT", "exam run T v5")]).status_code == 200
    other = Store(db)  # another instance's sweep
    (taken,) = other.claim_unhandled_line_events(600)
    assert taken[0] == "01JAWAIT"
    other.close()
    for fn, args in queued:
        if fn is line_bp._handle_all:  # (not the sweep this instance also asked for)
            fn(*args)
    assert fake_line.requests == []  # the other instance answers it
    assert Store(db).list_runs() == []
    assert Store(db).line_event_state("01JAWAIT") == "pending"  # the other's to finish


def test_what_the_store_keeps_of_an_event_reads_back_without_any_token():
    """A join and an ``exam`` command are kept for another instance without their reply,
    quote and mark-as-read tokens; read back, they are the same events, and the stand-in for
    a token the SDK requires is never used to answer (the answer is a push)."""
    from linebot.v3.webhooks import JoinEvent, MessageEvent

    import exam.web.line as line_bp

    for raw, kind in ((event("join", "01KEEPJ"), JoinEvent),
                      (event("message", "01KEEPM", "exam run W1 v3"), MessageEvent)):
        kept = as_kept(raw)
        assert not any(token in kept for token in ("reply-", "q-token", "m-token"))
        back = line_bp._read_back(kept)
        assert isinstance(back, kind) and back.webhook_event_id == raw["webhookEventId"]
        assert back.source.group_id == GROUP and back.reply_token == line_bp.NOT_KEPT
        if kind is MessageEvent:
            assert back.message.text == "exam run W1 v3"
