"""Nobody gets in without the token, nothing is sent where the registry does not say, and
planted secrets never reach the store, the logs, any report format or an error message."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from exam.web.app import create_app
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent
from tests.fakes.line_api import FakeLineApi

API = "api-SECRET-d41f0a"
AGENT = "agent-header-SECRET-7c1e"
LINE_TOKEN = "line-SECRET-token-88aa"
LINE_SECRET = "line-channel-SECRET-31bb"
REPLY_HEADER = "SECRET-IN-REPLY-HEADER"
SECRETS = (API, AGENT, LINE_TOKEN, LINE_SECRET, REPLY_HEADER)


def leaks(text: str | bytes) -> list[str]:
    data = text if isinstance(text, bytes) else text.encode()
    return [s for s in SECRETS if s.encode() in data]


@pytest.fixture
def world(tmp_path):
    with FakeAgent() as agent, FakeLineApi() as line:
        bank = write_bank(tmp_path, ["ok", "echo-headers", "echo-token", "echo-token-ok"])
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"T": {
            "url": agent.url, "bank": str(bank), "timeout_s": 5,
            "headers": {"X-Exam-Token": "${EXAM_AGENT_TOKEN}"}}}}))
        env = {**os.environ, "EXAM_DB": str(tmp_path / "exam.db"), "EXAM_AGENTS": str(registry),
               "EXAM_API_TOKEN": API, "EXAM_AGENT_TOKEN": AGENT,
               "LINE_CHANNEL_ACCESS_TOKEN": LINE_TOKEN, "LINE_CHANNEL_SECRET": LINE_SECRET,
               "LINE_GROUP_ID": "Cgroup", "LINE_API_HOST": line.host}
        yield tmp_path, env, agent, line


def exam(env, *args):
    return subprocess.run([sys.executable, "-m", "exam", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def cli(env, *args):
    """``exam ARGS`` run by the CLI in this process, with ``env`` as its environment; what
    it printed as a finished process's (returncode, stdout, stderr)."""
    from click.testing import CliRunner

    from exam.cli.main import main

    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_planted_secrets_never_leak(world, table):
    tmp, env, agent, line = world
    outputs = []
    run = exam(env, "run", "T", "--version", "v1", "--notify", "line")
    outputs += [run.stdout, run.stderr]
    assert agent.requests[0]["headers"]["X-Exam-Token"] == AGENT  # it was really sent
    app = create_app({"DB": env["EXAM_DB"], "AGENTS": env["EXAM_AGENTS"], "API_TOKEN": API})
    client = app.test_client()
    auth = {"Authorization": f"Bearer {API}"}
    queued = client.post("/api/runs", json={"agent": "T", "version": "v2"}, headers=auth)
    assert queued.status_code == 202
    worker = exam(env, "worker", "--once")  # logs at INFO to stderr
    assert worker.returncode == 0, worker.stderr
    outputs += [worker.stdout, worker.stderr]
    # every page and report must really render: an error page would leak nothing and prove nothing
    for path in (f"/api/runs/{queued.json['run_id']}/scorecard", "/api/runs",
                 "/api/compare?agent=T&old=v1&new=v2", "/api/discrimination",
                 "/api/openapi.json"):
        resp = client.get(path, headers=auth)
        assert resp.status_code == 200 and resp.is_json, (path, resp.status_code)
        outputs.append(resp.get_data(as_text=True))
    for path in ("/", "/scorecard/T/v1", "/compare?agent=T&old=v1&new=v2", "/discrimination",
                 "/review"):
        resp = client.get(path, headers=auth)
        assert resp.status_code == 200 and "<html" in resp.get_data(as_text=True), path
        outputs.append(resp.get_data(as_text=True))
    formats = 0
    for cmd in (["report", "scorecard"], ["compare", "T", "v1", "v2"],
                ["report", "discrimination"], ["report", "rebalance"]):
        for fmt in ("text", "markdown", "json", "csv", "junit"):
            # each command once as a process of its own (what reaches a terminal and its log
            # lines, the secrets in its environment); its other formats are the same command
            # with another renderer, rendered by the CLI in this process with the same
            # environment (a process started for each: 16 × ~1.2 s)
            r = exam(env, *cmd, "--format", fmt) if fmt == "text" else cli(env, *cmd,
                                                                            "--format", fmt)
            # compare exits with its verdict (ship 0 · hold 1 · incomplete 3 · undecided 4 ·
            # pending 5); 2 would be bad input, anything else a crash
            assert r.returncode in ((0, 1, 3, 4, 5) if cmd[0] == "compare" else (0,)), r.stderr
            assert r.stdout.strip() and not r.stderr.strip(), (cmd, fmt, r.stderr)
            outputs += [r.stdout, r.stderr]
            formats += 1
    outputs += [exam(env, "runs").stdout, exam(env, "review", "--export",
                                                  str(tmp / "q.csv")).stdout]
    outputs.append((tmp / "q.csv").read_text(encoding="utf-8"))
    # error paths: a wrong token, a missing variable, a LINE failure
    outputs.append(client.get("/api/runs", headers={"Authorization": "Bearer nope"}
                              ).get_data(as_text=True))
    no_var = {k: v for k, v in env.items() if k != "EXAM_AGENT_TOKEN"}
    blocked = exam(no_var, "run", "T", "--version", "v3")
    assert "EXAM_AGENT_TOKEN is not set" in blocked.stderr
    outputs += [blocked.stdout, blocked.stderr]
    line.answer((400, {}, {"message": "Invalid reply token"}))
    failed = exam(env, "notify", "line", "--run", "1")
    assert "LINE answered 400: Invalid reply token" in failed.stderr
    outputs += [failed.stdout, failed.stderr]
    db_bytes = b"".join(p.read_bytes() for p in tmp.glob("exam.db*"))
    line_payloads = json.dumps([r["body"] for r in line.requests], ensure_ascii=False)

    found = {"output": [s for o in outputs for s in leaks(o)], "store": leaks(db_bytes),
             "LINE payloads": leaks(line_payloads)}
    assert found == {"output": [], "store": [], "LINE payloads": []}
    table("security", "secrets planted in the registry (header via ${VAR}), the environment "
                      "(API token, LINE token and secret) and an agent's reply headers and body",
          len(outputs) + 2,
          f"none found in the SQLite files, {len(outputs)} command outputs/logs/API and dashboard "
          f"responses ({formats} report renderings in 5 formats), error messages, or LINE "
          "payloads; an agent echoing the token back is stored as [redacted]",
          "nothing leaked")


