"""The first hour, as docs/agents.md tells it: an agent of one's own with a reply shape nobody
described, `exam init`, `exam agents check`, a YAML bank, `exam bank check`, two versions, compare."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler

import pytest
import yaml
from click.testing import CliRunner

from exam.cli.main import main
from tests.exam.pipeline.test_n8n_usage import KEY, FakeN8nApi, execution
from tests.fakes.server import QuietHandler, send_json, serve


class ShapedAgent:
    """Answers {"data": {"reply": ..., "meta": {...}}}: text, state and usage split in parts."""

    def __init__(self):
        self.version = "v1"
        self.seen_headers: list[dict] = []
        agent = self

        class Handler(QuietHandler):
            def do_POST(self):
                order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                agent.seen_headers.append(dict(self.headers))
                answer = ("本店不提供貨到付款，可以使用信用卡付款。" if agent.version == "v1"
                          else "可以的，我們提供貨到付款。")
                send_json(self, 200, {"data": {"reply": answer, "meta": {
                    "state": "ok", "task": order.get("task_id"),
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30}}}})

        self.served = serve(Handler)
        self.url = self.served.url + "/hook/shop"

    def __enter__(self):
        self.served.start()
        return self

    def __exit__(self, *exc):
        self.served.close()


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


def test_yaml_bank_problems_name_the_line(tmp_path):
    from exam.bank import read_bank

    path = tmp_path / "X.yaml"
    path.write_text("agent: X\nquestions:\n  - case_no: X-01\n    input: {question: hi}\n"
                    "    expect_facts: ['re:(a']\n  - case_no: X-02\n    input: {q: 1}\n"
                    "    expect_factz: [a]\n", encoding="utf-8")
    bank, problems = read_bank(path)
    said = [str(p) for p in problems]
    assert bank is None
    assert f"{path}:5: X-01.expect_facts[0]: invalid regex" in said[0]
    assert any(s.startswith(f"{path}:8: X-02.expect_factz: unknown key") for s in said)


def test_yaml_and_json_banks_with_the_same_content_have_the_same_digest(tmp_path):
    from exam.bank import load_bank

    data = {"agent": "X", "questions": [{"case_no": "X-01", "input": {"question": "運費？"},
                                         "expect_facts": ["80 元"]}]}
    (tmp_path / "X.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "X.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert load_bank(tmp_path / "X.json").digest == load_bank(tmp_path / "X.yaml").digest


def test_bank_paths_are_relative_to_the_registry_file(tmp_path, monkeypatch):
    from exam.pipeline.registry import load_registry

    conf = tmp_path / "etc" / "agent-exam"
    (conf / "banks").mkdir(parents=True)
    (conf / "banks" / "A.json").write_text("[]")
    (conf / "agents.yaml").write_text(yaml.safe_dump({"agents": {
        "A": {"url": "http://127.0.0.1:9/a", "bank": "banks/A.json"},
        "B": {"url": "http://127.0.0.1:9/b"}}}))
    (tmp_path / "etc" / "bank").mkdir()
    (tmp_path / "etc" / "bank" / "B.json").write_text("[]")
    monkeypatch.chdir(tmp_path)
    reg = load_registry(str(conf / "agents.yaml"))
    assert reg.get("A").bank == str(conf / "banks" / "A.json")
    assert reg.get("B").bank == str(tmp_path / "etc" / "bank" / "B.json")  # beside its folder


def test_token_paths_in_a_list_are_summed_and_absent_ones_stay_unknown():
    from exam.pipeline.registry import parse_registry
    from exam.reading import read_body

    reg = parse_registry({"agents": {"A": {"url": "http://127.0.0.1:9/a", "reply": {
        "text": "out", "tokens": ["u.in", "u.out"], "model_calls": ["u.calls"]}}}}, "r.yaml", {})
    mapping = reg.get("A").reply
    read = read_body({"out": "hi", "u": {"in": 100, "out": 23}}, mapping)
    assert read.tokens == 123 and read.model_calls is None
    assert read_body({"out": "hi"}, mapping).tokens is None


def test_a_bad_token_mapping_is_one_line_naming_the_key():
    import pytest

    from exam.errors import RegistryError
    from exam.pipeline.registry import parse_registry

    with pytest.raises(RegistryError, match=r"agents.A.reply.tokens: expected a dot path, a list"):
        parse_registry({"agents": {"A": {"url": "http://127.0.0.1:9/a",
                                         "reply": {"tokens": [1, 2]}}}}, "r.yaml", {})


def test_grade_reads_bodies_with_the_agents_mapping_and_exits_3_on_unreadable(tmp_path):
    bank = tmp_path / "S.yaml"
    bank.write_text(yaml.safe_dump({"agent": "S", "questions": [
        {"case_no": "S-01", "input": {"question": "hi"}, "expect_facts": ["備貨中"]}]},
        allow_unicode=True), encoding="utf-8")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"S": {
        "url": "http://127.0.0.1:9/s", "bank": "S.yaml", "reply": {"text": "data.reply"}}}}))
    replies = tmp_path / "r.jsonl"
    replies.write_text(json.dumps({"case_no": "S-01", "reply": {"data": {"reply": "備貨中"}}},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    r = invoke("grade", "--agent", "S", "--agents", str(registry), str(replies))
    assert r.exit_code == 0, r.output
    assert "PASS" in r.output
    r = invoke("grade", str(bank), str(replies))  # the default mapping finds no text
    assert r.exit_code == 3
    assert "bad_reply" in r.output and "the reply's keys: data" in r.output


def test_the_shipped_example_replies_grade():
    from tests.conftest import ROOT

    r = invoke("grade", str(ROOT / "bank" / "W2.json"),
               str(ROOT / "docs" / "examples" / "W2-replies.jsonl"))
    assert r.exit_code == 1  # one counterexample among them, on purpose
    assert "6 repl(ies): fail 1, pass 5" in r.output


def test_a_broken_deep_path_names_the_keys_where_it_broke():
    from exam.pipeline.registry import parse_registry
    from exam.reading import read_body

    reg = parse_registry({"agents": {"A": {"url": "http://127.0.0.1:9/a",
                                           "reply": {"text": "result.mesage"}}}}, "r.yaml", {})
    read = read_body({"result": {"message": "hi", "state": "ok"}}, reg.get("A").reply)
    assert read.problem == "no text at result.mesage (keys under result: message, state)"


def test_init_guesses_token_counts_under_other_names():
    from exam.pipeline.probe import propose_mapping

    mapping, notes = propose_mapping({"result": {"message": "你好，可以的", "cost": {"in": 10,
                                                                               "out": 5}}})
    assert mapping["tokens"] == ["result.cost.in", "result.cost.out"]
    assert any("check they are token counts" in n for n in notes)


class NumbersOnly(BaseHTTPRequestHandler):
    """A reply with no string in it: `exam init` cannot guess the text and writes a TODO."""

    posts = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).posts += 1
        send_json(self, 200, {"code": 7})


def test_a_todo_left_in_the_reply_mapping_blocks_the_agent_naming_file_agent_and_field(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    registry = tmp_path / "agents.yaml"
    env = {"EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db")}
    with serve(NumbersOnly) as url:
        r = invoke("init", url + "/hook", "--name", "NUM", env=env)
        assert r.exit_code == 0, r.output
        assert yaml.safe_load(registry.read_text())["agents"]["NUM"]["reply"]["text"] == \
            "TODO: the dot path of the answer text"
        said = (f"{registry}: agents.NUM.reply.text is still a placeholder "
                f"('TODO: the dot path of the answer text'): write the dot path there")
        posts = NumbersOnly.posts
        checked = invoke("agents", "check", "NUM", env=env)
        assert checked.exit_code == 3 and f"blocked, nothing sent: {said}" in checked.output
        # the starter bank's TODOs refuse the run first (exam capture's drafts alike)
        ran = CliRunner().invoke(main, ["run", "NUM", "--version", "v1"], env=env)
        assert ran.exit_code == 2 and "NUM-01.golden[0]: still a placeholder" in ran.output
        bank = tmp_path / "bank" / "NUM.yaml"
        starter = yaml.safe_load(bank.read_text())
        starter["questions"][0].update(expect_facts=["42"], expect_forbidden=["43"],
                                       golden=["42"], counterexamples=["43"])
        bank.write_text(yaml.safe_dump(starter, allow_unicode=True), encoding="utf-8")
        ran = CliRunner().invoke(main, ["run", "NUM", "--version", "v1"], env=env)
        assert ran.exit_code == 3
        assert f"warning: NUM: blocked, nothing will be sent: {said}" in ran.stderr
        assert NumbersOnly.posts == posts  # neither sent a work order


def test_a_todo_anywhere_in_the_reply_mapping_is_named_by_its_field(tmp_path):
    from exam.pipeline.registry import parse_registry

    reply = {"text": ["answer", "TODO: where"], "tokens": "TODO",
             "steps": {"path": "steps", "tool": " TODO tool key"}}
    agent = parse_registry({"agents": {"A": {"url": "http://127.0.0.1:9/", "reply": reply}}},
                           "reg.yaml", {}).get("A")
    assert [line.split(" is still")[0] for line in agent.blocked.split("; ")] == [
        "reg.yaml: agents.A.reply.text[1]", "reg.yaml: agents.A.reply.tokens",
        "reg.yaml: agents.A.reply.steps.tool"]


class ExecutionIdAgent:
    """An n8n AI Agent workflow's reply: the answer, a placeholder usage, the execution id."""

    def __init__(self, exec_id: str | None):
        class Handler(QuietHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                send_json(self, 200, {"answer": "本店不提供貨到付款。",
                                      "usage": {"model_calls": 0, "total_tokens": 0},
                                      **({"executionId": exec_id} if exec_id else {})})

        self.served = serve(Handler).start()
        self.url = self.served.url + "/webhook/w4"

    def close(self):
        self.served.close()


def _n8n_registry(tmp_path, agent_url: str, api_url: str):
    registry = tmp_path / "agents.yaml"
    bank = tmp_path / "bank" / "W4.yaml"
    bank.parent.mkdir()
    bank.write_text(yaml.safe_dump({"agent": "W4", "questions": [
        {"case_no": "W4-01", "input": {"question": "hi"}, "expect_facts": ["貨到付款"]}]}))
    registry.write_text(yaml.safe_dump({"agents": {"W4": {
        "url": agent_url, "bank": "bank/W4.yaml",
        "n8n": {"api_url": api_url, "api_key": "${N8N_API_KEY}"}}}}))
    return registry


@pytest.mark.parametrize("exec_id, key, code, lines", [
    ("7", KEY, 0, ["model calls  2", "tokens       249",
                   "usage        from n8n execution 7: 2 model call(s), tokens as the provider "
                   "counted them"]),
    ("7", "a-wrong-key-0123456789", 3, [
        "model calls  unknown", "tokens       unknown",
        "usage        usage unknown: the n8n API refused the key (HTTP 401, "]),
    (None, KEY, 3, ["model calls  unknown", "usage        usage unknown: attempt 1's reply "
                    "carries no execution id at 'executionId'"]),
])
def test_agents_check_reads_usage_from_n8n_as_a_run_does(tmp_path, exec_id, key, code, lines):
    """With `n8n:` set a run reads usage from the execution, not the reply's placeholder 0s:
    the check must show that (or why it cannot), not the figures the run will ignore."""
    api = FakeN8nApi({"7": execution("chat-completions-parallel")})
    agent = ExecutionIdAgent(exec_id)
    try:
        registry = _n8n_registry(tmp_path, agent.url, api.url)
        r = invoke("agents", "check", "--agents", str(registry), env={"N8N_API_KEY": key})
    finally:
        agent.close()
        api.close()
    assert r.exit_code == code, r.output
    for line in lines:
        assert f"  {line}" in r.output
    assert "tokens       0" not in r.output and key not in r.output


N8N_404 = {"code": 404, "message": "The requested webhook \"POST w4\" is not registered.",
           "hint": "The workflow must be active for a production URL to run successfully."}


class StatusAgent:
    """Answers every POST with ``status`` and ``body`` (n8n's own error shapes), or sleeps."""

    def __init__(self, status: int, body: object, sleep_s: float = 0.0):
        class Handler(QuietHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                if sleep_s:
                    time.sleep(sleep_s)
                try:
                    send_json(self, status, body)
                except OSError:  # the exam gave up waiting: that is the point
                    pass

        self.served = serve(Handler).start()
        self.url = self.served.url + "/webhook/w4"

    def close(self):
        self.served.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("status, body, sleep_s, mistake, hint", [
    (None, None, 0, "connection refused",
     "next: nothing listens there: start the agent (n8n), or correct the host and port in {reg}: "
     "agents.W4.url"),
    (404, N8N_404, 0, "HTTP 404: The requested webhook",
     "next: n8n knows no such webhook: activate (publish) the workflow, and check that {reg}: "
     "agents.W4.url ends in /webhook/<the Webhook node's Path>"),
    (403, "Authorization data is wrong!", 0, "HTTP 403",
     "next: the agent refused the request: the header in {reg}: agents.W4.headers"),
    (404, {"code": 404, "message": "This webhook is not registered for POST requests. Did you "
                                   "mean to make a GET request?"}, 0, "HTTP 404: This webhook",
     "next: the Webhook node takes another HTTP method: set its HTTP Method to POST"),
    (500, {"code": 0, "message": "Unused Respond to Webhook node found in the workflow"}, 0,
     "HTTP 500: Unused Respond to Webhook node",
     "next: the Webhook node does not wait for the Respond to Webhook node: set its Respond to "
     "\"Using 'Respond to Webhook' Node\""),
    (200, {"answer": "late"}, 2, "no reply within 0.5 s",
     "next: no answer within 0.5 s: is the workflow stuck (its executions in n8n say), or does "
     "it need longer ({reg}: agents.W4.timeout_s)?"),
])
def test_agents_check_says_what_to_do_when_no_answer_came(tmp_path, status, body, sleep_s,
                                                          mistake, hint):
    """A wrong port, an inactive workflow or a wrong path, a wrong token, a slow workflow: one
    line naming the registry key to fix, and no 'nothing at answer' sending people to the
    reply mapping, which was never the problem."""
    agent = StatusAgent(status, body, sleep_s) if status else None
    url = agent.url if agent else f"http://127.0.0.1:{_closed_port()}/webhook/w4"
    try:
        registry = _n8n_registry(tmp_path, url, "http://127.0.0.1:9")
        entry = yaml.safe_load(registry.read_text())
        del entry["agents"]["W4"]["n8n"]
        entry["agents"]["W4"]["timeout_s"] = 0.5
        registry.write_text(yaml.safe_dump(entry))
        r = invoke("agents", "check", "--agents", str(registry))
    finally:
        if agent:
            agent.close()
    assert r.exit_code == 3
    assert mistake in r.output
    assert hint.format(reg=registry) in r.output
    assert "nothing at" not in r.output


def test_init_says_what_to_do_when_the_probe_gets_no_answer(tmp_path):
    agent = StatusAgent(404, N8N_404)
    try:
        r = invoke("init", agent.url, "--name", "W4", "--agents", str(tmp_path / "agents.yaml"))
    finally:
        agent.close()
    assert r.exit_code == 3
    assert ("next: n8n knows no such webhook: activate (publish) the workflow, and check that "
            "the URL ends in /webhook/<the Webhook node's Path>") in r.output


def test_a_run_nothing_of_which_was_answered_says_where_to_look_and_how_to_go_on(tmp_path):
    """Every cell http_error (a wrong port) or bad_reply (a wrong mapping) is a setup mistake:
    the run says to check the agent, and how to finish (resume re-sends transport failures; a
    misread run is left out, since resume does not send bad replies again)."""
    env = {"EXAM_DB": str(tmp_path / "exam.db")}
    registry = _n8n_registry(tmp_path, f"http://127.0.0.1:{_closed_port()}/webhook/w4", "http://x")
    entry = yaml.safe_load(registry.read_text())
    del entry["agents"]["W4"]["n8n"]
    registry.write_text(yaml.safe_dump(entry))
    r = invoke("run", "W4", "--version", "v1", "--agents", str(registry), env=env)
    assert r.exit_code == 3
    assert ("next: no reply of W4 was answered; `exam agents check W4` shows one reply and what "
            "to fix, then `exam resume 1 --retry-failed`") in r.output
    with ShapedAgent() as agent:  # answers under data.reply: the default mapping reads nothing
        entry["agents"]["W4"]["url"] = agent.url
        registry.write_text(yaml.safe_dump(entry))
        r = invoke("run", "W4", "--version", "v1", "--agents", str(registry), env=env)
        assert r.exit_code == 3
        assert ("then run it again and leave this one out of every report: "
                "`exam runs exclude 2 --reason \"setup\"`") in r.output
        entry["agents"]["W4"]["reply"] = {"text": "data.reply"}
        registry.write_text(yaml.safe_dump(entry))
        r = invoke("run", "W4", "--version", "v2", "--agents", str(registry), env=env)
    assert r.exit_code == 1, r.output  # answered, and graded: a content failure, no setup hint
    assert "next:" not in r.output


def test_agents_check_with_a_missing_bank_says_whose_bank_and_where_it_is_set(tmp_path):
    agent = StatusAgent(200, {"answer": "x"})
    try:
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"W4": {"url": agent.url,
                                                              "bank": "bank/W4x.yaml"}}}))
        r = invoke("agents", "check", "--agents", str(registry))
    finally:
        agent.close()
    assert r.exit_code == 2
    assert (f"{tmp_path}/bank/W4x.yaml: no such file: the question bank of agent W4 (set 'bank:' "
            "for it in the registry") in r.output
    assert "==" not in r.output  # checked before anything is sent


