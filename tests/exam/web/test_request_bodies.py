"""What any route answers to a body it cannot read, a method it does not take, a path that is
not there: a 4xx that says why (issue 33: 100,000 nested ``[`` to /api/runs/7/exclude was a
500 with a RecursionError; a 405 had no ``Allow``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest

from exam.web.app import create_app
from tests.exam.reports.test_graded_runs import small_history

TOKEN = "bodies-token-6a0c"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LINE_SECRET = "line-secret-for-bodies"
NESTED = "[" * 100_000
NESTED_OBJECTS = '{"a":' * 50_000 + "1" + "}" * 50_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bodies")
    history = small_history(tmp)  # runs 1 and 2 of agent A
    yield create_app({"API_TOKEN": TOKEN, "DB": str(tmp / "exam.db"), "TESTING": True})
    history.store.close()


def _post_routes(app) -> list[str]:
    """Every POST route of the URL map, its arguments filled with what is stored."""
    values = {"int": "1", "path": "A-01"}  # any other converter: a name, "A"
    return sorted(re.sub(r"<(?:(\w+):)?\w+>", lambda m: values.get(m.group(1), "A"), rule.rule)
                  for rule in app.url_map.iter_rules() if "POST" in rule.methods)


def test_the_url_map_has_the_post_routes_this_test_is_about(app):
    routes = _post_routes(app)
    assert {"/api/runs", "/api/runs/1/exclude", "/line/webhook", "/login"} <= set(routes)
    assert not any("<" in r for r in routes), routes


@pytest.mark.parametrize("body", [NESTED, NESTED_OBJECTS], ids=["lists", "objects"])
def test_deeply_nested_json_to_every_post_route_is_a_400_saying_so(app, monkeypatch, body):
    monkeypatch.setenv("LINE_CHANNEL_SECRET", LINE_SECRET)
    signature = base64.b64encode(hmac.new(LINE_SECRET.encode(), body.encode(),
                                          hashlib.sha256).digest()).decode()
    client = app.test_client()
    wrong = []
    for path in _post_routes(app):
        resp = client.post(path, data=body, content_type="application/json",
                           headers={**AUTH, "X-Line-Signature": signature})
        if resp.status_code != 400 or "nested deeper than 64 levels" not in resp.text:
            wrong.append((path, resp.status_code, resp.text[:120]))
    assert wrong == []


def test_the_api_says_it_in_json(app):
    resp = app.test_client().post("/api/runs/1/exclude", data=NESTED,
                                  content_type="application/json", headers=AUTH)
    assert resp.status_code == 400
    assert resp.json["error"].startswith("the JSON body is nested deeper than")


def test_json_nested_as_deep_as_a_body_may_be_is_read(app):
    body = '{"reason": ' + "[" * 60 + '"x"' + "]" * 60 + "}"
    resp = app.test_client().post("/api/runs/1/exclude", data=body,
                                  content_type="application/json", headers=AUTH)
    assert resp.status_code == 400 and "expected {" in resp.json["error"]  # read, then refused


@pytest.mark.parametrize("method, path, allowed", [
    ("DELETE", "/api/runs", {"GET", "HEAD", "OPTIONS", "POST"}),
    ("PUT", "/api/runs/1/exclude", {"OPTIONS", "POST"}),
    ("POST", "/scorecard/A/v1", {"GET", "HEAD", "OPTIONS"}),
    ("GET", "/logout", {"OPTIONS", "POST"}),
])
def test_a_405_says_which_methods_the_path_takes(app, method, path, allowed):
    resp = app.test_client().open(path, method=method, headers=AUTH)
    assert resp.status_code == 405
    assert {m.strip() for m in resp.headers["Allow"].split(",")} == allowed


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/no-such-page", "/api/no-such-route", "/scorecard"])
def test_a_path_that_is_not_there_is_a_404_whatever_the_method(app, method, path):
    resp = app.test_client().open(path, method=method, headers=AUTH)
    assert resp.status_code == 404, (method, path, resp.status_code)
