"""A bank's ``re:`` patterns, written in Python's syntax, run on RE2 (linear in the reply).

Python's ``re`` backtracks: ``\\d+ ?(mg|毫克)`` took 449 s on a reply of 200,000 digits and
``(a|a)+$`` hangs on a few thousand (issue 31). RE2 runs in time linear in the text whatever the
pattern, but it reads ``\\d``, ``\\w``, ``\\s`` and ``\\b`` as ASCII and lacks a few of Python's
constructs. So a pattern is parsed by Python's own parser (its errors, its meaning) and written
out again for RE2 with Python's Unicode meaning spelled out: ``\\d`` is ``\\p{Nd}``, ``\\w`` is
``[\\p{L}\\p{N}_]``, ``\\s`` is every character ``str.isspace`` accepts. What RE2 cannot run is
refused with the reason: backreferences, lookaround, conditionals, possessive and atomic
repeats, and ``\\b``/``\\B`` (Unicode word boundaries; ``(?a)`` makes them ASCII, which RE2
has). One difference is left, on purpose: ``$`` is the end of the text only, not also before a
final line break, which a normalised reply never has.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as c
from re import _parser
from typing import Any

import re2
from re2 import _re2

MAX_COUNT = 1000  # RE2's largest counted repeat, x{0,1000}


class Unsupported(ValueError):
    """A construct RE2 cannot run; the message names it and says what to write instead."""


_REFUSED = {
    c.GROUPREF: "a backreference (\\1, (?P=name)): matching one is not linear, RE2 has none",
    c.GROUPREF_EXISTS: "a conditional group (?(1)…): RE2 has none",
    c.POSSESSIVE_REPEAT: "a possessive repeat (x++, x*+): RE2 never backtracks, write x+ / x*",
    c.ATOMIC_GROUP: "an atomic group (?>…): RE2 never backtracks, write (?:…)",
}
_ASSERTS = {(c.ASSERT, 1): "a lookahead (?=…)", (c.ASSERT_NOT, 1): "a negative lookahead (?!…)",
            (c.ASSERT, -1): "a lookbehind (?<=…)", (c.ASSERT_NOT, -1): "a negative lookbehind (?<!…)"}
_BOUNDARY = ("a word boundary (\\b, \\B): Python's knows every script, RE2's only ASCII letters "
             "(a Chinese character would be a boundary); start the pattern with (?a) if ASCII is "
             "meant, or leave the boundary out")


@lru_cache(maxsize=1)
def _space() -> str:
    """Every character Python's ``\\s`` matches in a str pattern, as RE2 class items."""
    return "".join(f"\\x{{{cp:x}}}" for cp in range(0x3001) if chr(cp).isspace())


def _categories(ascii_only: bool) -> dict[Any, tuple[str, bool]]:
    """Category → (class items, negated)."""
    digit, word = ("0-9", "0-9A-Za-z_") if ascii_only else ("\\p{Nd}", "\\p{L}\\p{N}_")
    space = "\\t\\n\\x{b}\\f\\r " if ascii_only else _space()
    return {c.CATEGORY_DIGIT: (digit, False), c.CATEGORY_NOT_DIGIT: (digit, True),
            c.CATEGORY_WORD: (word, False), c.CATEGORY_NOT_WORD: (word, True),
            c.CATEGORY_SPACE: (space, False), c.CATEGORY_NOT_SPACE: (space, True)}


def _char(cp: int) -> str:
    ch = chr(cp)
    if ch.isascii() and (ch.isalnum() or ch == "_"):
        return ch
    return f"\\x{{{cp:x}}}"


