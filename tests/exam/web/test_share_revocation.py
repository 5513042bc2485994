"""Revoking one share link (a scorecard link forwarded beyond the LINE group) without changing
EXAM_SECRET_KEY: the link, and every page a browser opened with it, is refused with a page
saying so; the store keeps the link's id, never the link. On both store backends."""

from __future__ import annotations

import re
import time

import pytest
from itsdangerous import URLSafeSerializer
from sqlalchemy import insert, select

from exam.errors import StoreUnavailable
from exam.share import SALT, decode_token, link_id, make_token
from exam.store import Store
from tests.backends import STORE_BACKENDS
from tests.exam.helpers import demo_store
from tests.exam.web.conftest import login_csrf, signed_in, w1_app

ADMIN, VIEWER = "admin-token-r3v0", "viewer-token-r3v1"


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def demo_db(request, tmp_path_factory):
    """A demo store on each backend; each test revokes links to pages of its own."""
    with demo_store(request.param, tmp_path_factory.mktemp("revoke")) as db:
        yield db


@pytest.fixture
def app(demo_db, tmp_path):
    return w1_app(demo_db, tmp_path, ADMIN, VIEWER)


def logged_in(app, token: str = ADMIN):
    return signed_in(app, token)


def revoke(admin, **form) -> str:
    """The admin's revoke form on a scorecard page, sent as the page sends it; the message
    the page shows next."""
    page = admin.get("/scorecard/W1/v2").text
    token = re.search(r'id="revoke-link">\s*<input type="hidden" name="csrf_token" '
                      r'value="([^"]+)"', page).group(1)
    sent = admin.post("/revoke-share", data={"csrf_token": token, "back": "/scorecard/W1/v2",
                                             **form})
    assert sent.status_code == 302 and sent.headers["Location"] == "/scorecard/W1/v2"
    return re.search(r'<p id="message">(.*?)</p>', admin.get("/scorecard/W1/v2").text).group(1)


def run_of(db: str, agent: str, version: str) -> int:
    s = Store(db)
    try:
        return s.list_runs(agent, version)[0].id
    finally:
        s.close()


def revocations(db: str) -> list[dict]:
    from exam.db.schema import share_revocations

    s = Store(db)
    try:
        with s.tx() as conn:
            return [dict(r._mapping) for r in conn.execute(select(share_revocations))]
    finally:
        s.close()


def is_revoked_page(resp) -> bool:
    text = resp.get_data(as_text=True)
    return (resp.status_code == 403 and resp.mimetype == "text/html" and
            "<h1>Link revoked</h1>" in text and "Traceback" not in text)


def test_a_revoked_link_opens_nothing_and_says_so(app):
    key = app.config["SECRET_KEY"]
    token = make_token(key, "/scorecard/W3/v2")
    assert "is revoked, on every instance" in revoke(logged_in(app), link=f"https://x/share/{token}")
    guest = app.test_client()
    assert is_revoked_page(guest.get(f"/share/{token}"))
    assert guest.get("/scorecard/W3/v2").status_code == 302  # no grant given: log in
    other = make_token(key, "/scorecard/W3/v2", now=time.time() - 1)  # another link, same page
    assert guest.get(f"/share/{other}").status_code == 302
    assert guest.get("/scorecard/W3/v2").status_code == 200


def test_a_browser_that_opened_the_link_loses_its_pages(app, demo_db):
    key = app.config["SECRET_KEY"]
    leaked = make_token(key, "/scorecard/W2/v2")
    kept = make_token(key, "/scorecard/W2/v1")
    guest = app.test_client()
    guest.get(f"/share/{leaked}")
    guest.get(f"/share/{kept}")
    reply = f"/reply/{run_of(demo_db, 'W2', 'v2')}/W2-01/1"
    assert guest.get("/scorecard/W2/v2").status_code == 200
    assert guest.get(reply).status_code == 200
    revoke(logged_in(app), link=leaked, reason="forwarded outside the group")
    assert is_revoked_page(guest.get("/scorecard/W2/v2"))
    assert is_revoked_page(guest.get(reply))  # the replies it linked to went with it
    assert "forwarded outside" not in guest.get("/scorecard/W2/v2").text  # the team's words
    assert guest.get("/scorecard/W2/v1").status_code == 200  # the other link holds
    assert guest.get("/runs").status_code == 403  # and opens no more than it did


