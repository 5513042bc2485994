"""A notification's Scorecard share link is made as it is sent, never kept: the store's
`notifications` rows (and a dry run's file) hold no token the service would accept, in any
encoding, while the message that reaches LINE (the real SDK, pointed at a fake LINE API)
opens its scorecard in the service. On both store backends."""

from __future__ import annotations

import base64
import json
import time
from contextlib import contextmanager
from dataclasses import replace
from urllib.parse import quote, urlsplit

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from exam import notify
from exam.cli.main import main
from exam.notify import line
from exam.notify.line import CHANNEL, LineSettings
from exam.notify.summary import (
    LINK_MARK,
    RESEND_LEFT_S,
    SHARE_DAYS,
    Summary,
    live_link,
    page_link,
)
from exam.share import make_link, read_token, secret_key
from exam.store import Store
from tests.backends import STORE_BACKENDS
from tests.exam.helpers import accepted_tokens, demo_store
from tests.exam.test_notify_webhook import Receiver
from tests.exam.web.conftest import w1_app

ADMIN = "admin-token-n0t1fy"  # the service's: its share-link key is derived from it
PUBLIC_URL = "https://exam.example.com"
# what a sender's shell has: the same EXAM_API_TOKEN as the service, so the same key
ENV = {"LINE_CHANNEL_ACCESS_TOKEN": "line-token-5ecret", "LINE_GROUP_ID": "Cgroup123",
       "EXAM_PUBLIC_URL": PUBLIC_URL, "EXAM_API_TOKEN": ADMIN}
KEY = secret_key(None, ADMIN)
pytestmark = pytest.mark.usefixtures("notifications_made_together")  # tests/exam/conftest.py


DAY = 86400


def no_sleep(_s):
    return None


@contextmanager
def clock(monkeypatch, moment: float):
    """``time.time()`` reads ``moment`` inside the block: a send made later, without waiting."""
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: moment)
        yield


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def demo_db(request, tmp_path_factory):
    with demo_store(request.param, tmp_path_factory.mktemp("links")) as db:
        yield db


@pytest.fixture
def store(demo_db):
    s = Store(demo_db)
    yield s
    s.close()


@pytest.fixture
def settings(fake_line):
    return LineSettings.from_env({**ENV, "LINE_API_HOST": fake_line.host})


def w1_v2(store: Store) -> int:
    return store.list_runs("W1", "v2")[0].id


def stored_notifications(store: Store) -> list[dict]:
    """Every column of every notifications row, as the store holds it (the text, undecoded)."""
    from exam.db.schema import notifications

    with store.tx() as db:
        return [dict(r._mapping) for r in db.execute(select(notifications))]


def scorecard_uri(push: dict) -> str:
    footer = push["body"]["messages"][0]["contents"]["contents"][0]["footer"]
    return footer["contents"][0]["action"]["uri"]


def opens_the_scorecard(demo_db, tmp_path, uri: str) -> bool:
    """Whether ``uri`` opens W1 v2's scorecard in the service (a phone: no login)."""
    client = w1_app(demo_db, tmp_path, ADMIN).test_client()
    assert uri.startswith(f"{PUBLIC_URL}/share/")
    opened = client.get(urlsplit(uri).path)
    if opened.status_code != 302 or opened.headers["Location"] != "/scorecard/W1/v2":
        return False
    page = client.get("/scorecard/W1/v2")
    return page.status_code == 200 and 'id="role">shared<' in page.text and "W1" in page.text


# -- the tests ------------------------------------------------------------------------------

def test_the_scanner_finds_a_token_written_any_of_the_ways_it_looks_for():
    link = make_link(KEY, PUBLIC_URL, "/scorecard/W1/v2")
    text = json.dumps({"uri": link})
    for form in (text, quote(text, safe=""), base64.b64encode(text.encode()).decode(),
                 base64.urlsafe_b64encode(quote(text).encode()).decode()):
        assert accepted_tokens(form, KEY) == [link.rsplit("/", 1)[1]]
    assert accepted_tokens(text, "another key") == []


