"""Pattern entries: alternatives split by ``|`` (``\\|`` is a literal bar), ``re:`` for regex.

Literal alternatives are normalised the same way as replies, so ``ＦＡＱ`` in a bank
matches ``faq`` in a reply. Regular expressions run on the normalised reply with
IGNORECASE (the reply is casefolded; the pattern author's capitals still match), on RE2, so
no pattern can take more than linear time (graders/regex.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from graders.normalize import normalize
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


def compile_alternative(alt: str, *, fold: bool = False) -> Alternative:
    if alt.startswith("re:"):
        body = alt[3:]
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


def parse_entry(raw: object, *, fold: bool = False) -> Entry:
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


def find_all(entry: Entry, text: str, limit: int | None = None) -> list[Match]:
    """Every occurrence of every alternative in normalised ``text``, in reply order; with
    ``limit``, the first ``limit`` of them (each alternative stops there: a flood of one phrase
    costs no more than ``limit`` matches)."""
    found = []
    for alt in entry.alternatives:
        if alt.required is not None and alt.required not in text:
            continue  # `in` is far cheaper than a regex scan, and most patterns are absent
        n = 0
        for m in alt.regex.finditer(text):
            if m.end() > m.start():
                found.append(Match(alt.source, m.start(), m.end()))
                n += 1
                if n == limit:
                    break
    found.sort(key=lambda m: (m.start, -m.end))
    return found if limit is None else found[:limit]
