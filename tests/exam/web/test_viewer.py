"""Read-only access: a viewer (EXAM_VIEWER_TOKEN or a share link) opens every read page and
nothing that changes state, route by route over the app's own URL map."""

from __future__ import annotations

import html
import re
import time

import pytest

from exam.errors import ExamError
from exam.share import make_token
from exam.store import Store
from exam.web.app import create_app
from tests.exam.web.conftest import demo_store, login_csrf, sign_in, w1_app

ADMIN, VIEWER = "admin-token-81c2", "viewer-token-77ab"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    return demo_store(tmp_path_factory, "viewer")


@pytest.fixture
def app(demo_db, tmp_path):
    return w1_app(demo_db, tmp_path, ADMIN, VIEWER)


def _url(rule, run_id: int) -> str:
    values = {"run_id": str(run_id), "agent": "W3", "version": "v2", "case_no": "W3-10",
              "repeat": "1", "token": "x", "filename": "x"}
    query = "?agent=W3&old=v1&new=v2" if rule.endpoint.endswith("compare") else ""
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], rule.rule) + query


def _state(db: str) -> tuple:
    s = Store(db)
    try:
        return (len(s.list_runs()), len(s.adjudications()))
    finally:
        s.close()


def _rules(app, methods: set[str]):
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("line.") or rule.endpoint == "static":
            continue  # the LINE webhook is signed by LINE, not by our tokens
        for method in sorted((rule.methods or set()) & methods):
            yield rule, method


def _run_id(db: str) -> int:
    s = Store(db)
    try:
        return next(r.id for r in s.list_runs("W3", "v2"))
    finally:
        s.close()


def test_a_viewer_session_opens_every_read_page(app, demo_db):
    client = app.test_client()
    sign_in(client, VIEWER)
    checked = []
    for rule, _ in _rules(app, {"GET"}):
        if rule.endpoint in ("dashboard.share",):
            continue  # tested below with real links
        resp = client.get(_url(rule, _run_id(demo_db)),
                          headers={"Authorization": f"Bearer {VIEWER}"}
                          if rule.endpoint.startswith("api.") else {})
        assert resp.status_code == 200, (rule.rule, resp.status_code, resp.text[:200])
        checked.append(rule.endpoint)
    assert {"dashboard.overview", "dashboard.runs", "dashboard.scorecard", "dashboard.reply",
            "dashboard.question", "dashboard.compare", "dashboard.discrimination",
            "dashboard.review_page", "api.list_runs", "api.report_scorecard"} <= set(checked)


def test_a_viewer_changes_nothing_on_any_route(app, demo_db):
    client = app.test_client()
    sign_in(client, VIEWER)
    token = login_csrf(client)
    before = _state(demo_db)
    refused = []
    for rule, method in _rules(app, {"POST", "PUT", "PATCH", "DELETE"}):
        if rule.endpoint in ("dashboard.login", "dashboard.logout"):
            continue
        url = _url(rule, _run_id(demo_db))
        if rule.endpoint.startswith("api."):
            resp = client.open(url, method=method, json={"agent": "W1", "version": "v9"},
                               headers={"Authorization": f"Bearer {VIEWER}"})
        else:
            resp = client.open(url, method=method, data={
                "csrf_token": token, "agent": "W1", "version": "v9", "repeats": "1",
                "key": "x", "decision": "pass", "reviewer": "Mei"})
        assert resp.status_code == 403, (method, rule.rule, resp.status_code)
        refused.append(rule.endpoint)
    assert {"dashboard.start_run", "dashboard.review_decide", "dashboard.exclude_run",
            "api.create_run", "api.exclude_run"} <= set(refused)
    assert _state(demo_db) == before


