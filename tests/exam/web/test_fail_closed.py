"""The service fails closed: settings of the wrong kind stop it, forms only come from its own
pages, and every response tells browsers not to frame it or guess its content type."""

from __future__ import annotations

import re

import pytest

from exam.errors import ExamError
from exam.web.app import create_app
from tests.exam.web.conftest import TOKEN

CASES = [("Q-01", "c", "major")]
EVIL = "https://evil.example"


# -- boolean settings -------------------------------------------------------------------

@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for key in ("EXAM_API_TOKEN", "EXAM_LOCAL_DEV", "EXAM_CONFIG", "EXAM_SECRET_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("EXAM_DB", str(tmp_path / "exam.db"))
    return monkeypatch


@pytest.mark.parametrize("value", ["False", "false", "FALSE", "no", "No", "off", "OFF", "0",
                                   '"false"', " no "])
def test_a_false_local_dev_without_a_token_does_not_start(clean_env, value):
    clean_env.setenv("EXAM_LOCAL_DEV", value)
    with pytest.raises(ExamError, match="EXAM_API_TOKEN is not set"):
        create_app()


@pytest.mark.parametrize("value", ["true", "True", "YES", "on", "1"])
def test_a_true_local_dev_starts_without_a_token(clean_env, value):
    clean_env.setenv("EXAM_LOCAL_DEV", value)
    assert create_app().config["LOCAL_DEV"] is True


@pytest.mark.parametrize(("key", "value"), [
    ("EXAM_LOCAL_DEV", "maybe"), ("EXAM_LOCAL_DEV", "2"), ("EXAM_LOCAL_DEV", ""),
    ("EXAM_LOCAL_DEV", "nein"), ("EXAM_LOCAL_DEV", "1.0"), ("EXAM_LOCAL_DEV", "[]"),
    ("EXAM_SESSION_COOKIE_SECURE", "sure"), ("EXAM_TESTING", "nope"), ("EXAM_DEBUG", "y"),
])
def test_a_bad_boolean_stops_the_service_naming_the_variable(clean_env, key, value):
    clean_env.setenv("EXAM_API_TOKEN", TOKEN)
    clean_env.setenv(key, value)
    with pytest.raises(ExamError) as err:
        create_app()
    assert str(err.value).startswith(f"{key}: expected one of 1, 0, true, false, yes, no, on, off")


def test_a_bad_boolean_in_the_config_file_names_the_file_and_key(clean_env, tmp_path):
    path = tmp_path / "exam.toml"
    path.write_text('LOCAL_DEV = "nope"\n')
    clean_env.setenv("EXAM_CONFIG", str(path))
    with pytest.raises(ExamError, match=re.escape(f"{path}: LOCAL_DEV: expected one of")):
        create_app()


@pytest.mark.parametrize(("key", "value", "message"), [
    ("EXAM_MAX_REPEATS", "ten", "EXAM_MAX_REPEATS: expected a whole number ≥ 1, found 'ten'"),
    ("EXAM_TRUSTED_PROXIES", "-1", "EXAM_TRUSTED_PROXIES: expected a whole number ≥ 0"),
    ("EXAM_LINE_SWEEP_SECONDS", "0.5", "EXAM_LINE_SWEEP_SECONDS: expected a whole number ≥ 0, "
                                       "found '0.5'"),
    ("EXAM_SESSION_COOKIE_SAMESITE", "None", "EXAM_SESSION_COOKIE_SAMESITE: expected Lax or "
                                             "Strict"),
])
def test_other_settings_of_the_wrong_kind_are_refused_by_name(clean_env, key, value, message):
    clean_env.setenv("EXAM_API_TOKEN", TOKEN)
    clean_env.setenv(key, value)
    with pytest.raises(ExamError, match=re.escape(message)):
        create_app()


@pytest.mark.parametrize(("value", "message"), [
    ("0", "found '0'"), ("-5", "found '-5'"), ("an hour", "found 'an hour'"), ("1.5", "found '1.5'"),
    ("", "found ''"), ("true", "found 'True'"),
])
def test_a_csrf_time_limit_of_the_wrong_kind_is_refused_by_name(clean_env, value, message):
    # it was taken as it came: 'none' (the documented value) or a string made every form,
    # the login's included, a 500 (Flask-WTF compares it with a number); 0 or less refused
    # every form as expired
    clean_env.setenv("EXAM_API_TOKEN", TOKEN)
    clean_env.setenv("EXAM_WTF_CSRF_TIME_LIMIT", value)
    with pytest.raises(ExamError, match=re.escape(
            "EXAM_WTF_CSRF_TIME_LIMIT: expected a whole number of seconds ≥ 1, or none (a form's "
            f"token lives as long as the session), {message}")):
        create_app()


@pytest.mark.parametrize(("value", "limit"), [("none", None), ("None", None), ("null", None),
                                              ("3600", 3600), ('"3600"', 3600), (" 60 ", 60)])
def test_a_csrf_time_limit_as_documented_lets_the_login_form_through(clean_env, value, limit):
    clean_env.setenv("EXAM_API_TOKEN", TOKEN)
    clean_env.setenv("EXAM_WTF_CSRF_TIME_LIMIT", value)
    app = create_app()
    assert app.config["WTF_CSRF_TIME_LIMIT"] == limit
    assert login(app.test_client()).status_code == 302


def test_a_csrf_time_limit_in_the_config_file_names_the_file_and_key(clean_env, tmp_path):
    path = tmp_path / "exam.toml"
    path.write_text('WTF_CSRF_TIME_LIMIT = "soon"\n')
    clean_env.setenv("EXAM_CONFIG", str(path))
    clean_env.setenv("EXAM_API_TOKEN", TOKEN)
    with pytest.raises(ExamError, match=re.escape(f"{path}: WTF_CSRF_TIME_LIMIT: expected a whole")):
        create_app()


def test_a_missing_config_file_is_named(clean_env, tmp_path):
    clean_env.setenv("EXAM_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ExamError, match="EXAM_CONFIG: .*nope.toml: cannot read"):
        create_app()


# -- login's next= ----------------------------------------------------------------------

def token_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, "the form carries no CSRF token"
    return found.group(1)


def login(client, next_: str | None = None):
    token = token_of(client.get("/login").get_data(as_text=True))
    query = {} if next_ is None else {"next": next_}
    return client.post("/login", query_string=query, data={"token": TOKEN, "csrf_token": token})


@pytest.mark.parametrize("target", [
    "/%09/evil.example", "/%0A/x", "/%0D%0A/x", "//evil.example", "/\\evil.example",
    "/%5Cevil.example", "https://evil.example/", "javascript:alert(1)", "/%20/evil.example",
    "\\\\evil.example", "/%7F/x", "evil.example", "",
])
def test_login_follows_only_local_paths(client, target):
    # the query string is sent as written: %09 reaches the app as a tab
    token = token_of(client.get("/login").get_data(as_text=True))
    resp = client.post(f"/login?next={target}", data={"token": TOKEN, "csrf_token": token})
    assert resp.status_code == 302
    assert resp.headers["Location"] == "/"


def test_login_follows_a_local_path(client):
    resp = login(client, "/scorecard/T/v1?x=1")
    assert resp.status_code == 302 and resp.headers["Location"] == "/scorecard/T/v1?x=1"


# -- CSRF -------------------------------------------------------------------------------

@pytest.fixture
def review_site(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    app = create_app({"API_TOKEN": TOKEN, "DB": str(history.tmp / "exam.db"), "TESTING": True})
    client = app.test_client()
    assert login(client).status_code == 302
    page = client.get("/review").get_data(as_text=True)
    key = re.search(r'name="key" value="([^"]+)"', page).group(1)
    return history, client, key, token_of(page)


def decision(key, **extra):
    return {"key": key, "decision": "fail", "reviewer": "mallory", "reason": "planted", **extra}


@pytest.mark.parametrize("headers", [
    {"Origin": EVIL}, {"Origin": "null"}, {"Referer": f"{EVIL}/page"},
    {"Origin": "http://localhost.evil.example"}, {},
])
def test_a_cookie_only_review_from_elsewhere_is_refused_and_stores_nothing(review_site, headers):
    history, client, key, _ = review_site
    resp = client.post("/review", data=decision(key), headers=headers)
    assert resp.status_code == 400 and "refused: " in resp.get_data(as_text=True)
    assert history.store.adjudications() == []


def test_a_stolen_token_does_not_help_another_origin(review_site):
    history, client, key, token = review_site
    resp = client.post("/review", data=decision(key, csrf_token=token), headers={"Origin": EVIL})
    assert resp.status_code == 400
    assert history.store.adjudications() == []


def test_the_review_form_from_the_page_itself_is_stored(review_site):
    history, client, key, token = review_site
    resp = client.post("/review", data=decision(key, csrf_token=token),
                       headers={"Origin": "http://localhost"})
    assert resp.status_code == 302
    assert [a["reviewer"] for a in history.store.adjudications()] == ["mallory"]


@pytest.mark.parametrize("origin", ["http://localhost", "HTTP://LOCALHOST:80"])
def test_the_same_origin_however_written_is_accepted(review_site, origin):
    history, client, key, token = review_site
    resp = client.post("/review", data=decision(key, csrf_token=token), headers={"Origin": origin})
    assert resp.status_code == 302


def test_a_script_with_the_bearer_token_needs_no_form_token(review_site):
    history, client, key, _ = review_site
    fresh = client.application.test_client()  # no cookie at all
    resp = fresh.post("/review", data=decision(key),
                      headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status_code == 302
    assert len(history.store.adjudications()) == 1


@pytest.mark.parametrize("headers", [{"Origin": EVIL}, {}])
def test_a_cross_site_logout_is_refused(review_site, headers):
    _, client, _, _ = review_site
    assert client.post("/logout", headers=headers).status_code == 400
    assert client.get("/").status_code == 200  # still logged in


def test_logout_from_the_page_works(review_site):
    _, client, _, token = review_site
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302
    assert client.get("/").status_code == 302


def test_a_login_form_from_elsewhere_is_refused(client):
    resp = client.post("/login", data={"token": TOKEN}, headers={"Origin": EVIL})
    assert resp.status_code == 400
    assert client.get("/").status_code == 302  # not logged in


def test_the_api_needs_no_csrf_token(client, auth):
    resp = client.post("/api/runs", json={"agent": "T", "version": "v1"},
                       headers={**auth, "Origin": EVIL})
    assert resp.status_code == 202


# -- cookies and headers ----------------------------------------------------------------

def session_cookie(resp) -> str:
    return next(h for h in resp.headers.getlist("Set-Cookie") if h.startswith("session="))


def test_the_session_cookie_is_samesite_lax_and_httponly(client):
    cookie = session_cookie(login(client))
    assert "SameSite=Lax" in cookie and "HttpOnly" in cookie and "Secure" not in cookie


def test_the_session_cookie_is_secure_over_https(app):
    client = app.test_client()
    page = client.get("/login", base_url="https://exam.example")
    assert "Secure" in session_cookie(page)


def test_behind_a_trusted_proxy_the_forwarded_scheme_decides(tmp_path, registry_path):
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"),
                      "AGENTS": str(registry_path), "TRUSTED_PROXIES": 1})
    resp = app.test_client().get("/login", headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in session_cookie(resp)


def nginx_headers(browser_host: str) -> dict[str, str]:
    """The headers deployment.md's nginx snippet sets, for a browser that asked for
    ``https://<browser_host>/`` (host and port, as the browser's Host header carries it)."""
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    snippet = re.search(r"```nginx\n(.*?)```", doc, re.S).group(1)
    nginx = {"$host": browser_host.split(":")[0], "$http_host": browser_host,  # nginx's meaning
             "$scheme": "https", "$proxy_add_x_forwarded_for": "203.0.113.9"}
    return {name: nginx[value] for name, value in
            re.findall(r"proxy_set_header\s+(\S+)\s+(\S+);", snippet)}


@pytest.mark.parametrize("public", ["exam.example.com", "exam.example.com:8443"])
def test_a_dashboard_form_works_behind_the_documented_nginx_on_any_port(tmp_path, registry_path,
                                                                         public):
    # nginx's $host drops the port: on 8443 every form was refused as sent from another site
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"),
                      "AGENTS": str(registry_path), "TRUSTED_PROXIES": 1})
    client = app.test_client()
    headers = nginx_headers(public)
    form = token_of(client.get("/login", headers=headers).get_data(as_text=True))
    resp = client.post("/login", data={"token": TOKEN, "csrf_token": form},
                       headers={**headers, "Origin": f"https://{public}"})
    assert resp.status_code == 302, resp.get_data(as_text=True)[-300:]
    assert resp.headers["Location"] in ("/", f"https://{public}/")


def test_forwarded_headers_are_ignored_without_a_trusted_proxy(client):
    resp = client.get("/login", headers={"X-Forwarded-Proto": "https"})
    assert "Secure" not in session_cookie(resp)


@pytest.mark.parametrize(("method", "path", "authed"), [
    ("GET", "/login", False), ("GET", "/", True), ("GET", "/healthz", False),
    ("GET", "/api/runs", True), ("GET", "/api/runs", False), ("GET", "/api/nope", True),
    ("POST", "/api/runs", True), ("POST", "/logout", False), ("GET", "/", False),
])
def test_every_response_refuses_framing_and_sniffing(client, auth, method, path, authed):
    resp = client.open(path, method=method, headers=auth if authed else {}, json={})
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    csp = resp.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
    # no script runs and nothing is fetched: default-src 'none', and nothing lets scripts back
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert "base-uri 'none'" in csp and "form-action 'self'" in csp
    assert resp.headers["Cache-Control"] == "no-store"  # no disk or proxy copy of a page


# -- sessions end with the token they were opened with ------------------------------------

def _rotated(tmp_path, **tokens):
    """An app over the same store with EXAM_SECRET_KEY set, as deployment.md advises."""
    return create_app({"DB": str(tmp_path / "exam.db"), "SECRET_KEY": "team-key",
                       "TESTING": True, **tokens})


def _cookie(app, token: str) -> str:
    client = app.test_client()
    form = token_of(client.get("/login").get_data(as_text=True))
    assert client.post("/login", data={"token": token, "csrf_token": form}).status_code == 302
    return client.get_cookie("session").value


def _opens(app, cookie: str) -> bool:
    client = app.test_client()
    client.set_cookie("session", cookie)
    return client.get("/runs").status_code == 200


@pytest.mark.parametrize("role", ["API_TOKEN", "VIEWER_TOKEN"])
def test_changing_a_token_ends_the_sessions_opened_with_it(tmp_path, role):
    """A leaked token is changed: the sessions it opened (the leaker's) end at once, though
    EXAM_SECRET_KEY (which signs the cookies and share links) stays the same."""
    before = {"API_TOKEN": "admin-old", "VIEWER_TOKEN": "viewer-old"}
    cookie = _cookie(_rotated(tmp_path, **before), before[role])
    assert _opens(_rotated(tmp_path, **before), cookie)  # another instance, same settings
    after = {**before, role: before[role].replace("old", "new")}
    assert not _opens(_rotated(tmp_path, **after), cookie)
    assert _opens(_rotated(tmp_path, **after), _cookie(_rotated(tmp_path, **after),
                                                      after[role]))  # the new token logs in


def test_changing_the_admin_token_keeps_share_links(tmp_path):
    from exam.share import make_token

    token = make_token("team-key", "/runs")
    client = _rotated(tmp_path, API_TOKEN="admin-new").test_client()
    assert client.get(f"/share/{token}").status_code == 302
    assert client.get("/runs").status_code == 200
