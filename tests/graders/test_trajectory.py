"""Tool-trajectory checks, on replies read the way the runner reads them."""

from __future__ import annotations

from exam.pipeline.registry import parse_registry
from exam.reading import DEFAULT_MAPPING, read_body, to_reply
from graders import ToolExpectation, grade, parse_entry
from tests.graders.conftest import make_question

N8N_BODY = {
    "output": "訂單 A10302 目前備貨中。",
    "intermediateSteps": [
        {"action": {"tool": "query_order_sheet", "toolInput": {"order_id": "A10302"},
                    "log": "Invoking query_order_sheet"}, "observation": "備貨中"},
        {"action": {"tool": "format_answer", "toolInput": "備貨中"}, "observation": "ok"},
    ],
}


def tools(**kw) -> ToolExpectation:
    return ToolExpectation(
        expect=tuple(parse_entry(p) for p in kw.get("expect", ())),
        forbidden=tuple(parse_entry(p) for p in kw.get("forbidden", ())),
        args=kw.get("args", {}), max_steps=kw.get("max_steps"))


def q(**kw):
    return make_question(facts=["備貨中"], tools=tools(**kw))


def reply_from(body, mapping=DEFAULT_MAPPING):
    return to_reply(read_body(body, mapping))


def by_name(g):
    return {c.name: c for c in g.checks}


def test_n8n_intermediate_steps_shape():
    g = grade(q(expect=["query_order_sheet"], args={"query_order_sheet": {"order_id": ("A10302",)}},
                max_steps=3), reply_from(N8N_BODY))
    assert g.verdict == "pass"
    assert by_name(g)["tools.expect[0]"].evidence == "called: query_order_sheet → format_answer"


def test_string_tool_input_is_read_as_input():
    read = read_body(N8N_BODY)
    assert read.steps[1].args == {"input": "備貨中"}


def test_a_custom_shape_through_the_registry_mapping():
    reg = parse_registry({"agents": {"X": {"url": "http://127.0.0.1/x", "reply": {
        "text": "result.text", "steps": {"path": "trace.calls", "tool": "name",
                                         "args": "arguments"}}}}}, "agents.yaml", {})
    body = {"result": {"text": "備貨中"},
            "trace": {"calls": [{"name": "lookup", "arguments": {"id": "A10302"}}]}}
    g = grade(q(expect=["lookup"], args={"lookup": {"id": ("A10302",)}}),
              reply_from(body, reg.get("X").reply))
    assert g.verdict == "pass"


def test_missing_steps_hold_the_verdict_at_needs_human():
    g = grade(q(expect=["query_order_sheet"]), reply_from({"output": "訂單 A10302 目前備貨中。"}))
    assert g.verdict == "needs_human"
    assert by_name(g)["tools"].evidence == "agent reports no steps"


def test_missing_steps_never_hide_a_content_failure():
    g = grade(q(expect=["query_order_sheet"]), reply_from({"output": "已出貨"}))
    assert g.verdict == "fail"


def test_right_answer_without_the_tool_fails():
    g = grade(q(expect=["query_order_sheet"]), reply_from({"output": "備貨中",
                                                           "intermediateSteps": []}))
    check = by_name(g)["tools.expect[0]"]
    assert g.verdict == "fail" and check.missing == ("query_order_sheet",)
    assert check.evidence == "called: (no tool called)"


def test_forbidden_tool_is_named():
    body = {**N8N_BODY, "intermediateSteps": N8N_BODY["intermediateSteps"] + [
        {"action": {"tool": "send_line_message", "toolInput": {"to": "U1"}}}]}
    g = grade(q(forbidden=["send_line_message|update_order"]), reply_from(body))
    assert g.verdict == "fail"
    assert by_name(g)["tools.forbidden[0]"].unexpected == ("send_line_message",)


def test_argument_alternatives_and_mismatch():
    ok = grade(q(args={"query_order_sheet": {"order_id": ("a10302", "A10302")}}),
               reply_from(N8N_BODY))
    assert ok.verdict == "pass"
    bad = grade(q(args={"query_order_sheet": {"order_id": ("A10293",)}}), reply_from(N8N_BODY))
    check = by_name(bad)["tools.args.query_order_sheet"]
    assert bad.verdict == "fail"
    assert check.missing == ("order_id=A10293",) and check.unexpected == ("order_id=a10302",)


def test_max_steps():
    g = grade(q(max_steps=1), reply_from(N8N_BODY))
    assert by_name(g)["tools.max_steps"].outcome == "fail"
    assert by_name(g)["tools.max_steps"].evidence == "2 step(s), max 1"


def test_tool_alternatives_and_regex():
    g = grade(q(expect=["re:query_.*|lookup"]), reply_from(N8N_BODY))
    assert g.verdict == "pass"