def test_the_admin_starts_a_run_from_the_dashboard_form(app, demo_db):
    client = app.test_client()
    sign_in(client, ADMIN)
    before = _state(demo_db)[0]
    resp = client.post("/runs", data={"csrf_token": login_csrf(client), "agent": "W1",
                                      "version": "v9", "repeats": "2"})
    assert resp.status_code == 302 and resp.headers["Location"] == "/runs"
    assert "queued: W1 v9 × 2" in client.get("/runs").text
    s = Store(demo_db)
    try:
        runs = s.list_runs()
        assert len(runs) == before + 1
        assert (runs[0].agent, runs[0].version, runs[0].repeats, runs[0].status,
                runs[0].source) == ("W1", "v9", 2, "queued", "dashboard")
    finally:
        s.close()


def test_the_admin_excludes_and_includes_a_run_from_the_dashboard(app, demo_db):
    client = app.test_client()
    sign_in(client, ADMIN)
    run_id = _run_id(demo_db)
    token = login_csrf(client)
    resp = client.post(f"/runs/{run_id}/exclude", data={"csrf_token": token, "reason": ""})
    assert "reason: say why" in client.get("/runs").text  # a reason is required
    resp = client.post(f"/runs/{run_id}/exclude", data={"csrf_token": token,
                                                         "reason": "forgot the secret"})
    assert resp.status_code == 302
    s = Store(demo_db)
    try:
        assert s.get_run(run_id).excluded_reason == "forgot the secret"
    finally:
        s.close()
    page = client.get("/runs").get_data(as_text=True)
    assert "forgot the secret" in page and 'data-outcome="excluded"' in page
    client.post(f"/runs/{run_id}/exclude", data={"csrf_token": token, "include": "1"})
    s = Store(demo_db)
    try:
        assert s.get_run(run_id).excluded_reason is None
    finally:
        s.close()
    assert client.post("/runs/999999/exclude", data={"csrf_token": token,
                                                     "reason": "x"}).status_code == 404


@pytest.mark.parametrize("form,message", [
    ({"agent": "W1", "version": "", "repeats": "1"}, "version: expected a non-empty label"),
    ({"agent": "W1", "version": "v9", "repeats": "0"}, "repeats: expected a whole number"),
    ({"agent": "W1", "version": "v9", "repeats": "²"}, "repeats: expected a whole number"),
    ({"agent": "nope", "version": "v9", "repeats": "1"}, "no agent named 'nope'"),
])
def test_a_bad_start_run_form_says_which_field(app, form, message):
    client = app.test_client()
    sign_in(client, ADMIN)
    resp = client.post("/runs", data={"csrf_token": login_csrf(client), **form},
                       follow_redirects=True)
    assert message in html.unescape(resp.text)


def test_a_message_in_the_address_is_not_shown(app):
    """What a form did is shown from the session: words in a link (?message=) are not."""
    client = app.test_client()
    sign_in(client, ADMIN)
    planted = "Your session expired: log in again at https://evil.example"
    for page in ("/runs", "/review"):
        assert planted not in client.get(f"{page}?message={planted}").text


def _run_of(db: str, agent: str, version: str) -> int:
    s = Store(db)
    try:
        return s.list_runs(agent, version)[0].id
    finally:
        s.close()


def test_a_share_link_opens_its_scorecard_and_changes_nothing(app, demo_db):
    client = app.test_client()
    token = make_token(app.config["SECRET_KEY"], "/scorecard/W3/v2")
    resp = client.get(f"/share/{token}")
    assert resp.status_code == 302 and resp.headers["Location"] == "/scorecard/W3/v2"
    page = client.get("/scorecard/W3/v2")
    assert page.status_code == 200 and 'id="role">shared<' in page.text
    assert 'href="/runs"' not in page.text  # no menu to pages it does not open
    reply = client.get(f"/reply/{_run_of(demo_db, 'W3', 'v2')}/W3-10/1")  # linked from it
    assert reply.status_code == 200 and "every version&#39;s replies" not in reply.text
    before = _state(demo_db)
    resp = client.post("/runs", data={"csrf_token": login_csrf(client), "agent": "W1",
                                      "version": "v9", "repeats": "1"})
    assert resp.status_code == 403
    assert _state(demo_db) == before


