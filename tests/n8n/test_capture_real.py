"""`exam capture` against the real n8n of the session: a failed AI Agent execution (the fake
model refuses it, the workflow takes the AI Agent's error output) becomes a draft question."""

from __future__ import annotations

import json

import requests
import yaml
from click.testing import CliRunner

from exam.cli.main import main

PHONE = "0912-345-678"
PASTED = "sk-live-4b3c2d1e0f9a8b7c6d5e4f3a"  # a customer pasted a key into the chat
HEADER_SECRET = "webhook-header-secret-778899"  # sent as a header: n8n keeps it in the execution
GOLDEN = {"answer": "6*7 = 42", "status": "ok",
          "intermediateSteps": [{"action": {"tool": "Calculator"}}]}


def test_a_failed_ai_agent_execution_is_captured_and_guards_once_written(n8n, tmp_path):
    order = {"question": f"[fail] what is 6*7? call me on {PHONE}", "api_key": PASTED}
    resp = requests.post(f"{n8n.url}/webhook/exam-agent", json=order, timeout=90,
                         headers={"X-Shop-Token": HEADER_SECRET})
    assert resp.status_code == 500, resp.text  # the workflow's "Respond with the failure"
    exec_id = str(resp.json()["executionId"])

    bank = tmp_path / "T.json"
    bank.write_text(json.dumps({"agent": "T", "questions": [
        {"case_no": "T-01", "input": {"question": "what is 6*7?"}, "expect_facts": ["42"],
         "golden": ["42"], "counterexamples": ["41"]}]}, indent=2), encoding="utf-8")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {
        "url": f"{n8n.url}/webhook/exam-agent", "bank": str(bank),
        "n8n": {"api_url": n8n.url, "api_key": "${N8N_TEST_API_KEY}", "wait_s": 30}}}}),
        encoding="utf-8")
    env = {"EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db"),
           "N8N_TEST_API_KEY": n8n.api_key}

    def exam(*args: str):
        return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)

    listed = exam("capture", "T", "--list", "--since", "1h")
    assert listed.exit_code == 0, listed.output
    mine = [line for line in listed.output.splitlines() if line.split()[:1] == [exec_id]]
    assert mine and "error output of node 'AI Agent'" in mine[0], listed.output
    assert PHONE not in listed.output and PASTED not in listed.output

    url = f"{n8n.url}/workflow/examAgentChat001/executions/{exec_id}"  # as the editor shows it
    r = exam("capture", "T", url)
    assert r.exit_code == 0, r.output
    text = bank.read_text(encoding="utf-8")
    for secret in (n8n.api_key, PHONE, PASTED, HEADER_SECRET):
        assert secret not in text and secret not in r.output + listed.output
    q = json.loads(text)["questions"][-1]
    assert q["case_no"] == "T-02"
    assert q["input"] == {"question": "[fail] what is 6*7? call me on [redacted phone]",
                          "api_key": "[redacted credential]"}
    assert q["counterexamples"] == ["Bad request - please check your parameters"]
    assert f"n8n execution {exec_id}" in q["notes"] and "agent T" in q["notes"]

    checked = exam("bank", "check", str(bank))
    assert checked.exit_code == 1
    assert checked.output.count("T-02.") == 4 and "still a placeholder" in checked.output

    data = json.loads(text)
    data["questions"][-1].update(expect_status="ok", expect_facts=["42"],
                                 expect_forbidden=["41"], golden=[GOLDEN])
    bank.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    checked = exam("bank", "check", str(bank))
    assert checked.exit_code == 0, checked.output  # the captured reply fails, the golden passes