N8N_STARTED = {"message": "Workflow was started"}  # n8n's reply when the Webhook responds Immediately


def test_init_refuses_n8ns_workflow_was_started_as_an_answer(tmp_path):
    """Responding Immediately, n8n answers before the workflow runs; `message` is a text key
    init would map, and every run would then grade these words as the agent's answer."""
    agent = StatusAgent(200, N8N_STARTED)
    try:
        r = invoke("init", agent.url, "--name", "W4", "--agents", str(tmp_path / "agents.yaml"),
                   "--bank", str(tmp_path / "W4.yaml"))
    finally:
        agent.close()
    assert r.exit_code == 3
    assert ("n8n answered 'Workflow was started' before the workflow ran (the Webhook node "
            "responds Immediately): set its Respond to \"Using 'Respond to Webhook' Node\"") \
        in r.output
    assert not (tmp_path / "agents.yaml").exists() and not (tmp_path / "W4.yaml").exists()


def test_workflow_was_started_is_a_bad_reply_whatever_the_mapping_reads(tmp_path):
    env = {"EXAM_DB": str(tmp_path / "exam.db")}
    agent = StatusAgent(200, N8N_STARTED)
    try:
        registry = _n8n_registry(tmp_path, agent.url, "http://x")
        entry = yaml.safe_load(registry.read_text())
        del entry["agents"]["W4"]["n8n"]
        entry["agents"]["W4"]["reply"] = {"text": "message"}
        registry.write_text(yaml.safe_dump(entry))
        r = invoke("run", "W4", "--version", "v1", "--agents", str(registry), env=env)
    finally:
        agent.close()
    assert r.exit_code == 3  # not answered: never graded as the answer (exit 1)
    assert "bad_reply: n8n answered 'Workflow was started' before the workflow ran" in r.output
    assert "fact[0]" not in r.output


def test_a_blocked_run_says_to_resume_it_not_to_run_the_version_again(tmp_path):
    env = {"EXAM_DB": str(tmp_path / "exam.db")}
    registry = _n8n_registry(tmp_path, "http://127.0.0.1:9/webhook/w4", "http://x")
    entry = yaml.safe_load(registry.read_text())
    del entry["agents"]["W4"]["n8n"]
    entry["agents"]["W4"]["headers"] = {"X-Exam-Token": "${W4_TOKEN_UNSET}"}
    registry.write_text(yaml.safe_dump(entry))
    r = invoke("run", "W4", "--version", "v1", "--agents", str(registry), env=env)
    assert r.exit_code == 3
    assert "environment variable W4_TOKEN_UNSET is not set" in r.output
    assert ("next: nothing was sent to W4: fix what the warning above names, then "
            "`exam resume 1 --retry-failed`") in r.output


N8N_TEST_404 = {"code": 404, "message": "The requested webhook \"w4\" is not registered.",
                "hint": "Click the 'Execute workflow' button on the canvas, then try again."}


def test_a_test_url_is_named_with_the_production_url_to_use(tmp_path):
    agent = StatusAgent(404, N8N_TEST_404)
    test_url = agent.url.replace("/webhook/", "/webhook-test/")
    try:
        registry = _n8n_registry(tmp_path, test_url, "http://x")
        entry = yaml.safe_load(registry.read_text())
        del entry["agents"]["W4"]["n8n"]
        registry.write_text(yaml.safe_dump(entry))
        r = invoke("agents", "check", "--agents", str(registry))
    finally:
        agent.close()
    assert r.exit_code == 3
    assert (f"next: {registry}: agents.W4.url is n8n's test URL, which answers one call after "
            f"Execute workflow in the editor: use the production URL ({agent.url})") in r.output


