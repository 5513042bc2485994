"""The shipped n8n workflows (webhooks/n8n/) on the session's stock n8n 2.40.7, set up the way
docs/service.md says: a Header Auth credential for the API, the Settings node filled in once,
published. Each is run end to end against `exam serve` (a real process with its worker) and
agents on 127.0.0.1: after-change on a ship and on a hold, the watch on its schedule, the
capture of a failed AI Agent execution, and the demo FAQ specialist answering an exam.

The n8n the suite starts sets no N8N_BLOCK_ENV_ACCESS_IN_NODE: `$env` is refused, as on any
stock n8n 2.x (the first test shows it), so a workflow that read it would fail here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import yaml
from click.testing import CliRunner

from exam.cli.main import main
from exam.store import Store
from tests.conftest import ROOT
from tests.fakes.line_api import FakeLineApi
from tests.fakes.server import QuietHandler, send_json, serve
from tests.processes import free_port, wait_up

SHIPPED = ROOT / "webhooks" / "n8n"
TOKEN = "exam-api-token-n8n-tests-3c9b"
HOOK_SECRET = "capture-hook-secret-5a7d"  # the capture webhook's Header Auth value
FAQ_SECRET = "faq-token-secret-2e4f"  # the demo FAQ specialist's
PASS, FAIL = "答案：訂單 A10302 目前備貨中", "答案：訂單 A10302 已出貨"
DONE = {"success", "error", "crashed", "canceled"}


class Agents:
    """Agents S, H and W on one server (``/hook/<name>``): each task answers PASS unless the
    test has made it FAIL (``broken``); every call is counted."""

    def __init__(self):
        self.broken: set[tuple[str, str]] = set()
        self.calls: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_POST(self):
                order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = (self.path.rsplit("/", 1)[-1], order["task_id"])
                with owner.lock:
                    owner.calls[key] = owner.calls.get(key, 0) + 1
                    text = FAIL if key in owner.broken else PASS
                send_json(self, 200, {"answer": text, "status": "ok"})

        self.served = serve(Handler).start()

    def url(self, name: str) -> str:
        return f"{self.served.url}/hook/{name}"


def bank(folder: Path, name: str, n: int = 2) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"agent": name, "questions": [
        {"case_no": f"{name}-{i:02d}", "category": "n8n",
         "input": {"task_id": f"{name}-{i:02d}", "question": "A10302 到哪了？"},
         "expect_status": "ok", "expect_facts": ["備貨中"], "expect_forbidden": ["已出貨"]}
        for i in range(1, n + 1)]}, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(n8n, tmp_path_factory):
    """`exam serve` on a free port (its worker a thread), its store and registry, the agents,
    and a fake LINE API it pushes to."""
    folder = tmp_path_factory.mktemp("workflows")
    agents = Agents()
    line = FakeLineApi().__enter__()
    registry = folder / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {
        **{name: {"url": agents.url(name), "bank": str(bank(folder, name)), "timeout_s": 30}
           for name in ("S", "H", "W")},
        # the AI Agent workflow of tests/n8n/workflows, its executions read through n8n's API
        "T": {"url": f"{n8n.url}/webhook/exam-agent", "bank": str(bank(folder, "T", 1)),
              "timeout_s": 90, "n8n": {"api_url": n8n.url, "api_key": "${N8N_TEST_API_KEY}",
                                       "wait_s": 30}}}}), encoding="utf-8")
    port = free_port()
    env = {**os.environ, "EXAM_API_TOKEN": TOKEN, "EXAM_DB": str(folder / "exam.db"),
           "EXAM_AGENTS": str(registry), "N8N_TEST_API_KEY": n8n.api_key,
           "LINE_CHANNEL_ACCESS_TOKEN": "line-token-n8n-tests", "LINE_GROUP_ID": "Cworkflows",
           "LINE_API_HOST": line.host, "EXAM_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    log = folder / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "exam", "serve", "--port", str(port)],
                                  env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_up(f"http://127.0.0.1:{port}/healthz", server, log)
        yield {"url": f"http://127.0.0.1:{port}", "env": env, "agents": agents, "line": line,
               "folder": folder, "db": env["EXAM_DB"]}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
        line.__exit__()
        agents.served.close()


# -- n8n's public API, as a script that sets a workflow up would use it ----------------------

def api(n8n, method: str, path: str, **kw) -> requests.Response:
    r = requests.request(method, f"{n8n.url}/api/v1{path}", timeout=60,
                         headers={"X-N8N-API-KEY": n8n.api_key}, **kw)
    assert r.status_code < 300, f"{method} {path}: HTTP {r.status_code} {r.text[:500]}"
    return r


def credential(n8n, name: str, header: str, value: str) -> str:
    """A Header Auth credential (docs/service.md, step 2); its id."""
    return api(n8n, "POST", "/credentials", json={
        "name": name, "type": "httpHeaderAuth",
        "data": {"name": header, "value": value}}).json()["id"]


def set_up(n8n, file: str, settings: dict, creds: dict[str, str],
           tweak=None) -> str:
    """Import a shipped workflow (*Import from File*), pick the credentials (by the name the
    file gives them), fill in its Settings node, publish it; its id."""
    wf = json.loads((SHIPPED / file).read_text(encoding="utf-8"))
    for node in wf["nodes"]:
        for kind, ref in node.get("credentials", {}).items():
            node["credentials"][kind] = {"id": creds[ref["name"]], "name": ref["name"]}
        if node["name"] == "Settings":
            for a in node["parameters"]["assignments"]["assignments"]:
                if a["name"] in settings:
                    a["value"] = settings[a["name"]]
    if tweak is not None:
        tweak(wf)
    made = api(n8n, "POST", "/workflows", json={
        "name": wf["name"], "nodes": wf["nodes"], "connections": wf["connections"],
        "settings": wf["settings"]}).json()
    publish(n8n, made["id"], [n["parameters"]["path"] for n in wf["nodes"]
                              if n["type"] == "n8n-nodes-base.webhook"])
    return made["id"]


def publish(n8n, workflow_id: str, paths: list[str], timeout: float = 60) -> None:
    """Activate a workflow and wait until n8n has registered its webhooks (a second or so
    after the activation answers; a POST before that is a 404). A GET tells without running
    it: n8n says the path is registered, for POST."""
    api(n8n, "POST", f"/workflows/{workflow_id}/activate")
    deadline = time.monotonic() + timeout
    for path in paths:
        while "not registered for GET" not in requests.get(f"{n8n.url}/webhook/{path}",
                                                            timeout=10).text:
            assert time.monotonic() < deadline, f"webhook {path} not registered"
            time.sleep(0.3)


def executions(n8n, workflow_id: str) -> list[dict]:
    return api(n8n, "GET", "/executions", params={"workflowId": workflow_id,
                                                  "includeData": "true"}).json()["data"]


def finished(n8n, workflow_id: str, count: int = 1, timeout: float = 240) -> list[dict]:
    """The workflow's first ``count`` executions once they ended, oldest first."""
    deadline = time.monotonic() + timeout
    while True:
        found = sorted(executions(n8n, workflow_id), key=lambda e: int(e["id"]))[:count]
        if len(found) == count and all(e["finished"] or e["status"] in DONE for e in found):
            return found
        assert time.monotonic() < deadline, f"no finished execution of {workflow_id}: {found}"
        time.sleep(1)


