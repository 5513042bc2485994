"""What the dashboard answers when something is missing, wrong or broken: the right status on
a page a person can read (the API keeps answering JSON), never a traceback, a JSON body in a
browser, or a 200 page with an error line on it."""

from __future__ import annotations

import re

import pytest

from exam.errors import StoreUnavailable
from exam.store import Store
from exam.web.app import create_app
from tests.exam.web.conftest import demo_store, login_csrf, signed_in, w1_app, w1_registry

ADMIN, VIEWER = "admin-token-e401", "viewer-token-e402"
LOCKED = "demo.db: database is locked"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    return demo_store(tmp_path_factory, "errors")


@pytest.fixture
def app(demo_db, tmp_path):
    return w1_app(demo_db, tmp_path, ADMIN, VIEWER)


def logged_in(app, token: str = ADMIN):
    return signed_in(app, token)


def is_page(resp) -> bool:
    text = resp.get_data(as_text=True)
    return resp.mimetype == "text/html" and "<header>" in text and "Traceback" not in text


def error_line(resp) -> str:
    found = re.search(r'<p class="fail"[^>]*>(.*?)</p>', resp.get_data(as_text=True), re.S)
    assert found, "the page says nothing about what went wrong"
    return found.group(1)


@pytest.mark.parametrize("path", [
    "/scorecard/nobody/v1",
    "/scorecard/W3/v9",
    "/reply/99999999999999999999/W3-10/1",  # more than the database stores: was a 500
    "/reply/1/no-such-case/1",
    "/question/W3/no-such-case",
    "/no-such-page",
    "/compare?agent=W3&old=v9&new=v2",  # was a 200 page with the error as a line
    "/compare?agent=nobody",  # was a 200 page saying nothing
    "/discrimination?agent=nobody",  # was a 200 page with the error as a line
])
def test_what_is_not_stored_is_a_404_page(app, path):
    resp = logged_in(app).get(path)
    assert resp.status_code == 404, (path, resp.status_code)
    assert is_page(resp), resp.get_data(as_text=True)[:200]
    assert error_line(resp)


def test_a_compare_of_a_version_not_stored_names_it_and_keeps_the_form(app):
    resp = logged_in(app).get("/compare?agent=W3&old=v9&new=v2")
    assert resp.status_code == 404
    assert "no stored run of W3 version &#39;v9&#39; (versions: v1, v2)" in error_line(resp)
    assert 'name="old" value="v9"' in resp.get_data(as_text=True)


def test_a_version_compared_with_itself_is_a_refused_question_as_in_the_api(app):
    # stored, so not a 404: the question is wrong (the API's 400, exam compare's exit 2)
    resp = logged_in(app).get("/compare?agent=W3&old=v2&new=v2")
    assert resp.status_code == 400
    assert "cannot compare W3 v2 with itself" in error_line(resp)
    assert 'name="old" value="v2"' in resp.get_data(as_text=True)


def test_the_api_still_answers_json(app):
    client = app.test_client()
    auth = {"Authorization": f"Bearer {ADMIN}"}
    for path in ("/api/no-such-route", "/api/runs/99999999999999999999"):
        resp = client.get(path, headers=auth)
        assert resp.status_code == 404 and resp.json == {"error": "not found"}


def test_excluding_a_run_id_too_large_to_store_is_a_404_not_a_500(app):
    client = logged_in(app)
    resp = client.post("/runs/99999999999999999999/exclude",
                       data={"reason": "x", "csrf_token": login_csrf(client)})
    assert resp.status_code == 404 and is_page(resp)


def _store_goes_away(monkeypatch, method: str) -> None:
    """The store becomes unreachable part-way through the request (after the reads that
    choose what to show), as a PostgreSQL restart or a SQLite lock does."""

    def away(self, *args, **kwargs):
        raise StoreUnavailable(LOCKED)

    monkeypatch.setattr(Store, method, away)


@pytest.mark.parametrize(("method", "path", "form"), [
    ("adjudications", "/compare?agent=W3&old=v1&new=v2", None),
    ("create_run", "/runs", {"agent": "W1", "version": "v9", "repeats": "1"}),
    ("add_adjudication", "/review", {"decision": "pass", "reviewer": "ann"}),
])
def test_a_store_error_is_a_503_page_never_a_line_on_a_200_page(app, monkeypatch, method, path,
                                                                form):
    client = logged_in(app)
    if form is not None:
        form["csrf_token"] = login_csrf(client)
        if path == "/review":
            form["key"] = re.search(r'name="key" value="([^"]+)"',
                                    client.get("/review").text).group(1)
    _store_goes_away(monkeypatch, method)
    resp = client.get(path) if form is None else client.post(path, data=form)
    assert resp.status_code == 503, (resp.status_code, resp.headers.get("Location"))
    assert is_page(resp)
    assert LOCKED in error_line(resp)  # the admin is told why


def test_a_viewer_is_not_told_where_the_store_lives(app, monkeypatch):
    client = logged_in(app, VIEWER)
    _store_goes_away(monkeypatch, "adjudications")
    resp = client.get("/compare?agent=W3&old=v1&new=v2")
    assert resp.status_code == 503 and is_page(resp)
    assert "demo.db" not in resp.get_data(as_text=True)
    assert "service log" in error_line(resp)


def test_a_form_from_another_site_is_refused_on_a_page(app):
    client = logged_in(app)
    resp = client.post("/runs", data={"agent": "W1", "version": "v9"},
                       headers={"Origin": "https://evil.example"})
    assert resp.status_code == 400 and is_page(resp)
    assert "refused: the form was sent from another site" in error_line(resp)


def test_the_compare_page_opens_on_the_last_versions_a_report_reads(demo_db, tmp_path):
    """A run just queued (no cell yet) is not the default "new" version: the Compare page
    opened from the menu while it waited showed "no stored run of W1 version 'v3'"."""
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(demo_db, db)
    client = logged_in(create_app({"API_TOKEN": ADMIN, "DB": str(db),
                                   "AGENTS": str(w1_registry(tmp_path)), "TESTING": True}))
    assert client.post("/runs", data={"agent": "W1", "version": "v3", "repeats": "1",
                                      "csrf_token": login_csrf(client)}).status_code == 302
    resp = client.get("/compare?agent=W1")
    assert resp.status_code == 200
    assert 'name="old" value="v1"' in resp.text and 'name="new" value="v2"' in resp.text
    assert 'id="verdict"' in resp.text


def test_the_runs_page_says_when_it_lists_only_the_newest(tmp_path):
    """Thousands of runs: the page lists the newest 200, and says so (older ones vanished)."""
    from exam.web.dashboard import RUNS_SHOWN

    s = Store(str(tmp_path / "many.db"))
    try:
        for n in range(RUNS_SHOWN + 1):
            s.create_run(agent="A" if n % 2 else "B", version=f"v{n}", bank_path="x.json",
                         bank_digest="d", repeats=1, plan=[("A-01", "q")], settings={},
                         status="queued")
    finally:
        s.close()
    client = logged_in(create_app({"API_TOKEN": ADMIN, "DB": str(tmp_path / "many.db"),
                                   "TESTING": True}))
    page = client.get("/runs").get_data(as_text=True)
    assert page.count("data-outcome=") == RUNS_SHOWN
    assert f"The newest {RUNS_SHOWN} runs are shown" in page
    assert 'id="more"' not in client.get("/runs?agent=A").get_data(as_text=True)
