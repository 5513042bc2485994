"""`exam bank check` reads example replies the way runs do (issue 31): an object is the agent's
JSON body, read through the agent's reply mapping; one whose text cannot be read is a bank
error, never a proof."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from exam.bank.check import check_paths
from exam.cli.main import main
from exam.reading import ReplyMapping


def _bank(tmp_path, golden, counterexamples, agent="W9"):
    path = tmp_path / "bank" / f"{agent}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"agent": agent, "questions": [{
        "case_no": f"{agent}-01", "input": {"question": "運費怎麼算？"},
        "expect_facts": ["1000"], "expect_forbidden": ["全館免運"],
        "golden": golden, "counterexamples": counterexamples}]}, ensure_ascii=False))
    return path


NESTED = ReplyMapping(text=("data.answer",), status="data.status")


def test_an_object_is_read_through_the_agents_mapping(tmp_path):
    path = _bank(tmp_path, [{"data": {"answer": "滿 1000 元免運"}}],
                 [{"data": {"answer": "全館免運喔"}}])
    report = check_paths([path], readers={"W9": (NESTED, "json")})
    assert report.problems == []


def test_a_counterexample_whose_text_cannot_be_read_is_a_bank_error_not_a_proof(tmp_path):
    """It fails for want of text, which proves nothing about the rubric."""
    path = _bank(tmp_path, [{"data": {"answer": "滿 1000 元免運"}}], [{"answer": "全館免運喔"}])
    report = check_paths([path], readers={"W9": (NESTED, "json")})
    assert [str(p) for p in report.problems] == [
        f"{path}: W9-01.counterexamples[0]: cannot be read as W9's reply: no text at data.answer "
        "(the reply's keys: answer)"]


def test_a_golden_whose_text_cannot_be_read_says_so(tmp_path):
    path = _bank(tmp_path, [{"answer": "滿 1000 元免運"}], ["全館免運喔"])
    report = check_paths([path], readers={"W9": (NESTED, "json")})
    assert len(report.problems) == 1
    assert "W9-01.golden[0]: cannot be read as W9's reply: no text at data.answer" in str(
        report.problems[0])


def test_without_a_registry_objects_are_read_with_the_default_mapping(tmp_path):
    path = _bank(tmp_path, [{"answer": "滿 1000 元免運"}], [{"output": {"x": 1}}])
    report = check_paths([path])
    assert len(report.problems) == 1
    assert ("W9-01.counterexamples[0]: cannot be read as W9's reply: no text at output: "
            in str(report.problems[0]))


def test_an_object_for_an_agent_that_answers_plain_text_is_a_bank_error(tmp_path):
    path = _bank(tmp_path, ["滿 1000 元免運"], [{"answer": "全館免運喔"}])
    report = check_paths([path], readers={"W9": (ReplyMapping(), "text")})
    assert len(report.problems) == 1
    assert "answers plain text (format: text): write the example as the text" in str(
        report.problems[0])


@pytest.mark.parametrize("answer_path", ["data.answer", "answer"])
def test_bank_check_uses_the_registrys_mapping(tmp_path, monkeypatch, answer_path):
    path = _bank(tmp_path, [{"data": {"answer": "滿 1000 元免運"}}],
                 [{"data": {"answer": "全館免運喔"}}])
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"W9": {
        "url": "http://127.0.0.1:9/x", "bank": str(path), "reply": {"text": answer_path}}}}))
    monkeypatch.setenv("EXAM_AGENTS", str(registry))
    result = CliRunner().invoke(main, ["bank", "check", str(path)])
    if answer_path == "data.answer":
        assert result.exit_code == 0, result.output
    else:  # read through `answer`, neither example has text: two bank errors, not a proof
        assert result.exit_code == 1, result.output
        assert result.output.count("cannot be read as W9's reply") == 2