def test_the_store_keeps_no_share_link_of_a_notification(store, settings, fake_line):
    results = notify.notify_runs(store, CHANNEL, settings, [w1_v2(store)], sleep=no_sleep)
    assert [r["status"] for r in results] == ["delivered"]
    (push,) = fake_line.pushes()
    assert accepted_tokens(json.dumps(push["body"]), KEY)  # the scan can see what was sent
    rows = stored_notifications(store)
    assert rows
    for row in rows:
        for column, value in row.items():
            assert accepted_tokens(str(value), KEY) == [], column
    # what stands for the link: the page it opens, made a link as it is sent
    (sent,) = [r for r in rows if r["id"] == results[0]["id"]]
    assert f'"{LINK_MARK}{PUBLIC_URL}#/scorecard/W1/v2"' in sent["payload"]


def test_the_message_that_reaches_line_opens_its_scorecard(store, settings, fake_line, demo_db,
                                                          tmp_path):
    notify.notify_runs(store, CHANNEL, settings, [w1_v2(store)], sleep=no_sleep)
    (push,) = fake_line.pushes()
    uri = scorecard_uri(push)
    assert read_token(KEY, uri.rsplit("/", 1)[1]).path == "/scorecard/W1/v2"
    assert opens_the_scorecard(demo_db, tmp_path, uri)


def test_a_retried_send_pushes_the_same_body_under_the_same_retry_key(store, settings,
                                                                      fake_line, demo_db,
                                                                      tmp_path):
    fake_line.answer(500, 200)
    (result,) = notify.notify_runs(store, CHANNEL, settings, [w1_v2(store)], sleep=no_sleep)
    assert result["status"] == "delivered"
    first, second = fake_line.pushes()
    assert first["headers"]["X-Line-Retry-Key"] == second["headers"]["X-Line-Retry-Key"] == \
        result["retry_key"]
    assert first["body"] == second["body"]  # the link was made once, for the whole send
    assert opens_the_scorecard(demo_db, tmp_path, scorecard_uri(second))


def test_a_resend_pushes_the_same_body_under_the_same_retry_key(store, settings, fake_line,
                                                               demo_db, tmp_path,
                                                               monkeypatch):
    """A push refused, resent an hour later: the same link (made as of the notification, not
    of the send), so the same body, and it opens the scorecard."""
    fake_line.answer((400, {}, {"message": "The request body has 1 error(s)"}))
    (failed,) = notify.notify_runs(store, CHANNEL, settings, [w1_v2(store)], sleep=no_sleep)
    assert failed["status"] == "failed"
    with clock(monkeypatch, time.time() + 3600):
        (again,) = notify.deliver(store, CHANNEL, settings, [failed["id"]], sleep=no_sleep)
        assert again["status"] == "delivered"
        first, second = fake_line.pushes()
        assert first["headers"]["X-Line-Retry-Key"] == second["headers"]["X-Line-Retry-Key"] \
            == failed["retry_key"]
        assert first["body"] == second["body"]
        assert opens_the_scorecard(demo_db, tmp_path, scorecard_uri(second))


# -- every send of a notification carries the same link -------------------------------------

@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def webhook(receiver: Receiver):
    channel = notify.get("webhook")
    return channel, channel.settings({**ENV, "EXAM_WEBHOOK_URL": receiver.url})


def posted_link(post: dict) -> str:
    (summary,) = post["body"]["summaries"]
    return summary["scorecard_link"]


def assert_no_link_stored(store: Store) -> None:
    for row in stored_notifications(store):
        for column, value in row.items():
            assert accepted_tokens(str(value), KEY) == [], column