def test_a_share_link_opens_nothing_beyond_its_scorecard(app, demo_db):
    """A scorecard's link, forwarded or sent to a LINE group, was a viewer session: every
    agent's replies, raw bodies, the runs and the review queue for 7 days."""
    client = app.test_client()
    client.get(f"/share/{make_token(app.config['SECRET_KEY'], '/scorecard/W3/v2')}")
    for path in ("/", "/runs", "/review", "/compare?agent=W3&old=v1&new=v2", "/discrimination",
                 "/scorecard/W3/v1", "/scorecard/W1/v2", "/question/W3/W3-10",
                 f"/reply/{_run_of(demo_db, 'W3', 'v1')}/W3-10/1",
                 f"/reply/{_run_of(demo_db, 'W1', 'v2')}/W1-01/1",
                 "/reply/999999/W3-10/1"):  # no telling which runs exist
        resp = client.get(path)
        assert resp.status_code == 403 and "A share link opens the page it names" in resp.text, \
            path
    assert client.get("/api/runs").status_code == 401  # and the API was never open to it


def test_two_share_links_open_both_pages_until_each_expires(app, share_clock):
    client = app.test_client()
    key = app.config["SECRET_KEY"]
    client.get(f"/share/{make_token(key, '/scorecard/W3/v2')}")
    client.get(f"/share/{make_token(key, '/scorecard/W1/v1', days=1 / 86400)}")  # 1 second
    assert client.get("/scorecard/W3/v2").status_code == 200
    share_clock.advance(1.1)
    assert client.get("/scorecard/W1/v1").status_code == 403  # expired: the other one holds
    assert client.get("/scorecard/W3/v2").status_code == 200


def test_an_expired_share_link_session_asks_to_log_in(app, share_clock):
    client = app.test_client()
    client.get(f"/share/{make_token(app.config['SECRET_KEY'], '/scorecard/W3/v2', days=1e-5)}")
    share_clock.advance(1.0)
    resp = client.get("/scorecard/W3/v2")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


def test_a_line_link_with_an_encoded_path_opens_its_page(app):
    """LINE and `exam notify` sign the path %-encoded (a CJK agent name); Flask sees it
    decoded."""
    from urllib.parse import quote

    client = app.test_client()
    signed = f"/scorecard/W3/{quote('v2+x', safe='')}"  # /scorecard/W3/v2%2Bx
    client.get(f"/share/{make_token(app.config['SECRET_KEY'], signed)}")
    assert client.get("/scorecard/W3/v2+x").status_code == 404  # let in: no such version


@pytest.mark.parametrize("make,message", [
    (lambda key: make_token(key, "/runs", now=time.time() - 8 * 86400), "expired"),
    (lambda key: make_token(key, "/runs")[:-2] + "xx", "not valid"),
    (lambda key: make_token("another key", "/runs"), "not valid"),
])
def test_a_bad_share_link_is_refused_with_a_reason(app, make, message):
    client = app.test_client()
    resp = client.get(f"/share/{make(app.config['SECRET_KEY'])}")
    assert resp.status_code == 403 and message in resp.text
    assert client.get("/runs").status_code == 302  # no session was given


def test_a_share_link_never_redirects_off_the_site(app):
    client = app.test_client()
    resp = client.get(f"/share/{make_token(app.config['SECRET_KEY'], '//evil.example/')}")
    assert resp.headers["Location"] == "/"


def test_the_viewer_token_must_differ_from_the_admin_token(demo_db):
    with pytest.raises(ExamError, match="EXAM_VIEWER_TOKEN is the same as EXAM_API_TOKEN"):
        create_app({"API_TOKEN": ADMIN, "VIEWER_TOKEN": ADMIN, "DB": demo_db})


def test_without_a_token_every_page_asks_to_log_in(app, demo_db):
    client = app.test_client()
    for rule, _ in _rules(app, {"GET"}):
        if rule.endpoint.startswith("dashboard.") and rule.endpoint not in (
                "dashboard.login", "dashboard.share"):
            resp = client.get(_url(rule, _run_id(demo_db)))
            assert resp.status_code == 302 and "/login" in resp.headers["Location"], rule.rule
