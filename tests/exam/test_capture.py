"""`exam capture`: an n8n execution (or a recorded reply) becomes a draft question.

The executions are the real n8n 2.40.7's (tests/exam/data, fetched and trimmed) with a work
order a customer could have sent: a phone number, an e-mail, a pasted API key. The n8n API is
a small server on 127.0.0.1 answering as n8n's public API does.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from exam.cli.main import main
from exam.personal import scrub_text
from exam.pipeline.capture import CaptureError, execution_ref, next_case_no, parse_since
from tests.fakes.n8n_api import AGENT_TOKEN, KEY, FakeN8nApi, n8n_execution

PASTED_KEY = "sk-live-9f8e7d6c5b4a39281706abcd"  # a customer pasted it into the chat
PHONE, EMAIL = "0912-345-678", "wang.xiaoming@example.com.tw"
GOLDEN = "訂單滿 1000 元免運費，未滿 1000 元的訂單運費 80 元。"


ORDER = {"task_id": "LINE-7731", "question": f"運費怎麼算？我的電話 {PHONE}，信箱 {EMAIL}",
         "api_key": PASTED_KEY, "note": f"key again: {PASTED_KEY} and {AGENT_TOKEN}"}


NOW = dt.datetime.now(dt.UTC)


def ago(**kw) -> str:
    return (NOW - dt.timedelta(**kw)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture
def n8n():
    executions = [
        n8n_execution("model-refused", "41", ORDER, ago(hours=2)),
        n8n_execution("model-refused", "44", {"question": "可以貨到付款嗎？"}, ago(minutes=5)),
        n8n_execution("chat-completions-parallel", "43", {"question": "fine"}, ago(hours=1)),
        n8n_execution("model-refused", "12", {"question": "long ago"}, ago(days=9)),
    ]
    errored = n8n_execution("chat-completions-parallel", "42", {"question": "crash"}, ago(hours=3))
    errored.update(status="error")
    errored["data"]["resultData"]["error"] = {"message": "Workflow crashed"}
    del errored["data"]["resultData"]["runData"]["Respond"]
    executions.append(errored)
    workflows = [{"id": "wfOther", "nodes": [{"type": "n8n-nodes-base.webhook",
                                               "parameters": {"path": "other"}}]},
                 {"id": "wfW2", "nodes": [{"type": "n8n-nodes-base.webhook",
                                            "parameters": {"path": "w2-faq"}}]}]
    api = FakeN8nApi(executions, workflows)
    yield api
    api.close()


def bank_with(path: Path, indent: int = 2) -> Path:
    questions = [{"case_no": f"W2-{n:02d}", "category": "FAQ", "input": {"question": f"q{n}"},
                  "expect_status": "ok", "expect_facts": ["1000"], "golden": ["1000 元"],
                  "counterexamples": ["免運"]} for n in (11, 12)]
    path.write_text(json.dumps({"agent": "W2", "questions": questions}, ensure_ascii=False,
                               indent=indent), encoding="utf-8")
    return path


@pytest.fixture
def setup(tmp_path, n8n):
    bank = bank_with(tmp_path / "W2.json")
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"W2": {
        "url": "http://127.0.0.1:9/webhook/w2-faq", "bank": str(bank),
        "headers": {"X-Exam-Token": "${W2_TOKEN}"},
        "n8n": {"api_url": n8n.url, "api_key": "${N8N_KEY}", "wait_s": 2}}}}), encoding="utf-8")
    env = {"EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db"),
           "N8N_KEY": KEY, "W2_TOKEN": AGENT_TOKEN}
    return bank, env


def invoke(env, *args):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def fill(bank: Path, case_no: str, **fields) -> None:
    data = json.loads(bank.read_text(encoding="utf-8"))
    q = next(q for q in data["questions"] if q["case_no"] == case_no)
    q.update(fields)
    bank.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def test_an_error_output_execution_becomes_a_draft_that_guards_once_written(setup):
    bank, env = setup
    r = invoke(env, "capture", "W2", "41")
    assert r.exit_code == 0, r.output
    assert f"{bank}: W2-13: draft question written from n8n execution 41" in r.output
    text = bank.read_text(encoding="utf-8")
    for secret in (KEY, AGENT_TOKEN, PASTED_KEY, PHONE, "0912", EMAIL):
        assert secret not in text and secret not in r.output
    q = json.loads(text)["questions"][-1]
    assert q["case_no"] == "W2-13"
    assert q["input"]["task_id"] == "LINE-7731"  # the work order as received, but redacted
    assert q["input"]["question"] == ("運費怎麼算？我的電話 [redacted phone]，信箱 "
                                      "[redacted email]")
    assert q["input"]["api_key"] == "[redacted credential]"
    assert q["counterexamples"] == ["Bad request - please check your parameters"]
    notes = q["notes"]
    assert "n8n execution 41" in notes and "agent W2" in notes
    assert NOW.date().isoformat() in notes and "error output of node 'AI Agent'" in notes
    assert "phone at input.question" in notes and "email at input.question" in notes
    assert "credential at input.api_key" in notes and "secret at input.note" in notes

    # bank check names each TODO: file, question, field
    r = invoke(env, "bank", "check", str(bank))
    assert r.exit_code == 1
    todo = [line for line in r.output.splitlines() if "still a placeholder" in line]
    assert [t.split(": ")[1] for t in todo] == [
        "W2-13.expect_status", "W2-13.expect_facts[0]", "W2-13.expect_forbidden[0]",
        "W2-13.golden[0]"]
    assert all(t.startswith(f"{bank}: ") for t in todo)
    assert f"{bank}: W2-13.expect_facts[0]: still a placeholder: write what must appear" \
        in r.output

    # exam run refuses the bank, naming the TODOs, and sends nothing
    r = invoke(env, "run", "W2", "--version", "v1")
    assert r.exit_code == 2
    assert "W2-13.golden[0]: still a placeholder" in r.output
    assert "4 TODO(s) left in W2-13" in r.output

    # written, the question fails on the captured reply and passes on a golden one
    fill(bank, "W2-13", expect_status="ok", expect_facts=["1000", "80"],
         expect_forbidden=["全館免運|一律免運"], golden=[GOLDEN])
    r = invoke(env, "bank", "check", str(bank))
    assert r.exit_code == 0, r.output
    # and the check is real: with the captured reply as its golden, the same rubric fails it
    captured = json.loads(bank.read_text(encoding="utf-8"))["questions"][-1]["counterexamples"]
    fill(bank, "W2-13", golden=captured)
    r = invoke(env, "bank", "check", str(bank))
    assert r.exit_code == 1 and "W2-13.golden[0]: expected pass, got fail" in r.output


def test_the_editors_url_of_an_execution_is_read_as_its_id(setup, n8n):
    bank, env = setup
    r = invoke(env, "capture", "W2", f"{n8n.url}/workflow/wfW2/executions/43", "--dry-run")
    assert r.exit_code == 0, r.output
    q = json.loads(r.output[:r.output.rindex("}") + 1])
    # a reply with the answer text is kept as the agent's body, its steps slimmed
    assert q["counterexamples"][0]["output"].startswith("The calculator says")
    assert q["counterexamples"][0]["intermediateSteps"][0] == {
        "action": {"tool": "Calculator", "toolInput": {"input": "6*7"}},
        "observation": '[{"response":"42"}]'}
    assert "W2-13" not in bank.read_text(encoding="utf-8")  # --dry-run writes nothing


def test_a_failed_execution_without_a_reply_is_captured_with_its_error(setup):
    bank, env = setup
    r = invoke(env, "capture", "W2", "42")
    assert r.exit_code == 0, r.output
    q = json.loads(bank.read_text(encoding="utf-8"))["questions"][-1]
    assert q["counterexamples"] == ["Workflow crashed"]


def test_list_shows_failures_and_error_outputs_newest_first_and_writes_nothing(setup, n8n):
    bank, env = setup
    before = bank.read_text(encoding="utf-8")
    r = invoke(env, "capture", "W2", "--list", "--since", "7d")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["44", "41", "42"]  # not 43 (fine), 12 (old)
    assert "error output of node 'AI Agent'" in lines[0] and "可以貨到付款嗎" in lines[0]
    assert "error: Workflow crashed" in lines[2]
    assert "3 execution(s) of W2" in lines[-1]
    for secret in (PHONE, EMAIL, PASTED_KEY, KEY):
        assert secret not in r.output
    assert bank.read_text(encoding="utf-8") == before
    assert any(p.startswith("/api/v1/executions?") and "workflowId=wfW2" in p for p in n8n.seen)


def test_a_recorded_reply_of_any_agent_is_captured(setup, tmp_path):
    bank, env = setup
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps({"answer": f"全館免運費喔！有問題打 {PHONE}", "status": "ok"},
                                ensure_ascii=False), encoding="utf-8")
    r = invoke(env, "capture", "W2", "--reply", str(reply),
               "--work-order", json.dumps({"question": "運費怎麼算？"}, ensure_ascii=False))
    assert r.exit_code == 0, r.output
    q = json.loads(bank.read_text(encoding="utf-8"))["questions"][-1]
    assert q["input"] == {"question": "運費怎麼算？"}
    assert q["counterexamples"] == [{"answer": "全館免運費喔！有問題打 [redacted phone]",
                                     "status": "ok"}]
    assert "recorded reply reply.json" in q["notes"] and "phone at reply.answer" in q["notes"]


def test_the_banks_layout_is_kept(tmp_path, setup):
    bank, env = setup
    bank_with(bank, indent=4)
    before = json.loads(bank.read_text(encoding="utf-8"))
    assert invoke(env, "capture", "W2", "41").exit_code == 0
    after = bank.read_text(encoding="utf-8")
    before["questions"].append(json.loads(after)["questions"][-1])
    assert after == json.dumps(before, ensure_ascii=False, indent=4)


@pytest.mark.parametrize("args, message", [
    (("W2",), "give an EXECUTION (id or URL), --reply FILE, or --list"),
    (("W2", "41", "--reply", "r.json"), "give EXECUTION or --reply FILE, not both"),
    (("W2", "--reply", "r.json"), "--reply needs the work order"),
    (("W2", "--list", "--since", "soon"), "--since: expected a span such as 7d"),
    (("W2", "999"), "n8n has no execution 999"),
    (("W2", "ftp://x/y"), "not an execution id nor the n8n editor's URL"),
    (("NOPE", "41"), "NOPE"),
])
def test_bad_input_is_one_line(setup, args, message):
    _, env = setup
    r = invoke(env, "capture", *args)
    assert r.exit_code == 2 and message in r.output, r.output


def test_a_yaml_bank_is_refused_with_a_way_out(setup, tmp_path):
    bank, env = setup
    yml = tmp_path / "W2.yaml"
    yml.write_text(yaml.safe_dump(json.loads(bank.read_text(encoding="utf-8")),
                                  allow_unicode=True), encoding="utf-8")
    registry = Path(env["EXAM_AGENTS"])
    reg = yaml.safe_load(registry.read_text())
    reg["agents"]["W2"]["bank"] = str(yml)
    registry.write_text(yaml.safe_dump(reg))
    r = invoke(env, "capture", "W2", "41")
    assert r.exit_code == 2 and "capture writes JSON banks only" in r.output
    assert "--dry-run" in r.output
    r = invoke(env, "capture", "W2", "41", "--dry-run")
    assert r.exit_code == 0 and '"case_no": "W2-13"' in r.output


def test_an_agent_without_n8n_says_what_to_set(setup):
    _, env = setup
    registry = Path(env["EXAM_AGENTS"])
    reg = yaml.safe_load(registry.read_text())
    del reg["agents"]["W2"]["n8n"]
    registry.write_text(yaml.safe_dump(reg))
    r = invoke(env, "capture", "W2", "41")
    assert r.exit_code == 2 and "agent W2 has no `n8n:` block" in r.output


@pytest.mark.parametrize("case_nos, expected", [
    (["W2-11", "W2-12"], "W2-13"),
    (["W2-01", "W2-09", "W2-03"], "W2-10"),
    (["T-1", "T-2"], "T-3"),
    (["W2-099"], "W2-100"),
    (["A-01", "W2-01", "W2-02"], "W2-03"),
    ([], "W2-01"),
    (["intro"], "W2-01"),
])
def test_the_next_case_number_follows_the_banks_style(case_nos, expected):
    assert next_case_no(case_nos, "W2") == expected


@pytest.mark.parametrize("text, kinds", [
    (f"call me at {PHONE}", ["phone"]),
    ("call +886 912 345 678", ["phone"]),
    ("office (02) 2345-6789", ["phone"]),
    (f"mail {EMAIL}", ["email"]),
    ("card 4111 1111 1111 1111", ["card number"]),
    ("Authorization: Bearer abcdefghijklmnop", ["token"]),
    ("key eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl", ["token"]),
    ("id A123456789", ["national id"]),
    # not personal data: an order, a price, a date, 16 digits that are no card
    ("訂單 A10302，1,280 元，2026-09-16 到貨", []),
    ("order 1234 5678 9012 3456", []),
])
def test_personal_data_is_found_by_its_shape(text, kinds):
    clean, found = scrub_text(text)
    assert found == kinds
    assert ("[redacted" in clean) == bool(kinds)


@pytest.mark.parametrize("text, found", [
    ("41", "41"), ("https://n8n.example.com/workflow/AbC/executions/41", "41"),
    ("https://n8n.example.com/workflow/AbC/executions/41/", "41"),
    ("https://n8n.example.com/home?executionId=7", "7"),
])
def test_an_execution_is_named_by_id_or_url(text, found):
    assert execution_ref(text) == found


def test_since_reads_spans():
    assert parse_since("7d") == dt.timedelta(days=7)
    assert parse_since("30m") == dt.timedelta(minutes=30)
    with pytest.raises(CaptureError):
        parse_since("7 days")


def test_a_blocked_agent_is_named_not_sent_with_an_empty_key(setup, n8n):
    _, env = setup
    env = {k: v for k, v in env.items() if k != "N8N_KEY"}
    seen = len(n8n.seen)
    r = CliRunner().invoke(main, ["capture", "W2", "41"], env={**env, "N8N_KEY": None},
                           catch_exceptions=False)
    assert r.exit_code == 2 and "agent W2 is blocked" in r.output and "N8N_KEY" in r.output
    assert len(n8n.seen) == seen  # nothing asked of n8n


def test_a_work_order_the_size_of_a_transcript_is_refused(setup, tmp_path):
    bank, env = setup
    reply = tmp_path / "r.txt"
    reply.write_text("全館免運", encoding="utf-8")
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"question": "字" * 250_000}, ensure_ascii=False),
                     encoding="utf-8")
    before = bank.read_text(encoding="utf-8")
    r = invoke(env, "capture", "W2", "--reply", str(reply), "--input", str(order))
    assert r.exit_code == 2 and "a question is a work order, not a transcript" in r.output
    assert bank.read_text(encoding="utf-8") == before


def test_a_work_order_nested_past_what_a_bank_holds_is_refused(setup, tmp_path):
    bank, env = setup
    reply = tmp_path / "r.txt"
    reply.write_text("全館免運", encoding="utf-8")
    deep: dict = {"q": "x"}
    for _ in range(150):
        deep = {"d": deep}
    r = invoke(env, "capture", "W2", "--reply", str(reply), "--work-order", json.dumps(deep))
    assert r.exit_code == 2 and "nested deeper than 100 levels" in r.output, r.output
    assert "W2-13" not in bank.read_text(encoding="utf-8")