def test_a_resent_webhook_notification_posts_the_same_bytes_under_the_same_key(
        store, receiver, demo_db, tmp_path, monkeypatch):
    """A send refused, resent an hour later: the same body byte for byte under the same
    Idempotency-Key (a receiver keeping the IETF draft answers a key reused with another
    body 422), its link opens the scorecard, and the store keeps no link."""
    channel, settings = webhook(receiver)
    receiver.script = [(400, {}, {"error": "not now"})]
    (failed,) = notify.notify_runs(store, channel, settings, [w1_v2(store)], sleep=no_sleep)
    assert failed["status"] == "failed"
    with clock(monkeypatch, time.time() + 3600):
        (again,) = notify.deliver(store, channel, settings, [failed["id"]], sleep=no_sleep)
        assert again["status"] == "delivered"
        first, second = receiver.posts
        assert first["headers"]["Idempotency-Key"] == second["headers"]["Idempotency-Key"] \
            == failed["retry_key"]
        assert first["raw"] == second["raw"]
        assert opens_the_scorecard(demo_db, tmp_path, posted_link(second))
    assert_no_link_stored(store)


def test_a_resend_in_the_links_last_day_carries_a_new_link_the_same_on_every_later_send(
        store, receiver, demo_db, tmp_path, monkeypatch):
    """The first send's link works 7 days from when the notification was made: a resend in
    its last day (or later) carries a new link, made as that day began, with a week to go
    (another body), and the sends after it, until its own last day, that same link."""
    channel, settings = webhook(receiver)
    receiver.script = [(400, {}, {"error": "not now"})] * 2
    (failed,) = notify.notify_runs(store, channel, settings, [w1_v2(store)], sleep=no_sleep)
    (row,) = store.notifications(ids=[failed["id"]])
    renewed = int(row["created_at"] + SHARE_DAYS * DAY - RESEND_LEFT_S)  # its last day began
    with clock(monkeypatch, renewed + 3600):
        (again,) = notify.deliver(store, channel, settings, [failed["id"]], sleep=no_sleep)
        assert again["status"] == "failed"
        first = read_token(KEY, posted_link(receiver.posts[0]).rsplit("/", 1)[1])
        assert first.until - time.time() < RESEND_LEFT_S  # still working, not for long
    with clock(monkeypatch, renewed + 3 * DAY):
        (last,) = notify.deliver(store, channel, settings, [failed["id"]], sleep=no_sleep)
        assert last["status"] == "delivered"
        first, second, third = receiver.posts
        assert second["raw"] == third["raw"] != first["raw"]
        assert len({p["headers"]["Idempotency-Key"] for p in receiver.posts}) == 1
        link = read_token(KEY, posted_link(third).rsplit("/", 1)[1])
        assert (link.made, link.until) == (renewed, renewed + SHARE_DAYS * DAY)
        assert opens_the_scorecard(demo_db, tmp_path, posted_link(third))
    assert_no_link_stored(store)


def test_a_link_revoked_between_sends_is_resent_and_stays_revoked(store, receiver, demo_db,
                                                                   tmp_path, monkeypatch):
    channel, settings = webhook(receiver)
    receiver.script = [(400, {}, {"error": "not now"})]
    (failed,) = notify.notify_runs(store, channel, settings, [w1_v2(store)], sleep=no_sleep)
    link = read_token(KEY, posted_link(receiver.posts[0]).rsplit("/", 1)[1])
    store.revoke_share_link(link.id, link.page, link.until, "sent to the wrong team")
    with clock(monkeypatch, time.time() + 3600):
        (again,) = notify.deliver(store, channel, settings, [failed["id"]], sleep=no_sleep)
        assert again["status"] == "delivered"
        first, second = receiver.posts
        assert first["raw"] == second["raw"]
        assert not opens_the_scorecard(demo_db, tmp_path, posted_link(second))


STEP = int(SHARE_DAYS * DAY - RESEND_LEFT_S)  # a link's time, until its last day begins
CREATED = 1_700_000_000.25