def test_every_api_route_needs_the_token(tmp_path, table):
    app = create_app({"API_TOKEN": API, "DB": str(tmp_path / "x.db")})
    client = app.test_client()
    tried = 0
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<\w+>", "x", re.sub(r"<int:\w+>", "1", rule.rule))
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            for header in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": API}):
                resp = client.open(path, method=method, headers=header, json={})
                tried += 1
                body = resp.get_data(as_text=True)
                if rule.rule.startswith("/api/"):
                    assert resp.status_code == 401, (method, path)
                elif rule.rule.startswith("/line/"):
                    assert resp.status_code in (400, 503)  # signature first
                elif method == "POST":  # a form without its CSRF token, /login included
                    assert resp.status_code == 400 and "refused: " in body  # on a page
                elif rule.rule in ("/healthz", "/login"):
                    assert resp.status_code in (200, 401)
                elif rule.rule.startswith("/static/"):
                    assert resp.status_code == 404  # Flask's static route; no files are served
                elif rule.rule.startswith("/share/"):  # a share link is its own credential
                    assert resp.status_code == 403 and "not valid" in body
                else:
                    assert resp.status_code == 302 and "/login" in resp.headers["Location"]
                assert not leaks(body)
    table("security", "every route without a token, with a wrong one, and with the token but "
                      "no 'Bearer'", tried,
          "API: 401; dashboard: redirect to the login, no data; a form without its CSRF token: "
          "400; /line/webhook: 400 before reading; /healthz open", "nothing")


def test_oversized_bodies_and_caller_supplied_urls(world, table):
    tmp, env, agent, _ = world
    with FakeAgent() as evil:
        app = create_app({"API_TOKEN": API, "DB": env["EXAM_DB"], "AGENTS": env["EXAM_AGENTS"]})
        client = app.test_client()
        auth = {"Authorization": f"Bearer {API}"}
        big = client.post("/api/runs", data=b"{" + b" " * 2_000_000 + b"}",
                          headers={**auth, "Content-Type": "application/json"})
        assert big.status_code == 413
        attempts = [{"agent": evil.url, "version": "v1"},
                    {"agent": "T", "version": "v1", "url": evil.url},
                    {"agent": "T", "version": "v1", "webhook": evil.url},
                    {"agent": "../T", "version": "v1"},
                    {"agent": "T\nurl: " + evil.url, "version": "v1"}]
        codes = [client.post("/api/runs", json=b, headers=auth).status_code for b in attempts]
        assert codes == [400] * len(attempts)
        exam(env, "worker", "--once")
        assert evil.requests == []
    table("security", "request bodies over 1 MB; runs naming a URL, an extra url/webhook field, "
                      "or a mangled agent name", 1 + len(attempts),
          "413; 400 naming the field; the URL's server received 0 requests", "nothing")


