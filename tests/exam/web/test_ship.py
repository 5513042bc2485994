"""Shipping by hand from the API and the dashboard: recorded with who and why, the baseline
from then on; the dashboard's form needs the admin and its CSRF token."""

from __future__ import annotations

import re

import pytest

from exam.web.app import create_app

TOKEN = "admin-token-ship"
VIEWER = "viewer-token-ship"
CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major")]


@pytest.fixture
def held(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp"})
    return history


@pytest.fixture
def app(held):
    return create_app({"API_TOKEN": TOKEN, "VIEWER_TOKEN": VIEWER,
                       "DB": str(held.tmp / "exam.db")})


def _log_in(client, token):
    form = client.get("/login").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert client.post("/login", data={"token": token, "csrf_token": csrf}).status_code == 302


def test_the_api_records_a_ship_and_reads_the_shipped_version(app, held):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with app.test_client() as client:
        before = client.get("/api/agents/A/shipped", headers=auth).json
        assert before["shipped"]["version"] == "v1" and before["shipped"]["how"] == "first"
        made = client.post("/api/agents/A/ship", headers=auth,
                           json={"version": "v2", "reason": "Q-01 accepted", "by": "ann"})
        assert made.status_code == 201, made.json
        assert made.json["shipped"]["version"] == "v2"
        assert made.json["decisions"][0]["shipped_by"] == "ann"
        assert made.json["decisions"][0]["source"] == "api"
        viewer = client.post("/api/agents/A/ship", json={"version": "v1"},
                             headers={"Authorization": f"Bearer {VIEWER}"})
        assert viewer.status_code == 403
        for body, field in (({"version": "v9"}, "version"), ({"version": 3}, "version"),
                            ({"version": "v1", "why": "x"}, "why"),
                            ({"version": "v1", "reason": "x" * 501}, "reason")):
            resp = client.post("/api/agents/A/ship", headers=auth, json=body)
            assert resp.status_code in (400, 404) and resp.json["field"] == field, resp.json
    assert [r.version for r in held.store.ship_records("A")] == ["v2"]


def test_the_overview_ships_by_hand_with_a_csrf_token(app, held):
    with app.test_client() as client:
        _log_in(client, TOKEN)
        page = client.get("/").text
        assert 'id="shipped-A">Shipped: <b>v1</b>' in page
        form = re.search(r'<form method="post" action="/agents/A/ship".*?</form>', page, re.S)[0]
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        refused = client.post("/agents/A/ship", data={"version": "v2", "reason": "no token"})
        assert refused.status_code in (400, 403) and held.store.ship_records("A") == []
        done = client.post("/agents/A/ship", data={"version": "v2", "reason": "accepted",
                                                   "by": "bo", "csrf_token": csrf},
                           headers={"Origin": "http://localhost"})
        assert done.status_code == 302
        (rec,) = held.store.ship_records("A")
        assert (rec.version, rec.shipped_by, rec.reason, rec.source) == (
            "v2", "bo", "accepted", "dashboard")
        after = client.get("/").text
        assert 'id="shipped-A">Shipped: <b>v2</b>' in after and "shipped by hand by bo" in after
    with app.test_client() as viewer:
        _log_in(viewer, VIEWER)
        assert 'action="/agents/A/ship"' not in viewer.get("/").text
