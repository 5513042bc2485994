"""What one reply may cost the graders is bounded (issue 31): each hit of a reply longer than
``_WHOLE`` characters is read within ``WINDOW`` characters, each check reads at most
``MAX_OCCURRENCES`` hits and a cell at most ``CELL_OCCURRENCES``; what the bound leaves unread
is a person's, never a pass."""

from __future__ import annotations

import pytest

from graders import grade
from graders.checks import CELL_OCCURRENCES, MAX_OCCURRENCES
from graders.negation import _WHOLE, WINDOW, classify, read_hit
from graders.normalize import normalize

FILLER = "我們的門市位於台北市中山區營業時間為每天早上十點到晚上九點歡迎您隨時來店裡逛逛看看"


def _long(n: int) -> str:
    return (FILLER * (n // len(FILLER) + 1))[:n]


def test_a_hit_in_a_short_sentence_reads_as_classify_does():
    text = normalize("您好。本店目前不提供貨到付款，可改用信用卡。")
    i = text.find("提供貨到付款")
    assert read_hit(text, i, i + 6) == classify(text, i, i + 6)


@pytest.mark.parametrize("shape", ["far_before", "far_after"])
def test_a_fact_whose_sentence_runs_past_the_window_does_not_pass(question, reply, shape):
    """Beyond the window a negator could reach the hit (不…[1,000 characters]…提供貨到付款):
    what was not read cannot make the fact asserted."""
    far = _long(_WHOLE)
    text = "不" + far + "提供貨到付款" if shape == "far_before" else "提供貨到付款" + far + "是不可能的"
    g = grade(question(facts=["提供貨到付款"]), reply(text))
    assert g.verdict == "needs_human"
    assert f"longer than the {WINDOW} characters read" in g.checks[0].evidence


def test_a_forbidden_hit_negated_within_a_sentence_past_the_window_is_a_persons(question, reply):
    """不提供貨到付款 looks negated, but a 不是 a thousand characters before could undo it."""
    text = "我們" + _long(_WHOLE) + "不提供貨到付款" + _long(_WHOLE)
    g = grade(question(forbidden=["提供貨到付款"]), reply(text))
    assert g.verdict == "needs_human"
    assert "negated" in g.checks[0].evidence and "longer than" in g.checks[0].evidence


def test_a_forbidden_hit_asserted_in_a_long_sentence_still_fails(question, reply):
    text = _long(_WHOLE) + "我們提供貨到付款" + _long(_WHOLE)
    g = grade(question(forbidden=["提供貨到付款"]), reply(text))
    assert g.verdict == "fail"


def test_the_evidence_of_a_long_sentence_is_the_window_not_the_sentence(question, reply):
    text = _long(100_000) + "我們提供貨到付款" + _long(100_000)
    g = grade(question(forbidden=["提供貨到付款"]), reply(text))
    assert g.verdict == "fail"
    evidence = g.checks[0].evidence
    assert len(evidence) < 2 * WINDOW + 100
    assert "…" in evidence and "«提供貨到付款»" in evidence


def test_more_occurrences_than_a_check_reads_are_a_persons(question, reply):
    """Every one read is negated; the rest could hold the one that is not."""
    text = "本店不提供貨到付款。" * (MAX_OCCURRENCES + 1)
    g = grade(question(forbidden=["提供貨到付款"]), reply(text))
    assert g.verdict == "needs_human"
    assert f"more than {MAX_OCCURRENCES} occurrences" in g.checks[0].evidence
    g = grade(question(forbidden=["提供貨到付款"]), reply("本店不提供貨到付款。" * MAX_OCCURRENCES))
    assert g.verdict == "pass"


def test_a_fact_asserted_among_many_still_passes_once_read(question, reply):
    text = "本店不提供貨到付款。" * 3 + "本店提供貨到付款。" + "本店不提供貨到付款。" * 200
    assert grade(question(facts=["提供貨到付款"]), reply(text)).verdict == "pass"


def test_a_cell_reads_at_most_its_budget_across_checks(question, reply):
    """Each check alone is within its bound; together they spend the cell's."""
    n = CELL_OCCURRENCES // MAX_OCCURRENCES + 1
    words = [f"提供方案{chr(0x4E00 + i)}" for i in range(n)]
    text = "".join(("本店不" + w + "。") * MAX_OCCURRENCES for w in words)
    g = grade(question(forbidden=words), reply(text))
    outcomes = [c.outcome for c in g.checks]
    assert outcomes[: n - 1] == ["pass"] * (n - 1)
    assert outcomes[-1] == "needs_human"
    assert "grading budget" in g.checks[-1].evidence
    assert g.verdict == "needs_human"


def test_many_numbers_are_named_in_a_bounded_evidence(question, reply):
    text = " ".join(str(1000 + i) for i in range(5000))
    g = grade(question(numbers_grounded=True), reply(text))
    assert g.verdict == "fail"
    assert len(g.checks[0].unexpected) == 5000
    assert len(g.checks[0].evidence) < 400 and "4990 more" in g.checks[0].evidence


def test_an_item_of_a_list_whose_head_is_past_the_window_does_not_pass(question, reply):
    """以下均不支援： heads every item under it: an item further down than the window reads
    cannot know whether it is negated."""
    items = "".join(f"- 付款方式{chr(0x4E00 + i)}目前暫停服務\n" for i in range(_WHOLE // 10))
    q = question(facts=["貨到付款"])
    short = "以下付款方式均不支援：\n- 行動支付\n- 貨到付款"
    assert grade(q, reply(short)).verdict == "fail"  # negated by its head, read whole
    g = grade(q, reply("以下付款方式均不支援：\n" + items + "- 貨到付款"))
    assert g.verdict == "needs_human"
    assert "longer than the" in g.checks[0].evidence
