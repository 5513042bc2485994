"""Pattern entries: alternatives split by ``|`` (``\\|`` is a literal bar), ``re:`` for regex.

Literal alternatives are normalised the same way as replies, so ``ＦＡＱ`` in a bank
matches ``faq`` in a reply. Regular expressions run on the normalised reply with
IGNORECASE (the reply is casefolded; the pattern author's capitals still match), on RE2, so
no pattern can take more than linear time (graders/regex.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graders import cues
from graders.normalize import fold_script, normalize
from graders.regex import Unsupported, compile_re2, required_text


class PatternError(ValueError):
    """A pattern entry that cannot be used; the message says why, without location."""


@dataclass(frozen=True, slots=True)
class Alternative:
    source: str
    # a literal's escaped text on Python's re; a ``re:`` pattern on RE2 (graders/regex.py):
    # both have search, finditer, match and fullmatch
    regex: Any
    is_regex: bool
    literal: str | None = None  # the normalised text of a literal alternative
    required: str | None = None  # text every match contains: a reply without it is skipped


@dataclass(frozen=True, slots=True)
class Entry:
    """One fact or forbidden entry: any alternative occurring counts."""

    source: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True, slots=True)
class Match:
    alternative: str
    start: int
    end: int


def split_alternatives(raw: str) -> list[str]:
    """Split on unescaped ``|``; ``\\|`` stays a literal bar in the alternative.

    Inside a ``re:`` alternative a bar within a group or character class belongs to
    the regex (``re:格式(不正確|錯誤)`` is one alternative); only a bar at depth 0 splits.
    """
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    in_class = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        # its first three pieces hold at least three characters: no join of the whole
        is_regex = "".join(current[:3]).startswith("re:")
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            # in a literal, \| is a bar; in a regex, keep the escape for re to read
            current.append(nxt if (nxt == "|" and not is_regex) else ch + nxt)
            i += 2
            continue
        if is_regex:
            if in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
        if ch == "|" and depth == 0 and not in_class:
            parts.append("".join(current))
            current = []
            depth = 0
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def compile_alternative(alt: str, *, fold: bool = True) -> Alternative:
    if alt.startswith("re:"):
        # the reply is folded: so are the regex's Chinese characters (週 matches 周)
        body = fold_script(alt[3:]) if fold else alt[3:]
        if not body:
            raise PatternError("empty regular expression after 're:'")
        try:
            regex = compile_re2(body)
        except re.error as exc:
            raise PatternError(f"invalid regex {alt!r}: {exc}") from None
        except Unsupported as exc:
            raise PatternError(f"regex {alt!r} has {exc}") from None
        except (OverflowError, RecursionError, ValueError) as exc:  # a{99999999999}, deep nesting
            raise PatternError(f"invalid regex {alt!r}: {type(exc).__name__}: {exc}") from None
        if regex.search("") is not None:
            raise PatternError(f"regex {alt!r} matches the empty string, so it matches every reply")
        return Alternative(alt, regex, True, required=required_text(body) or None)
    text = normalize(alt, fold=fold)
    if not text:
        raise PatternError("empty alternative")
    return Alternative(alt, re.compile(re.escape(text)), False, text, text)


def parse_entry(raw: object, *, fold: bool = True) -> Entry:
    """Compile one entry; raises PatternError naming what is wrong with it."""
    if not isinstance(raw, str):
        raise PatternError(f"expected a string pattern, found {type(raw).__name__} {raw!r}")
    alts = split_alternatives(raw)
    compiled = []
    for i, alt in enumerate(alts):
        if not alt.strip():
            raise PatternError(
                f"empty alternative #{i + 1} in {raw!r} (look for '||' or a leading/trailing '|')"
            )
        compiled.append(compile_alternative(alt, fold=fold))
    return Entry(raw, tuple(compiled))


def _latin(ch: str) -> bool:
    return ch.isalpha() and ord(ch) < 0x2E80  # CJK characters are alphabetic too


def _number_goes_on(text: str, i: int, step: int) -> bool:
    """Does the number whose edge is at ``i`` go on at ``i + step`` (a digit, or 1,2 / 3.5)?"""
    j = i + step
    if not 0 <= j < len(text):
        return False
    if text[j].isdigit():
        return True
    k = j + step
    return text[j] in ",./" and 0 <= k < len(text) and text[k].isdigit()


@lru_cache(maxsize=1)
def _boundary_words() -> frozenset[str]:
    return frozenset(fold_script(normalize(w)) for w in cues.BOUNDARY_WORDS_ZH) | frozenset(
        cues.BOUNDARY_WORDS_ZH)


@lru_cache(maxsize=1)
def _word_heads() -> frozenset[str]:
    """Characters a listed word has before its last: a hit whose left neighbour is none of
    them is crossed by no listed word at its start."""
    return frozenset(ch for w in _boundary_words() for ch in w[:-1])


def _crossed(text: str, edge: int, lo: int, hi: int) -> bool:
    """Does a listed word cross position ``edge`` (start inside [lo, edge), end in (edge, hi]?"""
    words = _boundary_words()
    for size in (2, 3):
        for i in range(max(lo, edge - size + 1), edge):
            if i + size <= hi and text[i:i + size] in words:
                return True
    return False


def whole_word(text: str, start: int, end: int) -> bool:
    """A literal hit that is a whole token: Latin and digit patterns do not match inside a
    word or a number ("cod" in "decode", 3/1 in 3/18, 600 in 1600); a Chinese hit is no hit
    when listed words cross both its edges (分期 in 部分期間); "booked" in "fully booked" is
    part of a longer word."""
    first, last = text[start], text[end - 1]
    if start > 0 and ((_latin(first) and _latin(text[start - 1]))
                      or (first.isdigit() and _number_goes_on(text, start, -1))):
        return False
    if end < len(text) and ((_latin(last) and _latin(text[end])) or (
            last.isdigit() and _number_goes_on(text, end - 1, 1))):
        return False
    if _latin(first):
        for phrase in cues.CONTAINING_EN:
            i = text.find(phrase, max(0, end - len(phrase)), start + len(phrase))
            if 0 <= i <= start and i + len(phrase) >= end and phrase != text[start:end]:
                return False
        return True
    if 0 < start and end < len(text) and not first.isascii() and text[start - 1] in _word_heads():
        return not (_crossed(text, start, start - 2, end) and _crossed(text, end, start, end + 2))
    return True


def find_all(entry: Entry, text: str, limit: int | None = None) -> list[Match]:
    """Every occurrence of every alternative in normalised ``text``, in reply order; a literal
    alternative only where it is a whole word (``whole_word``), a regex wherever it matches.
    With ``limit``, the first ``limit`` of each alternative (a flood of one phrase costs no more
    than ``limit`` matches)."""
    found = []
    for alt in entry.alternatives:
        if alt.required is not None and alt.required not in text:
            continue  # `in` is far cheaper than a regex scan, and most patterns are absent
        lit = alt.literal
        # a Chinese literal is cut only where a listed word starts just before it: one set
        # lookup per hit instead of the whole test
        heads = _word_heads() if lit is not None and not (
            _latin(lit[0]) or _latin(lit[-1]) or lit[0].isdigit() or lit[-1].isdigit()) else None
        n = 0
        for m in alt.regex.finditer(text):
            a, b = m.span()
            if b <= a:
                continue
            if lit is None or (heads is not None and (a == 0 or text[a - 1] not in heads)) or (
                    whole_word(text, a, b)):
                found.append(Match(alt.source, a, b))
                n += 1
                if n == limit:
                    break
    found.sort(key=lambda m: (m.start, -m.end))
    return found if limit is None else found[:limit]