def test_line_webhook_rejects_bad_signatures(tmp_path, monkeypatch, table):
    monkeypatch.setenv("LINE_CHANNEL_SECRET", LINE_SECRET)
    app = create_app({"API_TOKEN": API, "DB": str(tmp_path / "x.db"), "LINE_SWEEP_SECONDS": 0})
    client = app.test_client()
    body = json.dumps({"events": [{"type": "join", "mode": "active", "timestamp": 1,
                                   "source": {"type": "group", "groupId": "Cx"},
                                   "webhookEventId": "01JSEC", "replyToken": "r",
                                   "deliveryContext": {"isRedelivery": False}}]}).encode()
    good = base64.b64encode(hmac.new(LINE_SECRET.encode(), body, hashlib.sha256).digest())
    cases = [{}, {"X-Line-Signature": "bad"},
             {"X-Line-Signature": base64.b64encode(b"x" * 32).decode()},
             {"X-Line-Signature": good.decode()[:-4] + "AAA="}]
    codes = [client.post("/line/webhook", data=body, headers=h).status_code for h in cases]
    assert codes == [400] * len(cases)
    from exam.store import Store

    assert Store(tmp_path / "x.db").line_event_state("01JSEC") is None  # never recorded
    table("security", "LINE webhook bodies with a missing, malformed, wrong or truncated "
                      "signature", len(cases), "400, event not recorded or processed", "nothing")


def test_forms_from_another_site_are_refused(tmp_path, table):
    """A page elsewhere posting to /review and /logout with the reviewer's cookie: nothing."""
    import re

    from tests.exam.conftest import History

    history = History(tmp_path)
    history.bank("A", [("Q-01", "c", "major")])
    history.run("A", "v1", {"Q-01": "h"})
    client = create_app({"API_TOKEN": API, "DB": str(tmp_path / "exam.db")}).test_client()
    form = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert client.post("/login", data={"token": API, "csrf_token": csrf}).status_code == 302
    key = re.search(r'name="key" value="([^"]+)"', client.get("/review").get_data(as_text=True))
    planted = {"key": key.group(1), "decision": "fail", "reviewer": "x", "reason": "planted"}
    tries = [("/review", planted, {"Origin": "https://evil.example"}),
             ("/review", planted, {"Referer": "https://evil.example/a"}),
             ("/review", planted, {}),  # no Origin, no Referer: the token decides
             ("/review", {**planted, "csrf_token": csrf}, {"Origin": "https://evil.example"}),
             ("/logout", {}, {"Origin": "https://evil.example"}), ("/logout", {}, {})]
    codes = [client.post(path, data=data, headers=h).status_code for path, data, h in tries]
    assert codes == [400] * len(tries)
    assert history.store.adjudications() == []
    assert client.get("/").status_code == 200  # still logged in: the logouts did nothing
    history.store.close()
    table("security", "cross-site form posts riding the session cookie: /review (foreign "
                      "Origin, foreign Referer, no token, a valid token from another origin) and "
                      "/logout", len(tries),
          "400 each (Flask-WTF token + Origin/Referer check); no decision stored, session kept",
          "nothing")


@pytest.mark.parametrize(("value", "message"), [
    ("False", "EXAM_API_TOKEN is not set"), ("no", "EXAM_API_TOKEN is not set"),
    ("maybe", "EXAM_LOCAL_DEV: expected one of 1, 0, true, false, yes, no, on, off"),
])
def test_exam_serve_fails_closed_on_local_dev(tmp_path, value, message):
    env = {k: v for k, v in os.environ.items() if k != "EXAM_API_TOKEN"}
    env.update(EXAM_LOCAL_DEV=value, EXAM_DB=str(tmp_path / "exam.db"))
    # an address nobody can bind: a service that wrongly starts fails at once, not hangs
    result = exam(env, "serve", "--no-worker", "--host", "256.0.0.1")
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr
