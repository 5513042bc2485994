from __future__ import annotations

import pytest

from graders import GRADER_VERSION, CheckResult, combine, grade


def test_fact_negated_occurrence_does_not_satisfy(question, reply):
    q = question(facts=["提供貨到付款"])
    g = grade(q, reply("本店不提供貨到付款"))
    assert g.verdict == "fail"
    assert g.checks[0].missing == ("提供貨到付款",)
    assert "negated by '不'" in g.checks[0].evidence


def test_fact_that_is_itself_negative_is_satisfied(question, reply):
    q = question(facts=["不提供貨到付款"])
    assert grade(q, reply("本店不提供貨到付款")).verdict == "pass"


def test_forbidden_negated_passes_with_classification_as_evidence(question, reply):
    g = grade(question(forbidden=["提供貨到付款"]), reply("本店不提供貨到付款。"))
    assert g.verdict == "pass"
    assert g.checks[0].evidence.startswith("negated by '不'")


def test_forbidden_later_asserted_occurrence_still_fails(question, reply):
    g = grade(question(forbidden=["提供貨到付款"]), reply("本店不提供貨到付款，但我們提供貨到付款。"))
    assert g.verdict == "fail"
    assert g.checks[0].unexpected == ("提供貨到付款",)
    assert "但我們«提供貨到付款»" in g.checks[0].evidence


def test_forbidden_double_negation_needs_a_human(question, reply):
    g = grade(question(forbidden=["提供貨到付款"]), reply("我們並非不提供貨到付款"))
    assert g.verdict == "needs_human"
    assert "並非不" in g.checks[0].evidence


def test_verdict_is_the_strictest_check(question, reply):
    q = question(facts=["備貨中"], forbidden=["已出貨"])
    assert grade(q, reply("備貨中，已出貨")).verdict == "fail"


def test_nothing_graded_is_not_graded_never_pass(question, reply):
    q = question(fields=[{"path": "x", "mode": "ignore", "note": "措辭不比"}])
    g = grade(q, reply("anything"))
    assert g.verdict == "not_graded"
    assert g.checks[0].outcome == "not_graded"


def test_combine_rules():
    def c(o):
        return CheckResult("x", o)

    assert combine([c("pass"), c("needs_human")]) == "needs_human"
    assert combine([c("needs_human"), c("fail"), c("pass")]) == "fail"
    assert combine([c("not_graded"), c("pass")]) == "pass"
    assert combine([]) == "not_graded"


@pytest.mark.parametrize("run_status", ["timeout", "http_error", "bad_reply", "truncated", "blocked"])
def test_non_ok_reply_gets_no_content_verdict(question, reply, run_status):
    g = grade(question(facts=["x"]), reply("x", run_status=run_status))
    assert g.verdict is None and g.checks == () and g.run_status == run_status


def test_grader_version_is_on_every_grade(question, reply):
    assert grade(question(facts=["x"]), reply("x")).grader_version == GRADER_VERSION


def test_status_mismatch_fails_with_both_sides(question, reply):
    g = grade(question(expect_status="not_found"), reply("查無", status="ok"))
    assert g.verdict == "fail"
    assert g.checks[0].missing == ("not_found",) and g.checks[0].unexpected == ("ok",)


def test_status_not_reported_is_not_graded(question, reply):
    g = grade(question(expect_status="ok"), reply("hello"))
    assert g.verdict == "not_graded"


def test_exact_set_reports_missing_and_unexpected(question, reply):
    q = question(fields=[{"path": "ac_flags", "mode": "exact_set",
                          "values": ("3:conflict", "3:mismatch", "4:unverifiable")}])
    body = {"ac_flags": ["3:conflict", "4:mismatch", "4:unverifiable"]}
    check = grade(q, reply("", body=body)).checks[0]
    assert check.outcome == "fail"
    assert check.missing == ("3:mismatch",)
    assert check.unexpected == ("4:mismatch",)


def test_must_include_keywords(question, reply):
    q = question(fields=[{"path": "scope.in", "mode": "must_include",
                          "keywords": ("優惠碼套用", "後台建立")}])
    body = {"scope": {"in": ["優惠碼套用流程", "後台可新增優惠碼"]}}
    check = grade(q, reply("", body=body)).checks[0]
    assert check.outcome == "fail" and check.missing == ("後台建立",)


def test_missing_field_fails(question, reply):
    q = question(fields=[{"path": "goal", "mode": "must_include", "keywords": ()}])
    assert grade(q, reply("", body={})).verdict == "fail"


def test_numbers_grounded_finds_order_number_in_source_field(question, reply):
    # a grader bug found in the field: A10293 is only in a source field, never in a value
    q = question(
        input={"customer_message": "我的訂單到哪了",
               "facts": "[{'key': 'eta', 'value': '2026-09-12', 'source': 'orders!A10293'}]"},
        numbers_grounded=True,
    )
    assert grade(q, reply("您的訂單 A10293 預計 2026-09-12 送達")).verdict == "pass"
    g = grade(q, reply("您的訂單 A10293 預計 2026-09-13 送達，折扣 100 元"))
    assert g.verdict == "fail"
    assert g.checks[0].unexpected == ("13", "100")


def test_budget_checks_each_figure(question, reply):
    q = question(facts=["ok"], budget={"attempts": 1, "model_calls": 4, "tokens": 3000})
    g = grade(q, reply("ok", attempts=2, model_calls=8, tokens=None))
    by = {c.name: c for c in g.checks}
    assert by["budget.attempts"].outcome == "fail"
    assert by["budget.model_calls"].evidence == "8 model call(s) > budget 4"
    assert by["budget.tokens"].outcome == "not_graded"
    assert g.verdict == "fail"