@pytest.mark.parametrize("now,made", [
    (CREATED, CREATED),  # the first send
    (CREATED + 3600, CREATED),  # a resend: the same link
    (int(CREATED) + STEP - 0.001, CREATED),  # the first link, a day and a moment to go
    (int(CREATED) + STEP, int(CREATED) + STEP),  # its last day: a link made as it began
    (int(CREATED) + SHARE_DAYS * DAY + 5, int(CREATED) + STEP),  # ...the same after it
    (int(CREATED) + 2 * STEP - 1, int(CREATED) + STEP),
    (int(CREATED) + 2 * STEP, int(CREATED) + 2 * STEP),
    (int(CREATED) + 30 * STEP + 5, int(CREATED) + 30 * STEP),
])
def test_a_notifications_link_is_made_as_of_the_notification_until_its_last_day(now, made):
    from exam.notify.summary import link_made

    assert link_made(CREATED, now) == made
    link = read_token(KEY, make_link(KEY, PUBLIC_URL, "/scorecard/W1/v2", SHARE_DAYS,
                                     now=made).rsplit("/", 1)[1], now=now)  # not expired
    assert link.made <= now
    assert link.until - now >= RESEND_LEFT_S - 1  # a day to go, to the second


def quoting_the_push_back(body: dict) -> tuple[int, dict, dict]:
    """LINE refusing a push with messages that quote the Scorecard button's URI back, as it
    is, %-encoded and within base64 (its "property" too, as a validator may)."""
    uri = scorecard_uri({"body": body})
    return 400, {}, {"message": f"The request body has 3 error(s): {uri}", "details": [
        {"message": f"invalid uri {quote(uri, safe='')}", "property": f"uri={uri}"},
        {"message": "the button: " + base64.b64encode(json.dumps(body["messages"][0]).encode())
         .decode(), "property": "messages[0]"}]}


def test_a_refusal_quoting_the_share_link_keeps_it_out_of_the_store_and_the_output(
        store, fake_line, demo_db):
    """LINE's error message and details go into the failure's message, which is printed and
    stored (``last_error``): the share link they quote back is redacted from both, as the
    webhook's is, so the store still holds no link that opens a page."""
    fake_line.answer(quoting_the_push_back)
    result = CliRunner().invoke(main, ["notify", "line", "--run", str(w1_v2(store)),
                                       "--db", demo_db],
                                env={**ENV, "LINE_API_HOST": fake_line.host})
    assert result.exit_code == 1, result.output
    (push,) = fake_line.pushes()
    assert accepted_tokens(json.dumps(push["body"]), KEY)  # the scan can see what was sent
    assert "LINE answered 400: The request body has 3 error(s): " \
        f"{PUBLIC_URL}/share/[redacted]" in result.output
    assert accepted_tokens(result.output, KEY) == []
    (failed,) = [r for r in stored_notifications(store) if r["status"] == "failed"]
    assert f"{PUBLIC_URL}/share/[redacted]" in failed["last_error"]
    for row in stored_notifications(store):
        for column, value in row.items():
            assert accepted_tokens(str(value), KEY) == [], column


def test_a_notification_queued_by_an_older_version_is_sent_as_it_was_stored(
        store, settings, fake_line, demo_db, tmp_path):
    """Before share links were made at send time, the payload kept the link itself: such a
    row is sent as it is, its link working until its own expiry."""
    old_link = make_link(KEY, PUBLIC_URL, "/scorecard/W1/v2", 7.0)
    payload = [{"type": "flex", "altText": "agent-exam\nW1 v2", "contents": {
        "type": "carousel", "contents": [{"type": "bubble", "body": {
            "type": "box", "layout": "vertical", "contents": [{"type": "text", "text": "W1"}]},
            "footer": {"type": "box", "layout": "vertical", "contents": [
                {"type": "button", "action": {"type": "uri", "label": "Scorecard",
                                              "uri": old_link}}]}}]}}]
    nid = store.add_notification(batch="old", channel="line", target="Cgroup123",
                                 run_ids=[w1_v2(store)], retry_key="old-key-1", payload=payload)
    (sent,) = notify.deliver(store, CHANNEL, settings, [nid], sleep=no_sleep)
    assert sent["status"] == "delivered"
    (push,) = fake_line.pushes()
    assert push["body"]["messages"] == payload
    assert push["headers"]["X-Line-Retry-Key"] == "old-key-1"
    assert opens_the_scorecard(demo_db, tmp_path, scorecard_uri(push))