@pytest.mark.parametrize("written", [
    lambda t: t + "=",  # itsdangerous reads a padded signature as the same one
    lambda t: t + "==",
])
def test_the_same_link_written_another_way_is_refused_too(app, written):
    token = make_token(app.config["SECRET_KEY"], "/scorecard/W1/v1", days=2)
    guest = app.test_client()
    assert guest.get(f"/share/{written(token)}").status_code == 302  # it is the same link
    revoke(logged_in(app), link=token)
    assert is_revoked_page(guest.get(f"/share/{written(token)}"))
    assert is_revoked_page(guest.get("/scorecard/W1/v1"))


def test_every_link_to_a_page_made_before_now_is_revoked_and_later_ones_work(app):
    key = app.config["SECRET_KEY"]
    before = make_token(key, "/scorecard/W3/v1", now=time.time() - 60)
    # a link made by an agent-exam that did not say when: older than any revocation
    older = URLSafeSerializer(key, salt=SALT).dumps({"path": "/scorecard/W3/v1",
                                                     "until": int(time.time()) + 86400})
    holder = app.test_client()
    holder.get(f"/share/{before}")
    assert holder.get("/scorecard/W3/v1").status_code == 200
    message = revoke(logged_in(app), page="/scorecard/W3/v1")
    assert message.startswith("every share link to /scorecard/W3/v1 made until now is revoked")
    assert is_revoked_page(holder.get("/scorecard/W3/v1"))
    for token in (before, older):
        assert is_revoked_page(app.test_client().get(f"/share/{token}"))
    after = make_token(key, "/scorecard/W3/v1")
    fresh = app.test_client()
    assert fresh.get(f"/share/{after}").status_code == 302
    assert fresh.get("/scorecard/W3/v1").status_code == 200
    page = logged_in(app).get("/scorecard/W3/v1").text  # the admin sees what was revoked
    assert re.search(r'<ul id="revoked"><li>every link made before \d{4}-\d\d-\d\d', page)


def test_the_store_keeps_the_links_id_never_the_link(app, demo_db):
    token = make_token(app.config["SECRET_KEY"], "/scorecard/W1/v2", days=3)
    revoke(logged_in(app), link=token)
    row = next(r for r in revocations(demo_db) if r["link"] == link_id(token))
    payload, signature = token.rsplit(".", 1)
    stored = repr(revocations(demo_db))
    assert payload not in stored and signature not in stored and token not in stored
    assert row["page"] == "/scorecard/W1/v2"


@pytest.mark.parametrize(("pasted", "message"), [
    ("hello there", "link: not a share link"),
    ("https://exam.example.com/share/", "link: not a share link"),
    (lambda key: make_token(key, "/x")[:-2] + "xx", "link: this share link is not valid"),
    (lambda key: make_token("another key", "/x"), "link: this share link is not valid"),
    (lambda key: make_token(key, "/x", now=time.time() - 8 * 86400),
     "link: this share link expired on "),
])
def test_a_link_that_cannot_be_revoked_is_said_and_nothing_is_stored(app, demo_db, pasted,
                                                                     message):
    before = revocations(demo_db)
    pasted = pasted(app.config["SECRET_KEY"]) if callable(pasted) else pasted
    assert revoke(logged_in(app), link=pasted).startswith(message)
    assert revocations(demo_db) == before


def test_only_an_admin_with_the_forms_token_revokes(app, demo_db):
    token = make_token(app.config["SECRET_KEY"], "/scorecard/W1/v2")
    before = revocations(demo_db)
    viewer = logged_in(app, VIEWER)
    assert viewer.post("/revoke-share", data={"csrf_token": login_csrf(viewer),
                                              "link": token}).status_code == 403
    holder = app.test_client()
    holder.get(f"/share/{token}")
    assert holder.post("/revoke-share", data={"csrf_token": login_csrf(holder),
                                              "link": token}).status_code == 403
    admin = logged_in(app)
    assert admin.post("/revoke-share", data={"link": token}).status_code == 400  # no form token
    assert admin.post("/revoke-share", data={"csrf_token": login_csrf(admin), "link": token},
                      headers={"Origin": "https://evil.example"}).status_code == 400
    assert revocations(demo_db) == before
    assert holder.get("/scorecard/W1/v2").status_code == 200