def _class(items: list, ascii_only: bool) -> str:
    cats = _categories(ascii_only)
    negate = bool(items) and items[0][0] is c.NEGATE
    plain, negated_cats = [], []
    for op, av in items[1:] if negate else items:
        if op is c.LITERAL:
            plain.append(_char(av))
        elif op is c.RANGE:
            plain.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op is c.CATEGORY:
            chars, neg = cats[av]
            (negated_cats if neg else plain).append(chars)
        else:  # pragma: no cover - the parser puts nothing else in a class
            raise Unsupported(f"a class item {op}")
    if not negated_cats:
        return f"[{'^' if negate else ''}{''.join(plain)}]"
    if negate:  # [^\W…]: an intersection, which RE2 classes cannot say
        raise Unsupported("a negated class holding \\W, \\D or \\S ([^\\W…]): write the "
                          "characters it keeps instead")
    # [\W,]: the union of each negated category and the plain items
    parts = [f"[^{chars}]" for chars in negated_cats] + ([f"[{''.join(plain)}]"] if plain else [])
    return "(?:" + "|".join(parts) + ")"


_FLAGS = ((c.SRE_FLAG_IGNORECASE, "i"), (c.SRE_FLAG_MULTILINE, "m"), (c.SRE_FLAG_DOTALL, "s"))


def _flag_letters(bits: int) -> str:
    return "".join(letter for bit, letter in _FLAGS if bits & bit)


def _count(n: int) -> str:
    if n > MAX_COUNT:
        raise Unsupported(f"a repeat count of {n} (RE2 counts up to {MAX_COUNT}; write + or *)")
    return str(n)


def _emit(items, ascii_only: bool) -> str:
    out = []
    for op, av in items:
        if op in _REFUSED:
            raise Unsupported(_REFUSED[op])
        if op in (c.ASSERT, c.ASSERT_NOT):
            raise Unsupported(_ASSERTS[(op, av[0])]
                              + ": RE2 has no lookaround")
        if op is c.LITERAL:
            out.append(_char(av))
        elif op is c.NOT_LITERAL:
            out.append(f"[^{_char(av)}]")
        elif op is c.ANY:
            out.append(".")
        elif op is c.IN:
            out.append(_class(av, ascii_only))
        elif op is c.AT:
            out.append(_at(av, ascii_only))
        elif op is c.BRANCH:
            out.append("(?:" + "|".join(_emit(b, ascii_only) for b in av[1]) + ")")
        elif op is c.SUBPATTERN:
            _, add, remove, sub = av
            inner_ascii = (ascii_only or bool(add & c.SRE_FLAG_ASCII)) and not (
                remove & c.SRE_FLAG_ASCII or add & c.SRE_FLAG_UNICODE)
            flags = _flag_letters(add) + ("-" + _flag_letters(remove) if _flag_letters(remove)
                                          else "")
            out.append(f"(?{flags}:{_emit(sub, inner_ascii)})")
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            lo, hi, sub = av
            body = f"(?:{_emit(sub, ascii_only)})"
            if hi is c.MAXREPEAT:
                rep = {0: "*", 1: "+"}.get(lo) or f"{{{_count(lo)},}}"
            elif lo == hi:
                rep = f"{{{_count(lo)}}}"
            else:
                rep = "?" if (lo, hi) == (0, 1) else f"{{{_count(lo)},{_count(hi)}}}"
            out.append(body + rep + ("?" if op is c.MIN_REPEAT else ""))
        else:  # pragma: no cover - every opcode the parser makes is handled above
            raise Unsupported(f"{op}")
    return "".join(out)


def _at(code, ascii_only: bool) -> str:
    if code in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
        if not ascii_only:
            raise Unsupported(_BOUNDARY)
        return "\\b" if code is c.AT_BOUNDARY else "\\B"
    return {c.AT_BEGINNING: "^", c.AT_BEGINNING_STRING: "\\A", c.AT_END: "$",
            c.AT_END_STRING: "\\z"}[code]


