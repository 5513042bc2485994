from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from tests.conftest import BANK_DIR, ROOT


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_demo_bank_is_proven():
    result = run("bank", "check", str(BANK_DIR))
    assert result.exit_code == 0, result.output
    assert "3 file(s), 60 question(s)" in result.output


def test_breaking_a_golden_reply_names_the_question(tmp_path):
    data = json.loads((BANK_DIR / "W2.json").read_text(encoding="utf-8"))
    w206 = next(q for q in data["questions"] if q["case_no"] == "W2-06")
    w206["golden"][0] = "可以的，我們提供貨到付款。"
    (tmp_path / "W2.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = run("bank", "check", str(tmp_path))
    assert result.exit_code == 1
    assert "W2.json: W2-06.golden[0]: expected pass, got fail" in result.output


@pytest.mark.parametrize("golden", ["我幫您轉給客服確認。", {"answer": "我幫您轉給客服確認。"}])
def test_a_golden_without_steps_for_a_tool_check_says_how_to_give_them(tmp_path, golden):
    (tmp_path / "S.json").write_text(json.dumps({"agent": "S", "questions": [{
        "case_no": "S-01", "input": {"q": "x"}, "expect_facts": ["轉給客服"],
        "expect_tools": ["faq_lookup"], "golden": [golden],
        "counterexamples": ["我們有實體店"]}]}, ensure_ascii=False), encoding="utf-8")
    result = run("bank", "check", str(tmp_path / "S.json"))
    assert result.exit_code == 1
    assert ("S-01.golden[0]: expected pass, got needs_human: tools needs_human (agent reports no "
            "steps); a tool check needs the golden's steps: give it as the agent's JSON body, "
            "e.g. {\"answer\": \"…\", \"intermediateSteps\": [{\"action\": {\"tool\": \"…\"}}]}"
            ) in result.output


def test_a_counterexample_the_rubric_misses_is_a_problem(tmp_path):
    data = json.loads((BANK_DIR / "W2.json").read_text(encoding="utf-8"))
    data["questions"][0]["counterexamples"] = ["訂單滿 1000 元免運費，未滿的訂單運費 80 元。"]
    (tmp_path / "W2.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = run("bank", "check", str(tmp_path / "W2.json"))
    assert result.exit_code == 1
    assert "W2-01.counterexamples[0]: expected fail, got pass" in result.output


def test_unreadable_bank_exits_2(tmp_path):
    (tmp_path / "W1.json").write_text("[{", encoding="utf-8")
    result = run("bank", "check", str(tmp_path))
    assert result.exit_code == 2
    assert "W1.json: invalid JSON at line 1, column 3" in result.output


def test_empty_directory_exits_2(tmp_path):
    result = run("bank", "check", str(tmp_path))
    assert result.exit_code == 2 and "no bank files found" in result.output


REPLIES = [
    {"case_no": "W2-06", "reply": "本店目前不提供貨到付款，可改用信用卡。", "status": "ok"},
    {"case_no": "W2-06", "repeat": 2,
     "reply": {"answer": "可以的，我們提供貨到付款。", "status": "ok",
               "usage": {"model_calls": 3, "total_tokens": 1200}}},
    {"case_no": "W2-11", "reply": [{"output": "FAQ 中沒有提到是否有販售濾掛包。",
                                    "status": "not_in_faq"}]},
    {"case_no": "W2-01", "reply": "", "run_status": "timeout"},
]


def write_replies(tmp_path, rows):
    path = tmp_path / "replies.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return path


def test_grade_json_output(tmp_path):
    result = run("grade", str(BANK_DIR / "W2.json"), str(write_replies(tmp_path, REPLIES)),
                 "--format", "json")
    assert result.exit_code == 3  # a reply never arrived (as `exam run`: 3 before 1)
    out = json.loads(result.output)
    assert out["grader_version"]
    verdicts = [(r["case_no"], r["repeat"], r["run_status"], r["verdict"]) for r in out["results"]]
    assert verdicts == [("W2-06", 1, "ok", "pass"), ("W2-06", 2, "ok", "fail"),
                        ("W2-11", 1, "ok", "pass"), ("W2-01", 1, "timeout", None)]
    failing = out["results"][1]["checks"]
    forbidden = next(c for c in failing if c["name"] == "forbidden[0]")
    assert forbidden["unexpected"] == ["提供貨到付款|可以貨到付款"]
    assert "我們«提供貨到付款»" in forbidden["evidence"]
    tokens = next(c for c in failing if c["name"] == "budget.tokens")
    assert tokens["outcome"] == "pass"


def test_grade_text_output_uses_marks(tmp_path):
    result = run("grade", str(BANK_DIR / "W2.json"), str(write_replies(tmp_path, REPLIES)))
    assert "FAIL       W2-06 #2" in result.output
    assert "  ✗ forbidden[0]" in result.output
    assert "    + 提供貨到付款|可以貨到付款" in result.output
    assert "TIMEOUT    W2-01 #1  (run status timeout: no content verdict)" in result.output


def test_grade_exit_0_when_nothing_failed(tmp_path):
    result = run("grade", str(BANK_DIR / "W2.json"), str(write_replies(tmp_path, REPLIES[:1])))
    assert result.exit_code == 0


@pytest.mark.parametrize("lines,message", [
    ('{"case_no": "W2-06", "reply": "x"}\n{"case_no": "W2-99", "reply": "x"}\n',
     "r.jsonl: line 2: case_no 'W2-99' is not in"),
    ('{"case_no": "W2-06", "reply": "x", "repeat": "2"}\n',  # not a silent repeat 1
     "r.jsonl: line 1: W2-06.repeat: expected a whole number ≥ 1, found '2'"),
])
def test_grade_bad_line_is_one_message(tmp_path, lines, message):
    path = tmp_path / "r.jsonl"
    path.write_text(lines, encoding="utf-8")
    result = run("grade", str(BANK_DIR / "W2.json"), str(path))
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_console_script_runs_without_traceback(tmp_path):
    exe = shutil.which("exam", path=str(ROOT / ".venv" / "bin")) or shutil.which("exam")
    cmd = [exe] if exe else [sys.executable, "-m", "exam"]
    proc = subprocess.run([*cmd, "bank", "check", str(tmp_path / "missing.json")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "missing.json: no such file" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_bank_check_names_a_bank_the_registry_attaches_to_another_agent(tmp_path):
    shutil.copy(BANK_DIR / "W2.json", tmp_path / "W2.json")
    (tmp_path / "webhooks").mkdir()
    registry = tmp_path / "webhooks" / "agents.yaml"  # beside the banks, it would be read as one
    registry.write_text(f"agents:\n  W1: {{url: 'http://127.0.0.1:9/', bank: {tmp_path}/W2.json}}\n"
                        f"  W2: {{url: 'http://127.0.0.1:9/', bank: {tmp_path}/W2.json}}\n")
    result = CliRunner().invoke(main, ["bank", "check", str(tmp_path)],
                                env={"EXAM_AGENTS": str(registry)}, catch_exceptions=False)
    assert result.exit_code == 1
    assert (f"{tmp_path / 'W2.json'}: agent: the bank is for agent 'W2', but agents.W1.bank "
            "points at it: W2's questions are sent to W1 (point W1's bank: at its own file, or "
            "set \"agent\": \"W1\" in this one)") in result.output
    assert "1 problem(s)" in result.output


def test_bank_check_without_a_registry_checks_the_files_alone(tmp_path):
    shutil.copy(BANK_DIR / "W2.json", tmp_path / "W2.json")
    result = CliRunner().invoke(main, ["bank", "check", str(tmp_path)],
                                env={"EXAM_AGENTS": str(tmp_path / "none.yaml")},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_bank_check_with_a_registry_it_cannot_read_says_so(tmp_path):
    # the banks are still checked (exit 0), and the check that needed the registry is said
    # not to have been made, naming the file and what is wrong with it
    shutil.copy(BANK_DIR / "W2.json", tmp_path / "W2.json")
    registry = tmp_path / "agents.yaml"
    registry.write_text("agents: [unclosed\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["bank", "check", str(tmp_path / "W2.json")],
                                env={"EXAM_AGENTS": str(registry)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"note: {registry}" in result.output
    assert "the banks were checked without it" in result.output


def test_a_yaml_field_key_that_is_a_number_is_one_line_not_a_traceback(tmp_path):
    """`fields: {1: …}` loaded, and grading the golden split the key 1 as a dot path."""
    bank = tmp_path / "S.yaml"
    bank.write_text("agent: S\nquestions:\n  - case_no: S-01\n    input: {q: x}\n"
                    "    expect_facts: [備貨中]\n    fields: {1: {mode: must_include, "
                    "keywords: []}}\n    golden: [備貨中]\n", encoding="utf-8")
    result = run("bank", "check", str(bank))
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        f"{bank}:6: S-01.fields.1: key 1 is a number, not text: quote it (\"1\")")


HOSTILE_CASE = "S-01\x00\n\u202eok\x1b]0;pwned\x07\x1b[2Jend"


@pytest.mark.parametrize("quiet", [[], ["--quiet"]])
def test_a_case_number_with_control_characters_is_printed_escaped(tmp_path, quiet):
    """As every other command prints what a bank or an agent wrote: NUL, a newline that would
    fake a line, U+202E, a window-title (OSC) escape shown, not obeyed."""
    (tmp_path / "S.json").write_text(json.dumps({"agent": "S", "questions": [{
        "case_no": HOSTILE_CASE, "input": {"q": "x"}, "expect_facts": ["轉給客服"],
        "golden": ["我們有實體店"], "counterexamples": ["我幫您轉給客服確認。"]}]},
        ensure_ascii=False), encoding="utf-8")
    result = run("bank", "check", *quiet, str(tmp_path))
    assert result.exit_code in (1, 2), result.output
    assert not set(result.output) & set("\x00\x1b\x07\u202e"), repr(result.output)
    assert "S-01\\x00\\n\\u202eok\\x1b]0;pwned\\x07\\x1b[2Jend" in result.output
    for line in result.output.splitlines():  # no line begins with the case number's tail
        assert not line.startswith("\\u202eok"), line
