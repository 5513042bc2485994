"""The exam against a real n8n 2.x: what the Python fakes never did.

Each test writes a bank and a registry, runs `exam run` against the session's n8n (see
conftest.py) and asserts on what was stored and reported. The AI Agent workflows call a fake
OpenAI-compatible model of ours, which records what it billed, so usage read back from n8n
is compared with what the model really charged.
"""

from __future__ import annotations

import json

import requests
import yaml
from click.testing import CliRunner

from exam.cli.main import main
from exam.store import Store


def exam(tmp_path, agent: dict, questions: list[dict], *args: str, env: dict | None = None):
    """`exam run T` on one agent; returns (exit code, output, the run's stored cells)."""
    bank = tmp_path / "T.json"
    bank.write_text(json.dumps({"agent": "T", "questions": questions}, ensure_ascii=False),
                    encoding="utf-8")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {"bank": str(bank), "timeout_s": 90,
                                                         **agent}}}), encoding="utf-8")
    db = tmp_path / "exam.db"
    result = CliRunner().invoke(main, ["run", "T", "--version", "v1", *args],
                                env={"EXAM_AGENTS": str(registry), "EXAM_DB": str(db),
                                     **(env or {})}, catch_exceptions=False)
    store = Store(db)
    try:
        run = store.list_runs("T")[0]
        cells = {c.case_no: c for c in store.cells([run.id])}
        attempts = {c: store.attempts(run.id, c, 1) for c in cells}
    finally:
        store.close()
    return result, cells, attempts


def order_question(case_no: str, **input_) -> dict:
    return {"case_no": case_no, "category": "n8n", "input": {"order": "A10302", **input_},
            "expect_facts": ["備貨中"]}


# -- replies as n8n sends them ---------------------------------------------------------------

def test_a_long_reply_n8n_compresses_is_read_decoded(n8n, tmp_path):
    url = f"{n8n.url}/webhook/exam-plain"
    # the premise: n8n gzips a reply over 1 KB for a client that accepts gzip (requests does)
    probe = requests.post(url, json={"order": "A10302", "pad": 3000}, stream=True, timeout=60)
    assert probe.raw.headers.get("Content-Encoding") == "gzip"
    probe.close()
    result, cells, attempts = exam(tmp_path, {"url": url},
                                   [order_question("T-01", pad=3000)], "--format", "json")
    cell = cells["T-01"]
    assert (cell.run_status, cell.error) == ("ok", "")
    assert "備貨中" in cell.text
    body = json.loads(attempts["T-01"][0].body)  # the stored raw body is the decoded text
    assert body["detail"] == "備" * 3000
    assert json.loads(result.output)["scorecards"][0]["verdicts"]["pass"] == 1


def test_an_unarmed_test_url_is_an_http_error_with_n8ns_hint(n8n, tmp_path):
    result, cells, _ = exam(tmp_path, {"url": f"{n8n.url}/webhook-test/exam-plain"},
                            [order_question("T-01")])
    cell = cells["T-01"]
    assert cell.run_status == "http_error"
    assert cell.error.startswith("HTTP 404: The requested webhook")
    assert "is not registered" in cell.error and " — hint: " in cell.error
    assert result.exit_code == 3  # not answered: infrastructure, never the agent's content


def test_a_plain_text_reply_is_a_bad_reply_unless_the_registry_says_text(n8n, tmp_path):
    url = f"{n8n.url}/webhook/exam-text"
    (tmp_path / "json").mkdir()
    _, cells, attempts = exam(tmp_path / "json", {"url": url}, [order_question("T-01")])
    assert cells["T-01"].run_status == "bad_reply"
    assert cells["T-01"].error.startswith("not JSON: '答案：訂單 A10302")
    assert attempts["T-01"][0].content_type.startswith("text/html")
    (tmp_path / "text").mkdir()
    _, cells, _ = exam(tmp_path / "text", {"url": url, "reply": {"format": "text"}},
                       [order_question("T-01")])
    assert cells["T-01"].run_status == "ok"
    assert cells["T-01"].text == "答案：訂單 A10302 目前備貨中。"


# -- an AI Agent: its cost measured, its failures told apart ---------------------------------

def agent_question(case_no: str, question: str, **extra) -> dict:
    return {"case_no": case_no, "category": "agent", "input": {"question": question},
            "expect_facts": ["42"], "expect_tools": ["Calculator"],
            "budget": {"tokens": 3000, "model_calls": 4}, **extra}


def usage_from_n8n(n8n) -> dict:
    return {"n8n": {"api_url": n8n.url, "api_key": "${N8N_TEST_API_KEY}", "wait_s": 30}}


def billed(fake_model, prompt: str) -> tuple[int, int]:
    """(model calls, tokens) the fake model really served for one work order."""
    calls = fake_model.calls_for(prompt)
    return len(calls), sum(c.prompt_tokens + c.completion_tokens for c in calls)


