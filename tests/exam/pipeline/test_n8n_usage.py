"""Usage from n8n executions: summing the chat model's runs, and the API calls that read them.

The execution files in tests/exam/data were fetched from a real n8n 2.40.7 (AI Agent +
OpenAI Chat Model against tests/fakes/openai_model.py) and trimmed; the API is a small
HTTP server on 127.0.0.1 that answers as n8n's public API does.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from exam.pipeline.n8n_usage import execution_id, measure, usage_of_execution
from exam.pipeline.registry import N8nUsage
from tests.fakes.server import send_json, serve

DATA = Path(__file__).parent.parent / "data"
KEY = "n8n-api-key-for-tests-0123456789"


def execution(name: str) -> dict:
    return json.loads((DATA / f"n8n-execution-{name}.json").read_text(encoding="utf-8"))


def test_chat_completions_usage_is_the_providers_count_summed_over_model_runs():
    u = usage_of_execution(execution("chat-completions-parallel"))
    # two tool calls in one turn: two model calls (the fake billed 111+8 and 121+9)
    assert (u.model_calls, u.tokens, u.estimated, u.failed) == (2, 249, False, 0)


def test_responses_api_usage_is_n8ns_estimate_and_says_so():
    u = usage_of_execution(execution("responses-api"))
    assert (u.model_calls, u.estimated) == (2, True)
    assert u.tokens == 18 + 67  # n8n's tokenUsageEstimate of each run


def test_a_refused_model_call_counts_as_a_call_with_no_tokens():
    u = usage_of_execution(execution("model-refused"))
    assert (u.model_calls, u.tokens, u.failed) == (1, 0, 1)


def test_a_model_run_without_any_usage_makes_tokens_unknown_not_zero():
    e = execution("chat-completions-parallel")
    run = e["data"]["resultData"]["runData"]["OpenAI Chat Model"][1]
    del run["data"]["ai_languageModel"][0][0]["json"]["tokenUsage"]
    u = usage_of_execution(e)
    assert (u.model_calls, u.tokens) == (2, None)


@pytest.mark.parametrize("data", [None, {}, {"resultData": None}, {"resultData": {"runData": []}},
                                  {"resultData": {"runData": {"X": [None, 3, {"data": "x"}]}}}])
def test_odd_execution_shapes_count_nothing_and_never_raise(data):
    u = usage_of_execution({"data": data})
    assert (u.model_calls, u.tokens) == (0, 0)


class FakeN8nApi:
    """GET /api/v1/executions/<id>: 'running' for the first ``running_for`` polls, then done;
    each answer ``delay_s`` after its request (a slow n8n)."""

    def __init__(self, executions: dict[str, dict], running_for: int = 0, key: str = KEY,
                 delay_s: float = 0.0):
        self.seen: list[tuple[str, dict]] = []
        self.stop = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                api.seen.append((self.path, dict(self.headers)))
                if api.stop.wait(delay_s):
                    return
                if self.headers.get("X-N8N-API-KEY") != key:
                    return self._send(401, {"message": "unauthorized"})
                exec_id = self.path.split("?")[0].rsplit("/", 1)[-1]
                if exec_id not in executions:
                    return self._send(404, {"message": "Not Found"})
                polls = sum(1 for p, _ in api.seen if f"/{exec_id}?" in p)
                if polls <= running_for:
                    return self._send(200, {"id": exec_id, "finished": False,
                                            "status": "running", "data": {}})
                self._send(200, executions[exec_id])

            def _send(self, status, obj):
                send_json(self, status, obj)

        self.served = serve(Handler).start()
        self.url = self.served.url

    def close(self):
        self.stop.set()
        self.served.close()


@pytest.fixture
def api():
    servers = []

    def make(*args, **kw):
        servers.append(FakeN8nApi(*args, **kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def cfg(url: str, key: str = KEY, wait_s: float = 5) -> N8nUsage:
    return N8nUsage(api_url=url, api_key=key, wait_s=wait_s)


def reply(exec_id: str | None) -> str:
    return json.dumps({"answer": "42", **({"executionId": exec_id} if exec_id else {})})


def test_measure_waits_for_a_running_execution_then_sums_it(api):
    server = api({"7": execution("chat-completions-parallel")}, running_for=2)
    u = measure(cfg(server.url), [(1, "", reply("7"))])
    assert (u.model_calls, u.tokens, u.estimated) == (2, 249, False)
    assert u.note == "from n8n execution 7: 2 model call(s), tokens as the provider counted them"
    assert len(server.seen) == 3
    path, headers = server.seen[0]
    assert path == "/api/v1/executions/7?includeData=true"
    assert headers["X-N8N-API-KEY"] == KEY


def test_measure_sums_every_attempt_that_started_an_execution(api):
    server = api({"7": execution("chat-completions-parallel"), "8": execution("model-refused")})
    u = measure(cfg(server.url), [(1, "HTTP 500", reply("8")), (2, "", reply("7"))])
    assert (u.model_calls, u.tokens) == (3, 249)
    assert u.note.startswith("from n8n executions 8, 7: 3 model call(s) (1 failed, no tokens)")


def test_a_refused_connection_started_nothing_and_is_skipped(api):
    server = api({"7": execution("chat-completions-parallel")})
    u = measure(cfg(server.url), [(1, "connection refused (http://127.0.0.1:9/x)", None),
                                  (2, "", reply("7"))])
    assert (u.model_calls, u.tokens) == (2, 249)


@pytest.mark.parametrize("attempts, reason", [
    ([(1, "no reply within 60 s", None), (2, "", reply("7"))],
     "usage unknown: attempt 1's reply carries no execution id at 'executionId'"),
    ([(1, "", reply(None))], "usage unknown: attempt 1's reply carries no execution id at "
                             "'executionId'"),
    ([(1, "", reply("99"))], "usage unknown: n8n has no execution 99"),
])
def test_usage_that_cannot_be_read_is_unknown_never_zero_or_partial(api, attempts, reason):
    server = api({"7": execution("chat-completions-parallel")})
    u = measure(cfg(server.url), attempts)
    assert (u.model_calls, u.tokens) == (None, None)
    assert u.note.startswith(reason)


def test_a_refused_api_key_is_named_without_the_key(api):
    server = api({"7": execution("chat-completions-parallel")})
    u = measure(cfg(server.url, key="wrong-key-value-123456"), [(1, "", reply("7"))])
    assert u.tokens is None
    assert u.note.startswith("usage unknown: the n8n API refused the key (HTTP 401, ")
    assert "wrong-key-value-123456" not in u.note


def test_an_execution_still_running_after_wait_s_is_unknown(api):
    server = api({"7": execution("chat-completions-parallel")}, running_for=10**6)
    u = measure(cfg(server.url, wait_s=0.3), [(1, "", reply("7"))])
    assert u.note == "usage unknown: execution 7 still running after 0.3 s"


def asked(server: FakeN8nApi) -> list[str]:
    """The execution ids the API was asked for, in order."""
    return [p.split("?")[0].rsplit("/", 1)[-1] for p, _ in server.seen]


def test_one_wait_covers_every_attempts_execution(api):
    """Each execution finishes within wait_s, but not all of them: the cell waits wait_s in
    all, not per attempt (3 polls each: answered at 0, 0.1 and 0.3 s at the earliest)."""
    done = execution("chat-completions-parallel")
    server = api({"7": done, "8": done, "9": done}, running_for=2)
    u = measure(cfg(server.url, wait_s=0.5), [(1, "HTTP 500", reply("7")),
                                              (2, "HTTP 500", reply("8")), (3, "", reply("9"))])
    # which one was still running depends on the machine's speed (later, never sooner)
    assert re.fullmatch(r"usage unknown: execution [78] still running after 0\.5 s", u.note)
    assert (u.model_calls, u.tokens) == (None, None)
    assert "9" not in asked(server)  # the cell's wait was over before its turn


def test_one_overall_deadline_covers_every_attempts_execution(api, monkeypatch):
    """A slow API answering each execution in time, but not all of them: the cell's lookup
    ends wait_s + API_SLACK_S after it began (each answer takes 0.3 s of the 0.5 s)."""
    from exam.pipeline import n8n_usage

    monkeypatch.setattr(n8n_usage, "API_SLACK_S", 0.5)
    done = execution("chat-completions-parallel")
    server = api({"7": done, "8": done, "9": done}, delay_s=0.3)
    u = measure(cfg(server.url, wait_s=0), [(1, "HTTP 500", reply("7")),
                                            (2, "HTTP 500", reply("8")), (3, "", reply("9"))])
    assert re.fullmatch(r"usage unknown: the n8n API did not answer within 0\.5 s "
                        rf"\({re.escape(server.url)}/api/v1/executions/[78]\)", u.note)
    assert (u.model_calls, u.tokens) == (None, None)
    assert "9" not in asked(server)  # never asked for: the cell's time was up


def test_an_unreachable_api_is_unknown_with_the_url_and_no_secret():
    u = measure(cfg("http://127.0.0.1:9"), [(1, "", reply("7"))])
    assert u.note == ("usage unknown: cannot reach the n8n API "
                      "(http://127.0.0.1:9/api/v1/executions/7): ConnectionError")


def test_the_runner_stores_n8n_usage_and_the_scorecard_says_estimated_or_unknown(api, tmp_path):
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run, execute, job_for
    from exam.reports import scorecard
    from exam.reports.regrade import regrade
    from exam.store import Store
    from tests.exam.helpers import write_bank
    from tests.fakes.agent import OK_BODY, FakeAgent

    class N8nAgent(FakeAgent):
        def respond(self, h, behaviour, n):
            exec_id = {"estimated": "5", "lost": "404"}[behaviour]
            # the reply's own usage figures are ignored once n8n is the usage source
            self.json(h, {**OK_BODY, "executionId": exec_id})

    server = api({"5": execution("responses-api")})
    store = Store(tmp_path / "exam.db")
    try:
        with N8nAgent() as fake:
            bank = write_bank(tmp_path, ["estimated", "lost"], budget={"tokens": 3000})
            agent = Agent(name="T", url=fake.url, bank=str(bank), timeout_s=5,
                          n8n=cfg(server.url))
            run_id = create_run(store, agent, "v1")
            execute(store, [job_for(store, run_id, agent)])
        cells = {c.case_no: c for c in store.cells([run_id])}
        assert (cells["T-01"].model_calls, cells["T-01"].tokens) == (2, 85)
        assert cells["T-01"].tokens_estimated
        assert (cells["T-02"].model_calls, cells["T-02"].tokens) == (None, None)
        assert cells["T-02"].usage_note.startswith("usage unknown: n8n has no execution 404")
        report = scorecard.build(regrade(store, store.list_runs()))
    finally:
        store.close()
    card = report["scorecards"][0]
    assert card["tokens_estimated"] == 1 and card["usage_unknown"]["cells"] == 1
    by_case = {c["case_no"]: c["cells"][0] for c in card["cases"]}
    budget = {c["name"]: c for c in by_case["T-01"]["checks"]}["budget.tokens"]
    assert budget["evidence"] == "85 token(s) (estimated) ≤ budget 3000"
    assert {c["name"]: c for c in by_case["T-02"]["checks"]}["budget.tokens"]["outcome"] == \
        "not_graded"
    text = scorecard.render_text(report)
    assert "tokens (estimated) 85/85" in text
    assert "usage unknown in 1 cell(s): n8n has no execution 404" in text


def test_a_secret_in_the_n8n_api_urls_path_is_neither_in_the_note_nor_the_runs_settings(
        tmp_path):
    from exam.pipeline.registry import parse_registry
    from exam.pipeline.runner import create_run, execute, job_for
    from exam.store import Store
    from tests.exam.helpers import write_bank
    from tests.fakes.agent import OK_BODY, FakeAgent

    class N8nAgent(FakeAgent):
        def respond(self, h, behaviour, n):
            self.json(h, {**OK_BODY, "executionId": "7"})

    secret = "path-secret-XYZ12345"
    with N8nAgent() as fake:
        bank = write_bank(tmp_path, ["ok"])
        data = {"agents": {"T": {"url": fake.url, "bank": str(bank), "timeout_s": 5, "n8n": {
            "api_url": "http://127.0.0.1:9/${N8N_PATH}", "api_key": "${N8N_KEY}"}}}}
        agent = parse_registry(data, "agents.yaml",
                               {"N8N_PATH": secret, "N8N_KEY": KEY}).get("T")
        store = Store(tmp_path / "exam.db")
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
        cell = store.cells([run_id])[0]
        settings = store.get_run(run_id).settings
        store.close()
    assert cell.usage_note == ("usage unknown: cannot reach the n8n API "
                               "(http://127.0.0.1:9/[redacted]/api/v1/executions/7): "
                               "ConnectionError")
    assert settings["n8n"]["api_url"] == "http://127.0.0.1:9/[redacted]"
    dump = b"".join(p.read_bytes() for p in tmp_path.glob("exam.db*"))
    assert secret.encode() not in dump


@pytest.mark.parametrize(("value", "found"), [
    ("7", "7"), (7, "7"), ("2b1e-77", "2b1e-77"), ("x" * 64, "x" * 64), ("1" * 65, None),
    ("../7", None), ("7?x=1", None), (True, None), ({"id": 7}, None)])
def test_only_an_id_like_value_is_an_execution_id(value, found):
    assert execution_id(json.dumps({"executionId": value}), "executionId") == found


def test_an_endless_execution_id_is_no_id_and_the_note_stays_short(api):
    u = measure(cfg(api({}).url), [(1, "", reply("9" * 10_000))])
    assert u.note == "usage unknown: attempt 1's reply carries no execution id at 'executionId'"


class TricklingApi:
    """An n8n API that answers 200 and then sends its body a byte at a time, forever (each
    byte resets a read timeout), until the client hangs up or the test ends."""

    def __init__(self):
        self.trickling = threading.Event()
        self.hung_up = threading.Event()
        self.stop = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(10**9))
                self.end_headers()
                api.trickling.set()
                try:
                    self.wfile.write(b'{"status": "success", "data": "')
                    while not api.stop.wait(0.05):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                except OSError:  # the client shut the connection
                    api.hung_up.set()

        self.served = serve(Handler).start()
        self.url = self.served.url

    def close(self):
        self.stop.set()
        self.served.close()


def test_an_api_that_trickles_bytes_is_cut_at_one_overall_deadline_as_usage_unknown(
        monkeypatch, tmp_path):
    """The deadline covers the whole fetch, not each read; the cell keeps its answer and
    status (infrastructure trouble is never the agent's), with usage unknown and why."""
    from exam.pipeline import n8n_usage
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run, execute, job_for
    from exam.store import Store
    from tests.exam.helpers import write_bank
    from tests.fakes.agent import OK_BODY, FakeAgent

    monkeypatch.setattr(n8n_usage, "API_SLACK_S", 0.5)

    class N8nAgent(FakeAgent):
        def respond(self, h, behaviour, n):
            self.json(h, {**OK_BODY, "executionId": "7"})

    api = TricklingApi()
    store = Store(tmp_path / "exam.db")
    done = threading.Event()
    try:
        with N8nAgent() as fake:
            bank = write_bank(tmp_path, ["ok"])
            agent = Agent(name="T", url=fake.url, bank=str(bank), timeout_s=5,
                          n8n=cfg(api.url, wait_s=0.2))
            run_id = create_run(store, agent, "v1")
            worker = threading.Thread(target=lambda: (execute(
                store, [job_for(store, run_id, agent)]), done.set()), daemon=True)
            worker.start()
            assert api.trickling.wait(30)
            # a bound for the test to fail on, not a timing assertion: without the deadline
            # the fetch never ends
            assert done.wait(60), "the run is still waiting on the trickling n8n API"
        assert api.hung_up.wait(30)
        cell = store.cells([run_id])[0]
    finally:
        api.close()
        store.close()
    assert (cell.run_status, cell.error) == ("ok", "")
    assert (cell.model_calls, cell.tokens) == (None, None)
    assert cell.usage_note == ("usage unknown: the n8n API did not answer within 0.7 s "
                               f"({api.url}/api/v1/executions/7)")
