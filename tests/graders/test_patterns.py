from __future__ import annotations

import pytest

from graders.patterns import PatternError, find_all, parse_entry, split_alternatives


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("packing|備貨中", ["packing", "備貨中"]),
        (r"a\|b|c", ["a|b", "c"]),
        ("re:格式(不正確|錯誤)|少一碼", ["re:格式(不正確|錯誤)", "少一碼"]),
        ("re:[|]x|y", ["re:[|]x", "y"]),
        ("single", ["single"]),
    ],
)
def test_split_alternatives(raw, parts):
    assert split_alternatives(raw) == parts


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("a||b", "empty alternative #2"),
        ("|a", "empty alternative #1"),
        ("re:(提供", "invalid regex 're:(提供'"),
        ("re:", "empty regular expression"),
        ("re:x*", "matches the empty string"),
        (5, "expected a string pattern, found int"),
    ],
)
def test_bad_patterns_say_what_is_wrong(raw, message):
    with pytest.raises(PatternError, match=message.replace("(", r"\(").replace("|", r"\|")):
        parse_entry(raw)


def test_literal_matches_normalised_text():
    entry = parse_entry("ＬＩＮＥ Pay|轉帳")
    assert [m.alternative for m in find_all(entry, "可用 line pay 或轉帳")] == ["ＬＩＮＥ Pay", "轉帳"]


def test_regex_is_case_insensitive_on_casefolded_text():
    entry = parse_entry(r"re:A1029\d")
    assert find_all(entry, "訂單 a10293")


def test_a_long_pattern_is_split_in_one_pass():
    """Each character asked whether the alternative so far starts with 're:' by joining it
    again: a 2,000,000-character fact took hours to load (`exam bank check` hung)."""
    long = "x" * 2_000_000
    assert split_alternatives(f"{long}|re:a(b|c)") == [long, "re:a(b|c)"]


@pytest.mark.parametrize("raw", ["re:(a+)+$", "re:(\\w*x)*y", "re:(a|b(c+))*d", "re:((ab)*c?)+z",
                                 "re:(?=(a+)+)x", "re:(a{1,5}){2,}"])
def test_a_regex_that_backtracks_exponentially_is_refused(raw):
    """Python's re has no time limit: (a+)+$ against 40 a's and a '!' took hours, and
    `exam bank check` (a golden reply) or the grade of a run hung on it."""
    with pytest.raises(PatternError, match="repeats a repeat of variable length"):
        parse_entry(raw)


@pytest.mark.parametrize("raw", ["re:(\\d{3}-)+x", "re:(a++)+b", "re:(?>a+)+b", "re:a.{0,20}(b|c)+",
                                 "re:\\d+ ?(天|個工作天)內?(到貨|送達)"])
def test_a_repeat_that_cannot_backtrack_exponentially_is_kept(raw):
    assert parse_entry(raw).alternatives[0].is_regex
