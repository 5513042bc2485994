"""Production shape: gunicorn serving create_app() plus an `exam worker`, over real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import requests

from tests.conftest import ROOT
from tests.exam.web.conftest import TOKEN
from tests.processes import gunicorn


def test_queue_a_run_over_http_and_read_the_scorecard(tmp_path, registry_path, fake_agent):
    env = {**os.environ, "EXAM_API_TOKEN": TOKEN, "EXAM_DB": str(tmp_path / "exam.db"),
           "EXAM_AGENTS": str(registry_path)}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    worker = subprocess.Popen([sys.executable, "-m", "exam", "worker"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with gunicorn(env, tmp_path / "gunicorn.log", workers=2) as base:
            assert requests.get(f"{base}/api/runs", timeout=30).status_code == 401
            resp = requests.post(f"{base}/api/runs", json={"agent": "T", "version": "v1"},
                                 headers=auth, timeout=30)
            assert resp.status_code == 202
            run_id = resp.json()["run_id"]
            deadline = time.monotonic() + 90
            status = None
            while time.monotonic() < deadline:
                status = requests.get(f"{base}/api/runs/{run_id}", headers=auth,
                                      timeout=30).json()
                if status["status"] == "done":
                    break
                time.sleep(0.2)
            assert status["status"] == "done", status
            card = requests.get(f"{base}/api/runs/{run_id}/scorecard", headers=auth,
                                timeout=30).json()["scorecards"][0]
            assert card["verdicts"]["pass"] == 2 and card["run_status"]["http_error"] == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()


def test_the_services_own_log_lines_reach_gunicorns_error_log(tmp_path):
    """An operator looking for why LINE got no answer finds the reason in gunicorn's log."""
    import base64
    import hashlib
    import hmac
    import json

    secret = "line-channel-secret-for-the-test"
    env = {**os.environ, "EXAM_API_TOKEN": TOKEN, "EXAM_DB": str(tmp_path / "exam.db"),
           "LINE_CHANNEL_SECRET": secret, "EXAM_LINE_ALLOWED_GROUPS": "Callowed",
           "LINE_GROUP_ID": "Callowed"}
    log = tmp_path / "gunicorn.log"
    body = json.dumps({"destination": "U0", "events": [{
        "type": "message", "mode": "active", "timestamp": 1764400000000,
        "webhookEventId": "01TESTGUNICORNLOG000000001",
        "deliveryContext": {"isRedelivery": False},
        "source": {"type": "group", "groupId": "Cstranger", "userId": "U1"},
        "replyToken": "r1", "message": {"type": "text", "id": "1", "quoteToken": "q",
                                        "text": "exam status"}}]}).encode()
    signature = base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest())
    with gunicorn(env, log, workers=1, threads=2, cwd=tmp_path) as base:
        resp = requests.post(f"{base}/line/webhook", data=body, timeout=30,
                             headers={"Content-Type": "application/json",
                                      "X-Line-Signature": signature.decode()})
        assert resp.status_code == 200
        deadline = time.monotonic() + 60  # handled on a thread after the 200
        line = "[INFO] LINE command from a group that is not allowed; ignored"
        while line not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert line in log.read_text(), log.read_text()


def test_exam_serve_runs_gunicorn_without_the_development_banner(tmp_path):
    """`exam serve` is what a team tries first: the server they deploy, not Werkzeug's."""
    from tests.processes import Serve, exam_env

    env = exam_env(str(tmp_path / "exam.db"), tmp_path / "none.yaml", EXAM_API_TOKEN=TOKEN)
    served = Serve(env, tmp_path / "serve.log").start()
    try:
        assert requests.get(f"{served.url}/api/runs", timeout=30,
                            headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    finally:
        served.stop()
    printed = served.output()
    assert "development server" not in printed.lower() and "werkzeug" not in printed.lower()
    assert "serving on http://127.0.0.1:" in printed