def test_ai_agent_model_calls_and_tokens_come_from_its_execution(n8n, fake_model, tmp_path):
    prompts = {"T-01": "what is 6*7? (one tool call)",
               "T-02": "[parallel] what are 6*7 and 2+3? (two tool calls in one turn)"}
    result, cells, _ = exam(
        tmp_path, {"url": f"{n8n.url}/webhook/exam-agent", **usage_from_n8n(n8n)},
        [agent_question(c, p) for c, p in prompts.items()], "--format", "json",
        env={"N8N_TEST_API_KEY": n8n.api_key})
    for case_no, prompt in prompts.items():
        cell = cells[case_no]
        assert cell.run_status == "ok", cell.error
        calls, tokens = billed(fake_model, prompt)
        assert (cell.model_calls, cell.tokens, cell.tokens_estimated) == (calls, tokens, False)
        assert cell.usage_note.startswith("from n8n execution ")
        assert "tokens as the provider counted them" in cell.usage_note
    # two tool calls in one turn are one model call: 2 steps, 2 calls (not steps + 1)
    assert len(cells["T-02"].steps) == 2 and cells["T-02"].model_calls == 2
    assert len(cells["T-01"].steps) == 1 and cells["T-01"].model_calls == 2
    card = json.loads(result.output)["scorecards"][0]
    checks = {c["name"]: c for c in card["cases"][0]["cells"][0]["checks"]}
    assert checks["budget.tokens"]["outcome"] == "pass"
    assert card["verdicts"]["pass"] == 2
    assert n8n.api_key not in result.output


def test_agents_check_reads_an_ai_agents_usage_from_its_execution_as_a_run_does(
        n8n, fake_model, tmp_path):
    """The first-hour check of an `n8n:` registry entry: what a run will store, not the
    reply's (absent) usage; a wrong key is named before any run."""
    prompt = "what is 6*7? (agents check)"
    bank = tmp_path / "T.json"
    bank.write_text(json.dumps({"agent": "T", "questions": [agent_question("T-01", prompt)]}),
                    encoding="utf-8")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {
        "bank": str(bank), "timeout_s": 90, "url": f"{n8n.url}/webhook/exam-agent",
        **usage_from_n8n(n8n)}}}), encoding="utf-8")

    def check(key: str):
        return CliRunner().invoke(main, ["agents", "check", "T", "--agents", str(registry)],
                                  env={"N8N_TEST_API_KEY": key}, catch_exceptions=False)

    ok = check(n8n.api_key)
    assert ok.exit_code == 0, ok.output
    calls, tokens = billed(fake_model, prompt)
    assert f"  model calls  {calls}\n" in ok.output and f"  tokens       {tokens}\n" in ok.output
    assert "  usage        from n8n execution " in ok.output
    refused = check("not-the-n8n-api-key-0123")
    assert refused.exit_code == 3
    assert "usage unknown: the n8n API refused the key (HTTP 401" in refused.output
    assert n8n.api_key not in ok.output + refused.output


def test_responses_api_tokens_are_stored_and_reported_as_an_estimate(n8n, fake_model, tmp_path):
    prompt = "what is 6*7? (Responses API)"
    result, cells, _ = exam(
        tmp_path, {"url": f"{n8n.url}/webhook/exam-agent-responses", **usage_from_n8n(n8n)},
        [agent_question("T-01", prompt)], env={"N8N_TEST_API_KEY": n8n.api_key})
    cell = cells["T-01"]
    assert cell.run_status == "ok", cell.error
    assert cell.model_calls == billed(fake_model, prompt)[0] == 2
    assert cell.tokens_estimated and cell.tokens > 0
    assert "n8n's estimate of tokens" in cell.usage_note
    assert "tokens (estimated)" in result.output  # the scorecard says so


def test_without_a_usage_source_an_agents_tokens_are_not_graded_never_zero(n8n, tmp_path):
    result, cells, _ = exam(tmp_path, {"url": f"{n8n.url}/webhook/exam-agent"},
                            [agent_question("T-01", "what is 6*7? (no usage source)")],
                            "--format", "json")
    cell = cells["T-01"]
    assert cell.run_status == "ok" and (cell.model_calls, cell.tokens) == (None, None)
    checks = {c["name"]: c for c in
              json.loads(result.output)["scorecards"][0]["cases"][0]["cells"][0]["checks"]}
    assert checks["budget.tokens"]["outcome"] == "not_graded"
    assert checks["budget.tokens"]["evidence"] == "the agent did not report tokens"


def test_an_agent_that_reports_its_own_failure_is_an_agent_error_not_transport(
        n8n, fake_model, tmp_path):
    prompt = "[fail] the model refuses this one"
    result, cells, attempts = exam(
        tmp_path, {"url": f"{n8n.url}/webhook/exam-agent", "retries": 2, **usage_from_n8n(n8n)},
        [agent_question("T-01", prompt)], env={"N8N_TEST_API_KEY": n8n.api_key})
    cell = cells["T-01"]
    assert cell.run_status == "agent_error"
    assert cell.error.startswith("HTTP 500: the agent reported its own failure: Bad request")
    assert cell.attempts == 1  # the agent answered: a 500 that says why is not retried
    assert len(fake_model.calls_for(prompt)) == 1
    assert cell.model_calls == 1 and "1 failed" in cell.usage_note
    assert attempts["T-01"][0].http_status == 500
    assert "agent_error 1" in result.output
    assert result.exit_code == 3