def ran(execution: dict) -> set[str]:
    return set(execution["data"]["resultData"]["runData"])


def error_of(execution: dict) -> str:
    return (execution["data"]["resultData"].get("error") or {}).get("message", "")


@pytest.fixture(scope="module")
def api_credential(n8n):
    name = "agent-exam API (Authorization: Bearer …)"
    return {name: credential(n8n, name, "Authorization", f"Bearer {TOKEN}")}


def exam(world, *args: str):
    return CliRunner().invoke(main, list(args), env=world["env"], catch_exceptions=False)


# -- the n8n is stock ---------------------------------------------------------------------

def test_this_n8n_refuses_env_in_expressions_as_a_stock_n8n_does(n8n):
    assert "N8N_BLOCK_ENV_ACCESS_IN_NODE" not in n8n.env
    made = api(n8n, "POST", "/workflows", json={
        "name": "reads $env", "settings": {"executionOrder": "v1"},
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
             "position": [0, 0], "webhookId": "0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f60",
             "parameters": {"httpMethod": "POST", "path": "reads-env",
                            "responseMode": "responseNode", "options": {}}},
            {"name": "Answer", "type": "n8n-nodes-base.respondToWebhook", "typeVersion": 1.1,
             "position": [220, 0], "parameters": {
                 "respondWith": "json", "responseBody": "={{ { home: $env.HOME } }}",
                 "options": {}}}],
        "connections": {"Hook": {"main": [[{"node": "Answer", "type": "main",
                                            "index": 0}]]}}}).json()
    publish(n8n, made["id"], ["reads-env"])
    r = requests.post(f"{n8n.url}/webhook/reads-env", json={}, timeout=60)
    assert r.status_code == 500 and n8n.folder.name not in r.text
    (run,) = finished(n8n, made["id"])
    assert "access to env vars denied" in error_of(run)
    api(n8n, "POST", f"/workflows/{made['id']}/deactivate")


