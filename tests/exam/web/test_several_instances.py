"""Two `exam serve` processes on one store, as behind a load balancer: whatever one instance
hands a browser (a session, a CSRF token, a share link, a blind-review seed) the other
accepts, a decision made on one is seen by the other, and a LINE event delivered to both
is answered once. Separate processes, so nothing can lean on shared process memory."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import subprocess
import sys
import threading

import pytest
import requests
import yaml

from exam.web.app import create_app
from tests.backends import STORE_BACKENDS
from tests.exam.helpers import demo_store, wait_for, write_bank
from tests.fakes.agent import FakeAgent
from tests.fakes.line_api import FakeLineApi
from tests.processes import Serve, exam_env

TOKEN = "instances-token-7c1e"
SECRET = "channel-secret-for-instances"
GROUP = "C0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def pair(request, tmp_path_factory):
    """(instance A, instance B, the fake LINE API, the env both were started with)."""
    folder = tmp_path_factory.mktemp("instances")
    with demo_store(request.param, folder) as db, FakeAgent() as agent, FakeLineApi() as line:
        bank = write_bank(folder, ["ok", "ok"])
        registry = folder / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"T": {"url": agent.url,
                                                             "bank": str(bank)}}}))
        env = exam_env(db, registry, EXAM_API_TOKEN=TOKEN, LINE_CHANNEL_SECRET=SECRET,
                       LINE_CHANNEL_ACCESS_TOKEN="line-token", LINE_API_HOST=line.host,
                       EXAM_LINE_ALLOWED_GROUPS=GROUP)
        a = Serve(env, folder / "a.log")
        b = Serve(env, folder / "b.log")
        try:
            a.start()
            b.start()
            yield a, b, line, env
        finally:
            a.stop()
            b.stop()


def logged_in(base: str) -> requests.Session:
    browser = requests.Session()
    form = browser.get(f"{base}/login", timeout=30).text
    resp = browser.post(f"{base}/login", data={"token": TOKEN, "csrf_token": csrf_in(form)},
                        allow_redirects=False, timeout=30)
    assert resp.status_code == 302, resp.text
    return browser


def csrf_in(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def session_of(browser: requests.Session, env: dict[str, str]) -> dict:
    """The signed session cookie, read with a third app built from the same settings."""
    app = create_app({"API_TOKEN": env["EXAM_API_TOKEN"], "DB": env["EXAM_DB"]})
    return dict(app.session_interface.get_signing_serializer(app).loads(
        browser.cookies["session"]))


def test_a_session_from_one_instance_is_accepted_by_the_other(pair):
    a, b, _, _ = pair
    browser = logged_in(a.url)
    resp = browser.get(f"{b.url}/runs", allow_redirects=False, timeout=30)
    assert resp.status_code == 200, "instance B sent the browser to log in again"
    assert 'action="/logout"' in resp.text and "Start a run" in resp.text  # as the admin
    stranger = requests.get(f"{b.url}/runs", allow_redirects=False, timeout=30)
    assert stranger.status_code == 302 and "/login" in stranger.headers["Location"]


def test_logging_out_on_one_instance_ends_the_session_on_the_other(pair):
    """The session is the store's (schema 15): a copy of the cookie saved before logging out
    on B is refused by A too, which never saw the logout."""
    a, b, _, _ = pair
    browser = logged_in(a.url)
    saved = browser.cookies["session"]
    token = csrf_in(browser.get(f"{b.url}/runs", timeout=30).text)
    out = browser.post(f"{b.url}/logout", data={"csrf_token": token}, allow_redirects=False,
                       timeout=30)
    assert out.status_code == 302, out.text
    copy = requests.Session()
    copy.cookies.set("session", saved)
    resp = copy.get(f"{a.url}/runs", allow_redirects=False, timeout=30)
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


def test_a_form_from_one_instance_is_accepted_by_the_other(pair):
    a, b, _, _ = pair
    browser = logged_in(a.url)
    token = csrf_in(browser.get(f"{a.url}/runs", timeout=30).text)
    form = {"agent": "T", "version": "from-b", "repeats": "1"}
    sent = browser.post(f"{b.url}/runs", data={**form, "csrf_token": token},
                        allow_redirects=False, timeout=30)
    assert sent.status_code == 302, sent.text
    assert "queued: T from-b" in browser.get(f"{a.url}/runs", timeout=30).text  # A says it
    runs = browser.get(f"{a.url}/api/runs", headers={"Authorization": f"Bearer {TOKEN}"},
                       timeout=30).json()["runs"]
    assert [r["version"] for r in runs].count("from-b") == 1  # A sees what B queued
    forged = browser.post(f"{b.url}/runs", data={**form, "csrf_token": token[:-2] + "xx"},
                          allow_redirects=False, timeout=30)
    assert forged.status_code == 400 and "refused: " in forged.text


def test_a_share_link_made_by_one_instance_opens_on_the_other(pair):
    a, b, _, _ = pair
    page = logged_in(a.url).get(f"{a.url}/scorecard/W3/v2", timeout=30).text
    link = re.search(r'aria-label="share link"', page) and re.search(
        r'value="[^"]*/share/([^"]+)" aria-label="share link"', page)
    assert link, "instance A's scorecard page has no share link for the admin"
    guest = requests.Session()
    opened = guest.get(f"{b.url}/share/{link.group(1)}", allow_redirects=False, timeout=30)
    assert opened.status_code == 302 and opened.headers["Location"] == "/scorecard/W3/v2"
    assert guest.get(f"{b.url}/scorecard/W3/v2", allow_redirects=False,
                     timeout=30).status_code == 200
    assert guest.get(f"{a.url}/scorecard/W3/v2", allow_redirects=False,
                     timeout=30).status_code == 200  # the viewer session, back on A
    tampered = requests.get(f"{b.url}/share/{link.group(1)[:-2]}xx", timeout=30)
    assert tampered.status_code == 403


def share_link_on(base: str, browser: requests.Session, page: str) -> str:
    """The share link the admin finds under a scorecard (its token)."""
    found = re.search(r'value="[^"]*/share/([^"]+)" aria-label="share link"',
                      browser.get(f"{base}{page}", timeout=30).text)
    assert found, f"{page} has no share link for the admin"
    return found.group(1)


def refused_as_revoked(resp: requests.Response) -> bool:
    return resp.status_code == 403 and "<h1>Link revoked</h1>" in resp.text


def test_a_link_revoked_on_one_instance_is_refused_by_the_other(pair):
    """The team revokes a leaked link from A's dashboard; a browser that opened it on B
    loses it at its next request there, and the link opens nothing anywhere."""
    a, b, _, _ = pair
    admin = logged_in(a.url)
    token = share_link_on(a.url, admin, "/scorecard/W2/v2")
    guest = requests.Session()
    guest.get(f"{b.url}/share/{token}", timeout=30)
    assert guest.get(f"{b.url}/scorecard/W2/v2", timeout=30).status_code == 200
    page = admin.get(f"{a.url}/scorecard/W2/v2", timeout=30).text
    sent = admin.post(f"{a.url}/revoke-share", data={
        "csrf_token": csrf_in(page), "back": "/scorecard/W2/v2",
        "link": f"https://exam.example.com/share/{token}"}, allow_redirects=False, timeout=30)
    assert sent.status_code == 302, sent.text
    assert refused_as_revoked(guest.get(f"{b.url}/scorecard/W2/v2", timeout=30))
    assert refused_as_revoked(guest.get(f"{a.url}/scorecard/W2/v2", timeout=30))
    for base in (a.url, b.url):
        assert refused_as_revoked(requests.get(f"{base}/share/{token}", timeout=30))
    # the admin's next link to the page is another link, and works
    fresh = share_link_on(b.url, admin, "/scorecard/W2/v2")
    assert requests.get(f"{b.url}/share/{fresh}", allow_redirects=False,
                        timeout=30).status_code == 302


def test_exam_share_revoke_reaches_every_instance(pair, tmp_path):
    """`exam share revoke` with the service's settings, run on another machine: the browsers
    holding the link are refused by both instances."""
    a, b, _, env = pair
    token = share_link_on(a.url, logged_in(a.url), "/scorecard/W1/v2")
    guests = [requests.Session(), requests.Session()]
    for guest, base in zip(guests, (a.url, b.url), strict=True):
        guest.get(f"{base}/share/{token}", timeout=30)
        assert guest.get(f"{base}/scorecard/W1/v2", timeout=30).status_code == 200
    done = subprocess.run([sys.executable, "-m", "exam", "share", "revoke",
                           f"https://exam.example.com/share/{token}"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("revoked the share link to /scorecard/W1/v2")
    for guest in guests:
        for base in (a.url, b.url):
            assert refused_as_revoked(guest.get(f"{base}/scorecard/W1/v2", timeout=30))


def test_a_review_decision_on_one_instance_is_seen_by_the_other(pair):
    a, b, _, env = pair
    browser = logged_in(a.url)
    page = browser.get(f"{a.url}/review?blind=1", timeout=30).text
    assert "review queue: 1 distinct reply" in page
    seed = session_of(browser, env)["blind_seed"]
    on_b = browser.get(f"{b.url}/review?blind=1", timeout=30)
    assert session_of(browser, env)["blind_seed"] == seed  # B kept A's shuffle
    assert "review queue: 1 distinct reply" in on_b.text
    key = re.search(r'name="key" value="([^"]+)"', on_b.text).group(1)
    sent = browser.post(f"{b.url}/review", data={
        "csrf_token": csrf_in(on_b.text), "key": key, "agent": "", "blind": "1",
        "reviewer": "pat", "reason": "", "decision": "pass"}, allow_redirects=False,
        timeout=30)
    assert sent.status_code == 302, sent.text
    after = browser.get(f"{a.url}/review", timeout=30).text
    assert "pass stored" in after and "review queue: 0 distinct replies" in after


def sign(body: bytes) -> str:
    return base64.b64encode(hmac.new(SECRET.encode(), body, hashlib.sha256).digest()).decode()


def message(event_id: str, text: str) -> dict:
    return {"type": "message", "mode": "active", "timestamp": 1764400000000,
            "source": {"type": "group", "groupId": GROUP, "userId": "U1234"},
            "webhookEventId": event_id, "deliveryContext": {"isRedelivery": False},
            "replyToken": f"reply-{event_id}",
            "message": {"type": "text", "id": "468789577898262530", "text": text,
                        "quoteToken": "q-token"}}


def test_a_line_event_delivered_to_both_instances_is_answered_once(pair):
    """Each instance gets the event and then one of its own; the events of one delivery are
    handled in order, so once both of its own are answered, both have settled the shared one."""
    a, b, line, _ = pair
    events = 8
    for n in range(events):
        shared = message(f"01SHARED{n:04d}", "exam status")
        bodies = [json.dumps({"destination": "Uxxxxxxxx", "events": [
            shared, message(f"01OWN{n:04d}{side}", "exam help")]}).encode() for side in "ab"]
        start = threading.Barrier(2)
        answers: list[int] = []

        def deliver(base: str, body: bytes, start=start, answers=answers) -> None:
            start.wait(timeout=30)  # both deliveries race
            answers.append(requests.post(f"{base}/line/webhook", data=body, timeout=30, headers={
                "Content-Type": "application/json", "X-Line-Signature": sign(body)}).status_code)

        threads = [threading.Thread(target=deliver, args=(s.url, body))
                   for s, body in zip((a, b), bodies, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert answers == [200, 200]

        def tokens() -> list[str]:
            return [r["body"]["replyToken"] for r in line.replies()]

        wait_for(lambda: {f"reply-01OWN{n:04d}a", f"reply-01OWN{n:04d}b"} <= set(tokens()),  # noqa: B023
                 "both instances to answer their own event")
        assert tokens().count(f"reply-{shared['webhookEventId']}") == 1
    assert len(line.replies()) == 3 * events


@pytest.mark.parametrize("env", [{"EXAM_API_TOKEN": "tok-1", "EXAM_SECRET_KEY": "key-1"},
                                 {"EXAM_API_TOKEN": "tok-1"}], ids=["secret-key", "from-token"])
def test_apps_built_from_the_same_settings_accept_each_others_sessions(env, monkeypatch,
                                                                       tmp_path):
    """The signing key comes from the environment (EXAM_SECRET_KEY, else derived from
    EXAM_API_TOKEN), never from the process: a third app with another key refuses it."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("EXAM_DB", str(tmp_path / "exam.db"))
    first, second = create_app(), create_app()
    browser = first.test_client()
    form = browser.get("/login").get_data(as_text=True)
    assert browser.post("/login", data={"token": "tok-1", "csrf_token": csrf_in(form)}
                        ).status_code == 302
    cookie = browser.get_cookie("session").value
    other = second.test_client()
    other.set_cookie("session", cookie)
    assert other.get("/runs").status_code == 200
    monkeypatch.setenv("EXAM_SECRET_KEY", "another-key")
    stranger = create_app().test_client()
    stranger.set_cookie("session", cookie)
    assert stranger.get("/runs").status_code == 302  # to the login page