def test_init_warns_that_a_test_url_answers_one_call_even_when_it_answers(tmp_path):
    agent = StatusAgent(200, {"answer": "ok"})
    test_url = agent.url.replace("/webhook/", "/webhook-test/")
    try:
        r = invoke("init", test_url, "--name", "W4", "--agents", str(tmp_path / "agents.yaml"),
                   "--bank", str(tmp_path / "W4.yaml"))
    finally:
        agent.close()
    assert r.exit_code == 0
    assert (f"warning: {test_url} is n8n's test URL: it answers one call after Execute workflow "
            f"in the editor, so a run's second work order gets a 404. Register the production "
            f"URL ({agent.url})") in r.output


def test_init_shows_the_proposed_mapping_as_the_registry_file_has_it(tmp_path):
    agent = StatusAgent(200, {"answer": "ok", "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    try:
        r = invoke("init", agent.url, "--name", "W4", "--agents", str(tmp_path / "agents.yaml"),
                   "--bank", str(tmp_path / "W4.yaml"))
    finally:
        agent.close()
    assert r.exit_code == 0
    assert "  status: null\n" in r.output and "None" not in r.output
    assert "  tokens: [usage.prompt_tokens, usage.completion_tokens]\n" in r.output
    entry = yaml.safe_load((tmp_path / "agents.yaml").read_text())["agents"]["W4"]["reply"]
    assert entry["status"] is None
    assert entry["tokens"] == ["usage.prompt_tokens", "usage.completion_tokens"]


def test_init_refuses_a_body_not_in_its_charset_and_writes_nothing(tmp_path):
    # a Big5 body without charset=big5: read as UTF-8 it is mojibake, which init proposed a
    # mapping for and copied into the starter bank; every run would then be a bad_reply
    body = json.dumps({"output": "您好，訂單已出貨"}, ensure_ascii=False).encode("big5")

    class Handler(QuietHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    served = serve(Handler).start()
    try:
        r = invoke("init", served.url + "/webhook/w4", "--name", "W4", "--agents",
                   str(tmp_path / "agents.yaml"), "--bank", str(tmp_path / "W4.yaml"))
    finally:
        served.close()
    assert r.exit_code == 3, r.output
    assert "no usable reply (bad_reply: the body is not valid utf-8" in r.output
    assert "does Content-Type name its charset?" in r.output
    assert not (tmp_path / "agents.yaml").exists() and not (tmp_path / "W4.yaml").exists()


def test_agents_check_never_prints_a_key_carried_in_the_api_url(tmp_path):
    """An api_url holding ${N8N_API_KEY} (a proxy in front of n8n that takes it in the path):
    `exam run` stores the usage note redacted; `exam agents check` prints it the same way."""
    api = FakeN8nApi({"7": execution("chat-completions-parallel")})
    agent = ExecutionIdAgent("8")
    try:
        registry = _n8n_registry(tmp_path, agent.url, api.url + "/${N8N_API_KEY}")
        r = invoke("agents", "check", "--agents", str(registry), env={"N8N_API_KEY": KEY})
    finally:
        agent.close()
        api.close()
    assert "usage        usage unknown" in r.output  # no execution 8: the note names where it looked
    assert KEY not in r.output and "[redacted]" in r.output