# -- after a change -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def after_change(n8n, world, api_credential):
    wf_id = set_up(n8n, "run-exam-after-change.json",
                   {"exam_url": world["url"] + "/", "wait_seconds": 2}, api_credential)
    yield wf_id
    api(n8n, "POST", f"/workflows/{wf_id}/deactivate")


def test_after_change_takes_change_is_safe_on_a_ship_and_records_it(n8n, world, after_change):
    assert exam(world, "run", "S", "--version", "v1", "--repeats", "3").exit_code == 0
    r = requests.post(f"{n8n.url}/webhook/after-change", timeout=60,
                      json={"agent": "S", "new": "v2", "repeats": 3})
    assert r.status_code == 200, r.text
    (run,) = finished(n8n, after_change)
    assert run["status"] == "success", error_of(run)
    assert {"Change is safe", "Record shipped"} <= ran(run) and "Block the change" not in ran(run)
    compared = run["data"]["resultData"]["runData"]["Compare versions"][0]["data"]["main"][0]
    assert compared[0]["json"]["verdict"] == "ship"
    store = Store(world["db"])
    try:
        (record,) = store.ship_records("S")
    finally:
        store.close()
    assert (record.version, record.shipped_by) == ("v2", "n8n after-change")
    assert record.reason == "verdict ship vs v1, last shipped"


def test_after_change_takes_block_the_change_on_a_hold(n8n, world, after_change):
    assert exam(world, "run", "H", "--version", "v1", "--repeats", "4").exit_code == 0
    world["agents"].broken.add(("H", "H-01"))
    before = len(executions(n8n, after_change))
    r = requests.post(f"{n8n.url}/webhook/after-change", timeout=60,
                      json={"agent": "H", "new": "v2", "repeats": 4})
    assert r.status_code == 200, r.text
    run = finished(n8n, after_change, before + 1)[-1]
    assert run["status"] == "error" and "Block the change" in ran(run)
    assert {"Change is safe", "Record shipped"}.isdisjoint(ran(run))
    assert error_of(run).startswith("verdict hold: ") and "H-01" in error_of(run)
    store = Store(world["db"])
    try:
        assert store.ship_records("H") == []
    finally:
        store.close()


# -- after it ships: the watch on its schedule ----------------------------------------------

def test_the_watch_workflow_on_its_schedule_finds_the_drift_and_pushes_it_to_line(
        n8n, world, api_credential):
    assert exam(world, "run", "W", "--version", "v1", "--repeats", "6").exit_code == 0
    world["agents"].broken.add(("W", "W-01"))  # the same label answers otherwise now

    def every_20_seconds(wf):  # the one change a test needs: it cannot wait for 07:00
        trigger = next(n for n in wf["nodes"] if n["type"].endswith("scheduleTrigger"))
        trigger["parameters"]["rule"] = {"interval": [{"field": "seconds",
                                                       "secondsInterval": 20}]}

    wf_id = set_up(n8n, "watch-shipped-version.json",
                   {"exam_url": world["url"], "agent": "W", "notify": "line",
                    "wait_seconds": 2}, api_credential, every_20_seconds)
    try:
        (run,) = finished(n8n, wf_id, timeout=300)
    finally:
        api(n8n, "POST", f"/workflows/{wf_id}/deactivate")
    assert run["status"] == "error" and "Drift or cannot tell" in ran(run), error_of(run)
    assert "As shipped" not in ran(run)
    assert "verdict hold" in error_of(run) and "W-01" in error_of(run)
    step = run["data"]["resultData"]["runData"]["Watch step"][-1]["data"]["main"][0][0]["json"]
    assert step["drift"] == ["W-01"] and step["watch"]["asked_again"] == ["W-01"]
    # W-02 answered as it did when v1 shipped: asked once; W-01 again until it held
    first, *later = step["watch"]["rounds"]
    assert first["questions"] == ["W-01", "W-02"] and first["repeats"] == 1
    assert later and all(r["questions"] == ["W-01"] for r in later)
    assert [n["status"] for n in step["notified"]] == ["delivered"]
    # once per watch (the schedule may have started another since: its own push)
    mine = f"watch {step['watch_id']} ("
    pushes = [p for p in world["line"].pushes()
              if mine in json.dumps(p["body"], ensure_ascii=False)]
    assert len(pushes) == 1, world["line"].pushes()
    said = json.dumps(pushes[0]["body"], ensure_ascii=False)
    assert "HOLD" in said and "v1 as it shipped" in said


# -- a bad answer becomes a question -------------------------------------------------------

def test_the_capture_workflow_files_a_failed_ai_agent_execution_as_a_draft(
        n8n, world, api_credential):
    phone = "0912-345-678"
    failed = requests.post(f"{n8n.url}/webhook/exam-agent", timeout=90, json={
        "question": f"[fail] what is 6*7? call me on {phone}"})
    assert failed.status_code == 500, failed.text
    exec_id = str(failed.json()["executionId"])
    hook = "agent-exam capture token (X-Exam-Token)"
    creds = {**api_credential, hook: credential(n8n, hook, "X-Exam-Token", HOOK_SECRET)}
    wf_id = set_up(n8n, "capture-bad-answer.json", {"exam_url": world["url"]}, creds)
    url = f"{n8n.url}/webhook/exam-capture"
    body = {"agent": "T", "execution": exec_id, "origin": "LINE 👎 from staff"}
    refused = requests.post(url, json=body, timeout=60)
    assert refused.status_code in (401, 403), refused.text  # no token, no question
    r = requests.post(url, json=body, timeout=90, headers={"X-Exam-Token": HOOK_SECRET})
    assert r.status_code == 201, r.text
    assert r.json()["case_no"] == "T-02" and r.json()["written"] is True
    assert "phone at input.question" in r.json()["redacted"]
    text = (world["folder"] / "T.json").read_text(encoding="utf-8")
    for secret in (phone, n8n.api_key, TOKEN, HOOK_SECRET):
        assert secret not in text
    draft = json.loads(text)["questions"][-1]
    assert draft["counterexamples"] == ["Bad request - please check your parameters"]
    assert f"n8n execution {exec_id}" in draft["notes"]
    # agent-exam's refusal comes back as it is: the field named, with its status
    bad = requests.post(url, json={"agent": "nobody", "execution": exec_id}, timeout=60,
                        headers={"X-Exam-Token": HOOK_SECRET})
    assert bad.status_code == 400 and bad.json()["field"] == "agent"
    api(n8n, "POST", f"/workflows/{wf_id}/deactivate")


# -- the demo specialist, set up as docs/n8n.md says ---------------------------------------

def test_the_demo_faq_specialist_answers_an_exam_as_imported(n8n, world, tmp_path):
    name = "agent-exam token (X-Exam-Token)"
    wf_id = set_up(n8n, "demo-w2-faq-specialist.json", {},
                   {name: credential(n8n, name, "X-Exam-Token", FAQ_SECRET)})
    env = {**os.environ, "EXAM_AGENT_TOKEN": FAQ_SECRET, "EXAM_DB": str(tmp_path / "faq.db")}
    registry = tmp_path / "agents.yaml"
    made = CliRunner().invoke(main, [
        "init", f"{n8n.url}/webhook/w2-faq", "--name", "FAQ", "--question", "運費怎麼算？",
        "--header", "X-Exam-Token: ${EXAM_AGENT_TOKEN}", "--agents", str(registry),
        "--bank", str(tmp_path / "FAQ.yaml")],
        env=env, catch_exceptions=False)
    assert made.exit_code == 0, made.output
    entry = yaml.safe_load(registry.read_text(encoding="utf-8"))["agents"]["FAQ"]
    assert entry["headers"] == {"X-Exam-Token": "${EXAM_AGENT_TOKEN}"}
    assert FAQ_SECRET not in registry.read_text(encoding="utf-8")
    faq = tmp_path / "FAQ.json"
    faq.write_text(json.dumps({"agent": "FAQ", "questions": [
        {"case_no": "FAQ-01", "input": {"question": "運費怎麼算？"},
         "expect_facts": ["1000", "80"], "expect_status": "ok"},
        {"case_no": "FAQ-02", "input": {"question": "可以貨到付款嗎？"},
         "expect_facts": ["不提供貨到付款"], "expect_forbidden": ["可以貨到付款"]}]},
        ensure_ascii=False), encoding="utf-8")
    entry["bank"] = str(faq)
    registry.write_text(yaml.safe_dump({"agents": {"FAQ": entry}}), encoding="utf-8")
    checked = CliRunner().invoke(main, ["run", "FAQ", "--version", "demo", "--agents",
                                        str(registry)], env=env, catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    refused = requests.post(f"{n8n.url}/webhook/w2-faq", json={"question": "運費"}, timeout=60)
    assert refused.status_code in (401, 403)
    api(n8n, "POST", f"/workflows/{wf_id}/deactivate")
