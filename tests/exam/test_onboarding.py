"""The first hour, as docs/agents.md tells it: an agent of one's own with a reply shape nobody
described, `exam init`, `exam agents check`, a YAML bank, `exam bank check`, two versions, compare."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml
from click.testing import CliRunner

from exam.cli import main


class ShapedAgent:
    """Answers {"data": {"reply": ..., "meta": {...}}}: text, state and usage split in parts."""

    def __init__(self):
        self.version = "v1"
        self.seen_headers: list[dict] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                agent.seen_headers.append(dict(self.headers))
                answer = ("本店不提供貨到付款，可以使用信用卡付款。" if agent.version == "v1"
                          else "可以的，我們提供貨到付款。")
                body = json.dumps({"data": {"reply": answer, "meta": {
                    "state": "ok", "task": order.get("task_id"),
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30}}}},
                    ensure_ascii=False).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook/shop"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_init_check_bank_two_versions_and_compare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    registry = tmp_path / "conf" / "agents.yaml"
    env = {"EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db"),
           "SHOP_TOKEN": "s3cr3t-value"}
    with ShapedAgent() as agent:
        r = invoke("init", agent.url, "--name", "SHOP", "--question", "可以貨到付款嗎？",
                   "--header", "X-Token: ${SHOP_TOKEN}", env=env)
        assert r.exit_code == 0, r.output
        assert "proposed reply mapping" in r.output and "data.reply" in r.output
        assert "s3cr3t-value" not in r.output and "s3cr3t-value" not in registry.read_text()
        entry = yaml.safe_load(registry.read_text())["agents"]["SHOP"]
        assert entry["reply"]["text"] == "data.reply"
        assert entry["reply"]["status"] == "data.meta.state"
        assert entry["reply"]["tokens"] == ["data.meta.usage.prompt_tokens",
                                            "data.meta.usage.completion_tokens"]
        assert agent.seen_headers[-1]["X-Token"] == "s3cr3t-value"
        bank = tmp_path / "bank" / "SHOP.yaml"
        assert bank.is_file()

        # the starter bank is not proven yet: bank check names every placeholder
        r = invoke("bank", "check", str(bank), env=env)
        assert r.exit_code == 1
        assert r.output.count("still a placeholder") == 4

        starter = yaml.safe_load(bank.read_text())
        q = starter["questions"][0]
        q.update(expect_facts=["不提供貨到付款"], expect_forbidden=["提供貨到付款|可以貨到付款"],
                 golden=["本店不提供貨到付款。"], counterexamples=["可以的，我們提供貨到付款。"])
        bank.write_text(yaml.safe_dump(starter, allow_unicode=True), encoding="utf-8")
        r = invoke("bank", "check", str(bank), env=env)
        assert r.exit_code == 0, r.output

        # the registry found its bank relative to itself, from any directory
        monkeypatch.chdir(tmp_path / "conf")
        r = invoke("agents", "check", "SHOP", env=env)
        assert r.exit_code == 0, r.output
        assert "tokens       150" in r.output and "status       ok" in r.output
        assert not (tmp_path / "exam.db").exists()  # stores nothing

        r = invoke("run", "SHOP", "--version", "v1", "--repeats", "2", env=env)
        assert r.exit_code == 0, r.output
        agent.version = "v2"
        r = invoke("run", "SHOP", "--version", "v2", "--repeats", "2", env=env)
        assert r.exit_code == 1, r.output
    r = invoke("compare", "SHOP", "v1", "v2", env=env)
    assert r.exit_code != 0 and "SHOP-01" in r.output


def test_agents_check_names_the_keys_when_the_mapping_finds_nothing(tmp_path):
    registry = tmp_path / "agents.yaml"
    with ShapedAgent() as agent:
        bank = tmp_path / "bank" / "S.yaml"
        bank.parent.mkdir()
        bank.write_text(yaml.safe_dump({"agent": "S", "questions": [
            {"case_no": "S-01", "input": {"question": "hi"}, "expect_facts": ["x"]}]}))
        registry.write_text(yaml.safe_dump({"agents": {"S": {"url": agent.url,
                                                             "bank": "bank/S.yaml"}}}))
        r = invoke("agents", "check", "--agents", str(registry))
    assert r.exit_code == 3
    assert "run status   bad_reply: no text at answer / output / text (the reply's keys: data)" \
        in r.output
    assert "tokens       nothing at usage.total_tokens (the reply's keys: data)" in r.output


def test_init_refuses_a_literal_secret_in_a_header(tmp_path):
    r = invoke("init", "http://127.0.0.1:9/x", "--name", "X", "--header", "X-Token: abc123",
               "--agents", str(tmp_path / "agents.yaml"))
    assert r.exit_code == 2
    assert "give the value as ${VAR}" in r.output
    assert not (tmp_path / "agents.yaml").exists()


def test_init_writes_nothing_when_the_probe_gets_no_reply(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = invoke("init", f"http://127.0.0.1:{port}/x", "--name", "X", "--timeout", "2",
               "--agents", str(tmp_path / "agents.yaml"))
    assert r.exit_code == 3
    assert not (tmp_path / "agents.yaml").exists() and not (tmp_path / "bank").exists()