def test_a_dry_run_writes_no_share_link(store, demo_db, tmp_path):
    out = tmp_path / "results" / "line-preview.json"
    result = CliRunner().invoke(main, ["notify", "line", "--run", str(w1_v2(store)), "--dry-run",
                                       "--out", str(out), "--db", demo_db],
                                env={"EXAM_PUBLIC_URL": PUBLIC_URL, "EXAM_API_TOKEN": ADMIN})
    assert result.exit_code == 0, result.output
    written = out.read_text(encoding="utf-8")
    assert accepted_tokens(written, KEY) == [] and accepted_tokens(result.output, KEY) == []
    assert LINK_MARK not in written  # the Flex simulator takes only real URIs
    uris = {scorecard_uri({"body": {"messages": [m]}}) for m in json.loads(written)}
    assert f"{PUBLIC_URL}/scorecard/W1/v2" in uris
    assert "a send carries a share link made as it is sent, working 7 days" in result.output


# -- fitting LINE's limits to the link that is sent -----------------------------------------

def _regressed(names: list[str]) -> Summary:
    cost = {k: {"p50": 2.0, "p95": 3.0, "total": 10.0}
            for k in ("attempts", "model_calls", "tokens", "latency_ms")}
    return Summary(agent="W1", version="v2", passed=1, needs_human=0, fail=len(names),
                   pass_rate=0.5, not_answered=0, cost=cost, previous="v1",
                   regressions=tuple(names))


@pytest.mark.parametrize("path", ["/scorecard/W1/v2", "/scorecard/" + "a" * 64 + "/" + "v" * 64,
                                  "/scorecard/" + quote("客服機器人", safe="") + "/" +
                                  quote("新版", safe=""), "/scorecard/é/v2"])
def test_no_share_link_is_longer_than_the_longest_link_a_message_is_fitted_to(path):
    """Whatever the key, the expiry and the moment (to the millisecond; compressed or not),
    a link is never longer than ``longest_link``; one that does not compress is that long
    at times (the bound is not slack where it matters)."""
    import random

    from exam.share import longest_link, make_token

    rng = random.Random(7)
    lengths = [len(f"{PUBLIC_URL}/share/" + make_token(
        f"key-{i}", path, rng.choice([7.0, 0.5, 30.0, 1e-5]),
        now=rng.choice([rng.uniform(0, 9_000_000_000), round(rng.uniform(1.7e9, 2e9)),
                        1_999_999_999.999])))
        for i in range(3000)]
    assert max(lengths) <= longest_link(PUBLIC_URL, path)
    if path == "/scorecard/W1/v2":
        assert max(lengths) == longest_link(PUBLIC_URL, path)


def test_a_bubble_is_fitted_to_the_longest_link_it_is_sent_with(monkeypatch):
    """A bubble within 30 KB with the marker, over it once the marker is a share link (which
    is longer): fitted on the longest link, it lists one regression fewer, and what is sent
    is within the limit."""
    monkeypatch.setattr(line, "SHOW_REGRESSIONS", 100)
    marker = f"{LINK_MARK}{PUBLIC_URL}#/scorecard/W1/v2"
    names = ["R" * 1900 for _ in range(15)]
    # the last name's length puts the bubble, with the marker, 8 bytes under the limit
    short = line._size(line.bubble(_regressed(names), marker, 100))
    names[-1] = "R" * (1900 + line.MAX_BUBBLE_BYTES - 8 - short)
    assert line._size(line.bubble(_regressed(names), marker, 100)) == line.MAX_BUBBLE_BYTES - 8
    (message,) = line.build_messages([_regressed(names)], PUBLIC_URL, KEY)
    (sent,) = line.with_links([message], lambda uri: live_link(uri, KEY))
    (b,) = sent["contents"]["contents"]
    assert line._size(b) <= line.MAX_BUBBLE_BYTES
    assert line._size(sent["contents"]) <= line.MAX_CAROUSEL_BYTES
    assert "… and 1 more" in json.dumps(b, ensure_ascii=False)


def test_a_carousel_is_split_by_the_size_it_is_sent_at(monkeypatch):
    """Four bubbles 8 bytes under a carousel's 50 KB with their markers, over it once the
    markers are share links: they are grouped by the size they are sent at."""
    monkeypatch.setattr(line, "SHOW_REGRESSIONS", 100)
    names = [[f"W{i}-" + "R" * 1500 for _ in range(6)] for i in range(4)]

    def carousel_size() -> int:
        return line._size({"type": "carousel", "contents": [
            line.bubble(_regressed(n), f"{LINK_MARK}{PUBLIC_URL}#/scorecard/W1/v2", 100)
            for n in names]})

    for n in names:  # longer names, each within a text's 2,000 characters, until 8 bytes short
        for k in range(len(n)):
            n[k] += "R" * min(1990 - len(n[k]), line.MAX_CAROUSEL_BYTES - 8 - carousel_size())
    assert carousel_size() == line.MAX_CAROUSEL_BYTES - 8
    messages = line.build_messages([_regressed(n) for n in names], PUBLIC_URL, KEY)
    assert [len(m["contents"]["contents"]) for m in messages] == [3, 1]
    for m in line.with_links(messages, lambda uri: live_link(uri, KEY)):
        assert line._size(m["contents"]) <= line.MAX_CAROUSEL_BYTES


# -- without a key ----------------------------------------------------------------------------

def test_without_a_key_the_button_is_the_plain_page_stored_and_sent():
    (message,) = line.build_messages([_regressed(["Q-01"])], PUBLIC_URL, None)
    assert scorecard_uri({"body": {"messages": [message]}}) == f"{PUBLIC_URL}/scorecard/W1/v2"
    assert line.with_links([message], lambda uri: live_link(uri, None)) == [message]


def test_a_marker_sent_without_a_key_is_the_plain_page():
    """A resend from a shell without EXAM_SECRET_KEY or EXAM_API_TOKEN: the page, which asks
    for a login, rather than a marker no phone opens."""
    marker = f"{LINK_MARK}{PUBLIC_URL}#/scorecard/W1/v2"
    assert live_link(marker, None) == f"{PUBLIC_URL}/scorecard/W1/v2" == page_link(marker)


@pytest.mark.parametrize("path", ["/review", "/", "/runs", "/scorecard/W1", "/scorecard/W1/v2/x",
                                  "/scorecard/../review", "/scorecard/W1/..", "/scorecard/W1/v2?next=/review",
                                  "/share/abc", "/api/runs"])
def test_a_marker_naming_another_page_is_never_signed(path):
    """Every marker agent-exam writes names a scorecard page; one naming any other page (a
    row written into the store by someone who cannot sign) is sent as that plain page, which
    asks for a login: a send signs nothing but a Scorecard link."""
    marker = f"{LINK_MARK}{PUBLIC_URL}#{path}"
    assert live_link(marker, KEY) == PUBLIC_URL + path
    assert accepted_tokens(json.dumps(live_link(marker, KEY)), KEY) == []


@pytest.mark.parametrize("agent,version", [("W1", "v2"), ("客服機器人", "新版.2+rc-1"),
                                           ("a" * 64, "V_9")])
def test_a_marker_for_any_agent_and_version_a_name_may_hold_is_signed(agent, version):
    s = replace(_regressed(["Q-01"]), agent=agent, version=version)
    marker = line.scorecard_link(s, PUBLIC_URL, KEY)
    assert marker.startswith(LINK_MARK)
    token = live_link(marker, KEY).rsplit("/", 1)[1]
    assert read_token(KEY, token).page == f"/scorecard/{agent}/{version}"
