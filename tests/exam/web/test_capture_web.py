"""POST /api/capture and the reply viewer's "make this a question", through Flask's test client
(the n8n API a fake on 127.0.0.1)."""

from __future__ import annotations

import datetime as dt
import json
import re
import time

import pytest
import yaml

from exam.records import AttemptRow, CellRow
from exam.web.app import create_app
from tests.fakes.n8n_api import AGENT_TOKEN, KEY, FakeN8nApi, n8n_execution

TOKEN, VIEWER = "admin-token-capture-1", "viewer-token-capture-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PHONE = "0912-345-678"


@pytest.fixture
def n8n():
    started = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    api = FakeN8nApi([n8n_execution("model-refused", "41",
                                    {"question": f"運費怎麼算？電話 {PHONE}"}, started)], [])
    yield api
    api.close()


@pytest.fixture
def site(tmp_path, n8n, monkeypatch):
    bank = tmp_path / "W2.json"
    bank.write_text(json.dumps({"agent": "W2", "questions": [
        {"case_no": "W2-12", "input": {"question": "運費？"}, "expect_facts": ["1000"]}]},
        ensure_ascii=False, indent=2), encoding="utf-8")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"W2": {
        "url": "http://127.0.0.1:9/webhook/w2-faq", "bank": str(bank),
        "headers": {"X-Exam-Token": "${W2_TOKEN}"},
        "n8n": {"api_url": n8n.url, "api_key": "${N8N_KEY}", "wait_s": 2}}}}), encoding="utf-8")
    monkeypatch.setenv("N8N_KEY", KEY)
    monkeypatch.setenv("W2_TOKEN", AGENT_TOKEN)
    app = create_app({"API_TOKEN": TOKEN, "VIEWER_TOKEN": VIEWER, "DB": str(tmp_path / "exam.db"),
                      "AGENTS": str(registry), "TESTING": True})
    return app, bank


def test_an_execution_is_captured_through_the_api(site):
    app, bank = site
    resp = app.test_client().post("/api/capture", headers=AUTH,
                                  json={"agent": "W2", "execution": "41"})
    assert resp.status_code == 201, resp.json
    assert resp.json["case_no"] == "W2-13" and resp.json["written"] is True
    assert resp.json["redacted"] == ["phone at input.question"]
    text = bank.read_text(encoding="utf-8")
    assert PHONE not in text and KEY not in text and AGENT_TOKEN not in text
    assert PHONE not in resp.get_data(as_text=True)
    q = json.loads(text)["questions"][-1]
    assert q["expect_facts"][0].startswith("TODO") and "n8n execution 41" in q["notes"]


def test_a_work_order_and_reply_are_captured_through_the_api(site):
    app, bank = site
    resp = app.test_client().post("/api/capture", headers=AUTH, json={
        "agent": "W2", "work_order": {"question": "可以貨到付款嗎？"},
        "reply": "可以的，我們提供貨到付款。", "origin": "LINE 👎 from staff", "dry_run": True})
    assert resp.status_code == 200, resp.json
    assert resp.json["written"] is False and resp.json["redacted"] == []
    assert resp.json["question"]["counterexamples"] == ["可以的，我們提供貨到付款。"]
    assert "LINE 👎 from staff" in resp.json["question"]["notes"]
    assert "W2-13" not in bank.read_text(encoding="utf-8")


@pytest.mark.parametrize("body, status, field, message", [
    ({"execution": "41"}, 400, "agent", "expected the name of an agent"),
    ({"agent": "W2"}, 400, None, "give execution"),
    ({"agent": "W2", "execution": "41", "reply": "x"}, 400, "execution", "not both"),
    ({"agent": "W2", "work_order": "x", "reply": "y"}, 400, "work_order", "a JSON object"),
    ({"agent": "W2", "work_order": {}, "reply": ""}, 400, "reply", "the reply as it was"),
    ({"agent": "W2", "execution": "ftp://x"}, 400, "execution", "not an execution id"),
    ({"agent": "W2", "execution": "999"}, 400, None, "n8n has no execution 999"),
    ({"agent": "W2", "executoin": "41"}, 400, "executoin", "unknown field"),
])
def test_bad_capture_requests_name_the_field(site, body, status, field, message):
    app, _ = site
    resp = app.test_client().post("/api/capture", headers=AUTH, json=body)
    assert resp.status_code == status and message in resp.json["error"], resp.json
    assert resp.json.get("field") == field


