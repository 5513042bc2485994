"""The reply viewer's highlighting (``mark_text``) and the evidence's «marks»: one pass over
the reply, however many hits or «» an agent put in it (issue 33: 197 s for ~70,000 hits)."""

from __future__ import annotations

import random
import re

import pytest
from markupsafe import escape

from exam.reports.html import mark_text, marks, quoted
from tests.scaling import growth, linear_bound


def _leftmost_longest(text: str, phrases: list[str]) -> list[tuple[int, int]]:
    """The spans mark_text marks, found the slow obvious way: from the left, the longest
    phrase starting at each place, none overlapping."""
    spans, i = [], 0
    ordered = sorted(set(p for p in phrases if p), key=len, reverse=True)
    while i < len(text):
        hit = next((p for p in ordered if text.startswith(p, i)), None)
        if hit:
            spans.append((i, i + len(hit)))
            i += len(hit)
        else:
            i += 1
    return spans


def _spans_of(marked: str) -> list[tuple[int, int]]:
    """Spans of <mark> in a marked text of plain letters (nothing escaped)."""
    spans, at, pos = [], 0, 0
    while (i := marked.find("<mark>", pos)) >= 0:
        j = marked.find("</mark>", i)
        at += i - pos
        spans.append((at, at + j - i - 6))
        at += j - i - 6
        pos = j + 7
    return spans


@pytest.mark.slow  # times the marking at two sizes (tests/scaling.py)
def test_a_reply_with_tens_of_thousands_of_hits_is_marked_in_linear_time():
    def make(n: int):
        text = "9 折 " * n
        return lambda: mark_text(text, ["9 折"])

    ratio = growth(make, 2_000, 32_000)
    assert ratio < linear_bound(2_000, 32_000), (
        f"16x the hits took {ratio:.0f}x the time (linear: ~16, quadratic: ~256)")


@pytest.mark.slow  # times the marking at two sizes (tests/scaling.py)
def test_many_distinct_phrases_are_marked_in_linear_time():
    """A reply's own «» inside the evidence sentence make many phrases: still one pass."""
    def make(n: int):
        words = [f"w{i:05d}" for i in range(n)]
        text = " ".join(words)
        return lambda: mark_text(text, words)

    ratio = growth(make, 2_000, 32_000)
    assert ratio < linear_bound(2_000, 32_000), f"16x the phrases took {ratio:.0f}x the time"


@pytest.mark.slow  # times the reading at two sizes (tests/scaling.py)
def test_evidence_with_many_unclosed_quote_marks_is_read_in_linear_time():
    def make(n: int):
        text = "«a " * n
        return lambda: (marks(text), quoted([text]))

    ratio = growth(make, 4_000, 64_000)
    assert ratio < linear_bound(4_000, 64_000), f"16x the « took {ratio:.0f}x the time"


@pytest.mark.parametrize("seed", range(200))
def test_marks_are_the_longest_phrase_from_the_left_never_overlapping(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice("abc") for _ in range(rng.randint(0, 40)))
    phrases = ["".join(rng.choice("abc") for _ in range(rng.randint(1, 4)))
               for _ in range(rng.randint(0, 5))]
    assert _spans_of(str(mark_text(text, phrases))) == _leftmost_longest(text, phrases)
    assert str(mark_text(text, phrases)).replace("<mark>", "").replace("</mark>", "") == text


def test_marked_text_is_escaped_around_and_inside_marks():
    out = str(mark_text("<b>9 折</b> & <i>9 折</i>", ["9 折", "<i>"]))
    assert out == ("&lt;b&gt;<mark>9 折</mark>&lt;/b&gt; &amp; <mark>&lt;i&gt;</mark>"
                   "<mark>9 折</mark>&lt;/i&gt;")


def test_a_longer_phrase_wins_over_one_inside_it():
    assert str(mark_text("已出貨了", ["出貨", "已出貨"])) == "<mark>已出貨</mark>了"
    assert str(mark_text("出貨 已出貨", ["出貨", "已出貨"])) == (
        "<mark>出貨</mark> <mark>已出貨</mark>")


_OLD_QUOTED = re.compile(r"«(.+?)»", re.S)  # what the spans were read with until now


@pytest.mark.parametrize("seed", range(200))
def test_quoted_and_marks_read_the_spans_the_regex_read(seed):
    rng = random.Random(seed)
    evidence = "".join(rng.choice("«»a <") for _ in range(rng.randint(0, 30)))
    old = {m.group(1).strip() for m in _OLD_QUOTED.finditer(evidence)}
    assert quoted([evidence]) == sorted((f for f in old if f), key=len, reverse=True)
    pieces, at = [], 0
    for m in _OLD_QUOTED.finditer(evidence):
        pieces += [str(escape(evidence[at:m.start()])),
                   f"<mark>{escape(m.group(1))}</mark>"]
        at = m.end()
    assert str(marks(evidence)) == "".join(pieces) + str(escape(evidence[at:]))
