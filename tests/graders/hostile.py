"""Hostile replies for the demo bank's questions (issue 31): what an attacker, or a runaway
model, sends to make grading slow. Used by the linear-time property test and by
``bench/run.py --only hostile``.

Each reply is one shape (a flood of the question's own hits with no punctuation, a run of
digits, a flood of marks) at a given length, so the same shape can be graded at 2k, 20k and
200k characters and the times compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from graders import Question
from graders.normalize import normalize
from graders.patterns import Entry

ROOT = Path(__file__).resolve().parents[2]
# The regexes of issue 31 that hang a backtracking engine; on RE2 each is refused at load or
# graded in linear time.
ISSUE_PATTERNS = ("re:(a|a)+$", "re:.*a.*a.*a.*b", r"re:\d*\d*\d*x", r"re:(\d+)\1+x",
                  r"re:(\w|\d)+x", "re:(ab|a)*c", "re:(a|aa)+$", r"re:\d+ ?(mg|毫克)",
                  r"re:\d+ ?(天|個工作天)內?(到貨|送達)")


def demo_questions() -> list[Question]:
    """Every question of the demo banks (bank/*.json), as the loader builds them."""
    from exam.bank import read_bank

    out = []
    for path in sorted((ROOT / "bank").glob("*.json")):
        bank, problems = read_bank(path)
        assert bank is not None, problems
        out.extend(item.question for item in bank.items)
    return out


def _sample(items, out: list[str]) -> None:
    """One string the parsed regex ``items`` matches (first branch, fewest repeats, at least
    one)."""
    from re import _constants as c

    for op, av in items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op is c.ANY:
            out.append("x")
        elif op is c.IN:
            out.append(_class_sample(av))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            lo, _, sub = av
            for _ in range(max(lo, 1)):
                _sample(sub, out)
        elif op is c.SUBPATTERN:
            _sample(av[3], out)
        elif op is c.ATOMIC_GROUP:
            _sample(av, out)
        elif op is c.BRANCH:
            _sample(av[1][0], out)


def _class_sample(items) -> str:
    from re import _constants as c

    for op, av in items:
        if op is c.LITERAL:
            return chr(av)
        if op is c.RANGE:
            return chr(av[0])
        if op is c.CATEGORY:
            return {c.CATEGORY_DIGIT: "1", c.CATEGORY_SPACE: " "}.get(av, "a")
    return "a"


def hits(entry: Entry) -> list[str]:
    """A string each alternative of ``entry`` matches, in normalised form."""
    from re import _parser

    out = []
    for alt in entry.alternatives:
        if alt.literal is not None:
            out.append(alt.literal)
        else:
            parts: list[str] = []
            _sample(_parser.parse(alt.source[3:], re.IGNORECASE), parts)
            out.append(normalize("".join(parts)))
    return [h for h in out if h]


def question_hits(q: Question) -> list[str]:
    return [h for e in (*q.facts, *q.forbidden) for h in hits(e)] or ["貨到付款"]


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


# name → (the question's hits, length) → reply. Every shape has no sentence break unless the
# break is the attack (marks, list items).
SHAPES: dict[str, Callable[[list[str], int], str]] = {
    "repeated": lambda hs, n: _fill("".join(hs), n),
    "negated": lambda hs, n: _fill("".join("不提供" + h for h in hs), n),
    "spaced": lambda hs, n: _fill(" ".join(hs) + " ", n),
    "asked": lambda hs, n: _fill("".join("是否" + h + "嗎" for h in hs), n),
    "quoted": lambda hs, n: _fill("".join("「" + h + "」" for h in hs), n),
    "emoji": lambda hs, n: _fill("".join(h + "😊" for h in hs), n),
    "listed": lambda hs, n: "以下均不提供:\n" + _fill("".join("- " + h + "\n" for h in hs), n),
    "digits": lambda hs, n: _fill("1", n),
    "digit_words": lambda hs, n: _fill("1 ", n),
    "marks": lambda hs, n: _fill("。!?「」,", n),
    "newlines": lambda hs, n: _fill("\n- ", n),
}


def replies(q: Question, size: int) -> Iterator[tuple[str, str]]:
    """(shape name, reply of ``size`` characters) for every shape, made of ``q``'s hits."""
    hs = question_hits(q)
    for name, make in SHAPES.items():
        yield name, make(hs, size)