def test_a_revocation_the_store_cannot_answer_is_a_503_page_not_the_page(app, monkeypatch):
    """Fail closed: a share link's page is shown only once the store said it is not revoked."""
    guest = app.test_client()
    guest.get(f"/share/{make_token(app.config['SECRET_KEY'], '/scorecard/W3/v2')}")

    def away(*_args, **_kwargs):
        raise StoreUnavailable("the store is locked")

    monkeypatch.setattr(Store, "share_revocations", away)
    resp = guest.get("/scorecard/W3/v2")
    text = resp.get_data(as_text=True)
    assert resp.status_code == 503 and "<header>" in text and "Traceback" not in text
    assert "try again in a moment" in text and "pass rate" not in text


def test_a_grant_kept_before_links_had_ids_asks_to_open_the_link_again(app):
    """Such a grant (page → until) cannot be looked up among revocations: it is dropped."""
    guest = app.test_client()
    with guest.session_transaction() as session:
        session["shared"] = {"/scorecard/W3/v2": int(time.time()) + 86400}
    resp = guest.get("/scorecard/W3/v2")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


def test_a_page_revoked_as_the_dashboard_shows_it_covers_links_signed_percent_encoded(app):
    """LINE's links sign the path %-encoded (a CJK agent name); the page form sends it as
    Flask reads it, and `exam share revoke --page` may be given either."""
    from urllib.parse import quote

    signed = f"/scorecard/{quote('客服', safe='')}/v2"
    token = make_token(app.config["SECRET_KEY"], signed, now=time.time() - 5)
    assert app.test_client().get(f"/share/{token}").status_code == 302
    admin = logged_in(app)
    sent = admin.post("/revoke-share", data={"csrf_token": login_csrf(admin),
                                             "page": "/scorecard/客服/v2", "back": "/"})
    assert sent.status_code == 302
    assert is_revoked_page(app.test_client().get(f"/share/{token}"))


def test_a_links_revocation_is_deleted_once_its_link_has_expired_and_the_others_stay(
        app, demo_db):
    """A revocation only matters while its link could still open a page: once the link has
    expired (a day's margin for the instances' clocks), the next revocation written deletes
    its row. A current one stays and still refuses its link; one whose link expired within
    the margin, and a page's (which says nothing of how long its links work), stay too."""
    key, now = app.config["SECRET_KEY"], time.time()
    old = make_token(key, "/scorecard/W2/v1", days=1, now=now - 10 * 86400)
    just = make_token(key, "/scorecard/W2/v1", days=1, now=now - 86400 - 3600)
    current = make_token(key, "/scorecard/W2/v1", days=2)
    from exam.db.schema import share_revocations

    s = Store(demo_db)
    try:  # the rows as written back then, while the links worked
        with s.tx() as conn:
            for token in (old, just):
                link = decode_token(key, token)
                conn.execute(insert(share_revocations).values(
                    link=link.id, page=link.page, until=link.until, revoked_at=link.made + 60,
                    reason=""))
            page = conn.execute(insert(share_revocations).values(
                page="/scorecard/W2/v1", made_before=now - 20 * 86400,
                revoked_at=now - 20 * 86400, reason="").returning(share_revocations.c.id)
            ).scalar_one()
    finally:
        s.close()
    revoke(logged_in(app), link=current)  # a revocation written now
    rows = revocations(demo_db)
    assert link_id(old) not in {r["link"] for r in rows}
    assert {link_id(just), link_id(current)} <= {r["link"] for r in rows}
    assert page in {r["id"] for r in rows}
    assert is_revoked_page(app.test_client().get(f"/share/{current}"))