def test_agent_budget_is_overridden_by_question_budget(question, reply):
    q = question(facts=["ok"], budget={"tokens": 5000})
    g = grade(q, reply("ok", tokens=4500), budget={"tokens": 4000, "attempts": 1})
    by = {c.name: c.outcome for c in g.checks}
    assert by["budget.tokens"] == "pass"
    assert by["budget.attempts"] == "not_graded"


def test_folding_lets_simplified_match_traditional_unless_the_bank_turns_it_off(question, reply):
    assert grade(question(facts=["貨到付款"]), reply("支持货到付款")).verdict == "pass"
    assert grade(question(facts=["貨到付款"], fold_script=False),
                 reply("支持货到付款")).verdict == "fail"


def test_folding_makes_amounts_one_way_and_evidence_quotes_the_reply_as_written(question, reply):
    g = grade(question(facts=["2400 元"]), reply("退款金額為 NT$2,400，已退回您的信用卡。"))
    assert g.verdict == "pass"
    assert g.checks[0].evidence == "退款金額為 «NT$2,400»，已退回您的信用卡"
    assert grade(question(facts=["2400 元"]), reply("本月帳單為 NT$24,000。")).verdict == "fail"
    g = grade(question(forbidden=["提供貨到付款"]), reply("您好！\n\n我们  提供货到付款服务。"))
    assert g.checks[0].evidence == "asserted: 我们  «提供货到付款»服务"


@pytest.mark.parametrize(("pattern", "text", "found"), [
    ("COD", "You can decode the QR code at any store.", False),
    ("COD", "We accept COD for small orders.", True),
    ("3/1", "預計 3/18 送達", False),
    ("3/1", "預計 3/1 送達", True),
    ("600 元", "滿 1600 元免運", False),
    ("250", "a refund of $1,250", False),
    ("分期", "部分期間限定商品恕不退換", False),
    ("分期", "可以刷卡分期", True),
    ("免費", "為避免費用產生", False),
    ("booked", "Dr. Lin is fully booked", False),
    ("booked", "Your slot is booked", True),
])
def test_literal_patterns_match_whole_words(question, reply, pattern, text, found):
    g = grade(question(forbidden=[pattern]), reply(text))
    assert (g.checks[0].evidence != "not found") is found, g.checks[0].evidence


def test_fact_inside_quotation_marks_does_not_count(question, reply):
    g = grade(question(facts=["已退款"]), reply("您提到『客服說已退款』，但系統顯示退款仍在處理中"))
    assert g.verdict == "fail"
    assert "quoted" in g.checks[0].evidence


def test_fact_echoing_the_customers_question_does_not_count(question, reply):
    q = question(facts=["已經出貨"], input={"customer_message": "我的訂單已經出貨了嗎？"})
    assert grade(q, reply("我的訂單已經出貨了，這個問題我幫您查")).verdict == "fail"
    assert grade(q, reply("您的訂單已經出貨了")).verdict == "pass"


def test_forbidden_question_answered_yes_needs_a_human(question, reply):
    g = grade(question(forbidden=["可以貨到付款"]),
              reply("您問「可以貨到付款嗎？」——可以的，結帳時選擇即可"))
    assert g.verdict == "needs_human"
    assert "answered" in g.checks[0].evidence and "可以的" in g.checks[0].evidence


def test_forbidden_negated_after_the_hit_passes(question, reply):
    g = grade(question(forbidden=["週末出貨"]), reply("週末出貨這項服務目前沒有開放。"))
    assert g.verdict == "pass"
    assert g.checks[0].evidence.startswith("negated by '沒有'")


@pytest.mark.parametrize(("model_calls", "outcome"), [(2, "needs_human"), (None, "needs_human"),
                                                       (0, "pass")])
def test_zero_tokens_from_an_agent_that_called_a_model_is_held_not_passed(
        question, reply, model_calls, outcome):
    # docs/n8n.md's old recipe wrote total_tokens: 0, which passed every token budget
    g = grade(question(facts=["ok"], budget={"tokens": 3000}),
              reply("ok", tokens=0, model_calls=model_calls))
    check = next(c for c in g.checks if c.name == "budget.tokens")
    assert check.outcome == outcome
    if outcome == "needs_human":
        assert check.evidence.startswith("the agent reported 0 tokens with ")


def test_an_estimated_token_count_is_graded_and_says_it_is_an_estimate(question, reply):
    g = grade(question(facts=["ok"], budget={"tokens": 100}),
              reply("ok", tokens=85, model_calls=2, tokens_estimated=True))
    check = next(c for c in g.checks if c.name == "budget.tokens")
    assert (check.outcome, check.evidence) == ("pass", "85 token(s) (estimated) ≤ budget 100")


def test_a_hedged_fact_needs_a_human(question, reply):
    g = grade(question(facts=["已經出貨"]), reply("您的訂單應該已經出貨了。"))
    assert g.verdict == "needs_human"
    assert "hedged by '應該'" in g.checks[0].evidence


def test_a_hedged_forbidden_claim_still_fails(question, reply):
    g = grade(question(forbidden=["延遲送達"]), reply("您的包裹可能會延遲送達。"))
    assert g.verdict == "fail"
    assert g.checks[0].evidence.startswith("asserted with a hedge ('可能')")


def test_a_topic_the_reply_then_affirms_is_not_a_clean_pass(question, reply):
    g = grade(question(forbidden=["貨到付款"]), reply("關於貨到付款，本店有提供。"))
    assert g.verdict == "needs_human"
    assert "does not deny it" in g.checks[0].evidence
