"""Property tests of the graders (hypothesis): arbitrary Unicode never breaks them."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders import Question, Reply, grade, normalize
from graders.negation import classify
from graders.patterns import PatternError, find_all, parse_entry

CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF)
TEXT = st.text(alphabet=st.one_of(st.characters(), CJK, st.sampled_from("，。！？；不沒並非嗎「」|\\")),
               max_size=200)
PATTERN = st.one_of(TEXT, st.builds(lambda s: "re:" + s, TEXT))
QUICK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@QUICK
@given(TEXT)
def test_normalisation_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once


@QUICK
@given(TEXT)
def test_folded_normalisation_is_idempotent(text):
    once = normalize(text, fold=True)
    assert normalize(once, fold=True) == once


@QUICK
@given(PATTERN, TEXT)
def test_patterns_either_compile_or_say_why(pattern, reply):
    try:
        entry = parse_entry(pattern)
    except PatternError as exc:
        assert str(exc)
        return
    text = normalize(reply)
    for m in find_all(entry, text):
        occ = classify(text, m.start, m.end, input_text=text[:20])
        assert occ.kind in ("asserted", "negated", "interrogative", "hypothetical", "quoted",
                            "double_negation", "unclear", "answered")


@QUICK
@given(st.lists(PATTERN, max_size=3), st.lists(PATTERN, max_size=3), TEXT)
def test_grade_never_raises_and_verdict_is_the_strictest(facts, forbidden, reply):
    entries = []
    for group in (facts, forbidden):
        ok = []
        for p in group:
            try:
                ok.append(parse_entry(p))
            except PatternError:
                pass
        entries.append(tuple(ok))
    q = Question(case_no="P", input={"q": reply[:10]}, facts=entries[0], forbidden=entries[1])
    g = grade(q, Reply(text=reply))
    outcomes = {c.outcome for c in g.checks}
    if not outcomes - {"not_graded"}:
        assert g.verdict == "not_graded"
    elif "fail" in outcomes:
        assert g.verdict == "fail"
    elif "needs_human" in outcomes:
        assert g.verdict == "needs_human"
    else:
        assert g.verdict == "pass"


@QUICK
@given(TEXT)
def test_nothing_graded_is_never_pass(reply):
    q = Question(case_no="P", input={}, expect_status="ok")
    assert grade(q, Reply(text=reply, status=None)).verdict == "not_graded"
