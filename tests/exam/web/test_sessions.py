"""Dashboard logins the store knows (schema 15): logging out ends a session on the server, so
a copy of the cookie saved before ``POST /logout`` reads nothing and changes nothing after,
on either backend; a session past its end is refused by the store's clock; the store keeps a
digest of the session id, never the id."""

from __future__ import annotations

import pytest
from sqlalchemy import text, update

from exam.db.clock import store_now
from exam.db.engine import engine_for
from exam.db.schema import sessions
from exam.store import Store
from exam.web.app import create_app
from tests.exam.web.conftest import login_csrf, sign_in, w1_registry

ADMIN, VIEWER = "admin-token-2b9d", "viewer-token-6e01"


@pytest.fixture
def db(store_url):
    s = Store(store_url)
    try:
        s.create_run(agent="W1", version="v1", bank_path="bank/W1.json", bank_digest="b" * 64,
                     repeats=1, plan=[("W1-01", "d1")], settings={}, status="done")
    finally:
        s.close()
    return store_url


@pytest.fixture
def app(db, tmp_path):
    return create_app({"API_TOKEN": ADMIN, "VIEWER_TOKEN": VIEWER, "DB": db,
                       "AGENTS": str(w1_registry(tmp_path)), "TESTING": True})


def _saved_cookie(client) -> str:
    return client.get_cookie("session").value


def _browser(app, cookie: str):
    """Another browser holding a saved copy of a session cookie."""
    other = app.test_client()
    other.set_cookie("session", cookie)
    return other


def _excluded(db: str) -> str | None:
    s = Store(db)
    try:
        return s.list_runs()[0].excluded_reason
    finally:
        s.close()


@pytest.mark.parametrize("token", [ADMIN, VIEWER])
def test_a_cookie_saved_before_logout_reads_nothing_after(app, token):
    client = app.test_client()
    sign_in(client, token)
    saved = _saved_cookie(client)
    assert _browser(app, saved).get("/runs").status_code == 200  # the copy works until then
    csrf = login_csrf(client)
    assert client.post("/logout", data={"csrf_token": csrf}).status_code == 302
    copy = _browser(app, saved)
    resp = copy.get("/runs")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


def test_a_cookie_saved_before_logout_cannot_exclude_a_run(app, db):
    client = app.test_client()
    sign_in(client, ADMIN)
    csrf = login_csrf(client)
    saved = _saved_cookie(client)  # with the CSRF secret: a form the copy sends is accepted
    run_id = next(iter(app.test_client().get(
        "/api/runs", headers={"Authorization": f"Bearer {ADMIN}"}).json["runs"]))["run_id"]
    client.post("/logout", data={"csrf_token": csrf})
    copy = _browser(app, saved)
    resp = copy.post(f"/runs/{run_id}/exclude", data={"csrf_token": csrf, "reason": "after"})
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]
    assert _excluded(db) is None


def test_a_session_past_its_end_by_the_stores_clock_is_refused(app, db):
    client = app.test_client()
    sign_in(client, VIEWER)
    assert client.get("/runs").status_code == 200
    with engine_for(db).begin() as conn:  # its end reached, as the store's clock reads it
        conn.execute(update(sessions).values(until=store_now() - 1))
    resp = client.get("/runs")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


def test_the_store_keeps_a_digest_of_the_session_id_never_the_id(app, db):
    client = app.test_client()
    sign_in(client, ADMIN)
    session_id = app.session_interface.get_signing_serializer(app).loads(
        _saved_cookie(client))["sid"]
    with engine_for(db).connect() as conn:
        rows = conn.execute(text("SELECT id, role FROM sessions")).all()
    assert [r.role for r in rows] == ["admin"]
    assert session_id not in rows[0].id and len(rows[0].id) == 64


def test_a_new_login_deletes_sessions_past_their_end(app, db):
    for _ in range(2):
        sign_in(app.test_client(), VIEWER)
    with engine_for(db).begin() as conn:
        conn.execute(update(sessions).values(until=store_now() - 1))
    sign_in(app.test_client(), VIEWER)
    with engine_for(db).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sessions")).scalar() == 1
