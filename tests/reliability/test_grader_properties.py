"""Property tests of the graders (hypothesis): arbitrary Unicode never breaks them."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graders import Question, Reply, grade, normalize
from graders.negation import classify
from graders.patterns import PatternError, find_all, parse_entry, whole_word

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


REASONS = ("invalid regex ", "regex ", "empty alternative", "empty regular expression",
           "expected a string pattern")


@QUICK
@given(PATTERN, TEXT)
@example("0", "00")  # a digit inside a number is no hit (600 in 1600): found by Hypothesis
def test_patterns_either_compile_or_say_why(pattern, reply):
    try:
        entry = parse_entry(pattern)
    except PatternError as exc:
        assert str(exc).startswith(REASONS), str(exc)  # one of the documented reasons
        return
    assert entry.source == pattern and entry.alternatives
    text = normalize(reply)
    found = find_all(entry, text)
    assert found == sorted(found, key=lambda m: (m.start, -m.end))  # in reply order
    by_source = {a.source: a for a in entry.alternatives}
    for m in found:
        assert 0 <= m.start < m.end <= len(text)
        alt = by_source[m.alternative]
        if alt.literal is not None:  # a literal occurs exactly where it is reported
            assert text[m.start:m.end] == alt.literal
        else:  # a regex matches exactly that span, at that point of the reply
            again = alt.regex.match(text, m.start)
            assert again is not None and again.end() == m.end
        occ = classify(text, m.start, m.end, input_text=text[:20])
        assert occ.kind in ("asserted", "negated", "interrogative", "hypothetical", "quoted",
                            "double_negation", "unclear", "answered", "hedged")
    for alt in entry.alternatives:  # and no occurrence of a literal that is a whole word
        if alt.literal is not None:  # is missed (a digit or Latin literal inside a number
            hits = sum(1 for m in found if m.alternative == alt.source)  # or word is none:
            same = sum(1 for a in entry.alternatives if a.source == alt.source)  # 0 in 00)
            assert hits == same * len(_whole_words(text, alt.literal))


def _whole_words(text: str, literal: str) -> list[int]:
    """Where ``literal`` occurs in ``text`` (not overlapping, as str.count counts) as a whole
    word (``whole_word``: not inside a number or a Latin word, not crossed by listed words)."""
    at, i = [], text.find(literal)
    while i >= 0:
        at.append(i)
        i = text.find(literal, i + len(literal))
    return [i for i in at if whole_word(text, i, i + len(literal))]


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