def test_an_unreadable_n8n_is_a_502_without_the_key(site, n8n):
    app, _ = site
    n8n.close()
    resp = app.test_client().post("/api/capture", headers=AUTH,
                                  json={"agent": "W2", "execution": "41"})
    assert resp.status_code == 502 and "cannot reach the n8n API" in resp.json["error"]
    assert KEY not in resp.get_data(as_text=True)


def test_the_viewer_token_cannot_capture(site):
    app, bank = site
    before = bank.read_text(encoding="utf-8")
    resp = app.test_client().post("/api/capture", json={"agent": "W2", "execution": "41"},
                                  headers={"Authorization": f"Bearer {VIEWER}"})
    assert resp.status_code == 403
    assert bank.read_text(encoding="utf-8") == before


def stored_reply(app, bank) -> int:
    """A run of W2-12 whose reply was wrong; its id."""
    from exam.bank import load_bank
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run
    from exam.store import Store

    store = Store(app.config["DB"])
    try:
        run_id = create_run(store, Agent(name="W2", url="http://127.0.0.1:9/", bank=str(bank)),
                            "v1")
        body = json.dumps({"answer": f"全館免運費喔！客服 {PHONE}"}, ensure_ascii=False)
        digest = load_bank(str(bank)).by_case()["W2-12"].digest
        store.record_cell(CellRow(run_id, "W2-12", 1, digest, "ok", "", "全館免運費喔！", None,
                                  False, None, 1, 1, 10, 5.0, time.time()),
                          [AttemptRow(1, time.time(), 200, 5.0, "", "application/json", body,
                                      len(body.encode()), False)])
        store.set_run_status(run_id, "done")
    finally:
        store.close()
    return run_id


def logged_in(app, token: str):
    client = app.test_client()
    form = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert client.post("/login", data={"token": token, "csrf_token": csrf}).status_code == 302
    return client


def test_make_this_a_question_on_the_reply_viewer(site):
    app, bank = site
    run_id = stored_reply(app, bank)
    client = logged_in(app, TOKEN)
    page = client.get(f"/reply/{run_id}/W2-12/1").get_data(as_text=True)
    form = re.search(r'<form method="post" id="capture" action="([^"]+)">.*?'
                     r'name="csrf_token" value="([^"]+)"', page, re.S)
    assert form and "Make this a question" in page
    action, csrf = form.groups()
    # without the form's CSRF token, nothing is written
    assert client.post(action, data={}).status_code == 400
    assert "W2-13" not in bank.read_text(encoding="utf-8")
    resp = client.post(action, data={"csrf_token": csrf})
    assert resp.status_code == 302
    said = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "W2-13 drafted in" in said and "phone at reply.answer" in said
    q = json.loads(bank.read_text(encoding="utf-8"))["questions"][-1]
    assert q["input"] == {"question": "運費？"}
    assert q["counterexamples"] == [{"answer": "全館免運費喔！客服 [redacted phone]"}]
    assert f"run {run_id} (W2 v1), W2-12 #1" in q["notes"]


def test_a_viewer_sees_no_button_and_cannot_post(site):
    app, bank = site
    run_id = stored_reply(app, bank)
    client = logged_in(app, VIEWER)
    page = client.get(f"/reply/{run_id}/W2-12/1").get_data(as_text=True)
    assert "Make this a question" not in page
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # the log-out form's
    resp = client.post(f"/reply/{run_id}/W2-12/1/capture", data={"csrf_token": csrf})
    assert resp.status_code == 403
    assert len(json.loads(bank.read_text(encoding="utf-8"))["questions"]) == 1


def test_capture_needs_the_admin_token(site):
    app, bank = site
    before = bank.read_text(encoding="utf-8")
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        resp = app.test_client().post("/api/capture", json={"agent": "W2", "execution": "41"},
                                      headers=headers)
        assert resp.status_code == 401
    assert bank.read_text(encoding="utf-8") == before


def test_an_executions_url_is_read_for_its_id_only_never_called(site, n8n):
    """The API never sends to a URL a caller supplies: the key goes to the registry's n8n."""
    app, _ = site
    resp = app.test_client().post("/api/capture", headers=AUTH, json={
        "agent": "W2", "execution": "http://127.0.0.1:9/workflow/wfW2/executions/41",
        "dry_run": True})
    assert resp.status_code == 200, resp.json
    assert any(p.startswith("/api/v1/executions/41") for p in n8n.seen)