def translate(body: str) -> str:
    """Python's regex ``body`` (matched case-insensitively) as RE2 syntax with the same meaning.

    Raises ``re.error`` for a pattern Python cannot parse and ``Unsupported`` for one RE2 cannot
    run."""
    parsed = _parser.parse(body, re.IGNORECASE)
    flags = parsed.state.flags
    prefix = _flag_letters(flags & ~c.SRE_FLAG_IGNORECASE)
    out = _emit(list(parsed), bool(flags & c.SRE_FLAG_ASCII))
    return (f"(?{prefix})" if prefix else "") + out


@lru_cache(maxsize=1)
def _options() -> re2.Options:
    opts = re2.Options()
    opts.case_sensitive = False
    opts.never_capture = True  # spans are all the graders read
    opts.log_errors = False
    return opts


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """A lone surrogate cannot go to RE2 as UTF-8: U+FFFD instead, one character for one, so
    every span stays where it was."""
    return _SURROGATE.sub("\ufffd", text)


class Pattern:
    """An RE2 program with the part of ``re.Pattern``'s interface the graders use."""

    __slots__ = ("_re",)

    def __init__(self, compiled: Any) -> None:
        self._re = compiled

    def _call(self, method: str, text: str, *args: int) -> Any:
        try:
            return getattr(self._re, method)(text, *args)
        except UnicodeEncodeError:
            return getattr(self._re, method)(_encodable(text), *args)

    def search(self, text: str, *pos: int) -> Any:
        return self._call("search", text, *pos)

    def match(self, text: str, *pos: int) -> Any:
        return self._call("match", text, *pos)

    def fullmatch(self, text: str, *pos: int) -> Any:
        return self._call("fullmatch", text, *pos)

    def finditer(self, text: str) -> Iterator[Span]:
        """Every match, left to right, as re's finditer (the binding's own costs ten times
        re's on a short reply: it builds offset tables and a match object per match)."""
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            text = _encodable(text)
            encoded = text.encode("utf-8")
        match, end = self._re._regexp.Match, len(encoded)
        ascii_only = len(encoded) == len(text)
        pos = last_byte = last_char = 0
        while pos <= end:
            lo, hi = match(_UNANCHORED, encoded, pos, end)[0]
            if lo < 0:
                return
            if ascii_only:
                yield Span(lo, hi)
            else:  # byte offsets to character offsets, counting forward once over the text
                start = last_char + _re2.BytesToCharLen(encoded, last_byte, lo)
                stop = start + _re2.BytesToCharLen(encoded, lo, hi)
                last_byte, last_char = hi, stop
                yield Span(start, stop)
            # an empty match (none reaches here from a bank: they are refused) moves on one
            pos = hi if hi > lo else hi + max(1, _re2.CharLenToBytes(encoded, hi, 1))


@dataclass(frozen=True, slots=True)
class Span:
    """Where a match is, in characters: what ``finditer`` yields."""

    _start: int
    _end: int

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def span(self) -> tuple[int, int]:
        return self._start, self._end


_UNANCHORED = re2._Anchor.UNANCHORED


def compile_re2(body: str) -> Pattern:
    """The RE2 program for a Python-syntax pattern: ``search``, ``finditer``, ``match`` and
    ``fullmatch`` as Python's, in linear time. Raises ``re.error`` or ``Unsupported``."""
    translated = translate(body)
    try:
        return Pattern(re2.compile(translated, _options()))
    except re2.error as exc:
        raise Unsupported(f"a form RE2 cannot compile ({exc})") from None


def required_text(body: str) -> str:
    """A piece of text every match contains (the longest run of case-free literal characters
    outside any branch or optional part), or "": a reply without it is not searched."""
    best: list[str] = []
    run: list[str] = []

    def walk(items) -> None:
        nonlocal run, best
        for op, av in items:
            if op is c.LITERAL and chr(av).lower() == chr(av).upper() == chr(av):
                run.append(chr(av))
                continue
            if op is c.SUBPATTERN:
                walk(av[3])
                continue
            if len(run) > len(best):
                best = run
            run = []

    walk(_parser.parse(body, re.IGNORECASE))
    if len(run) > len(best):
        best = run
    return "".join(best)
