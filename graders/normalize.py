"""Text normalisation: the only tolerance the graders allow; anything looser
is written in the bank, where it shows.

NFKC (full-width and half-width forms become one), casefold, and white space
collapsed. A run of white space that contains a line break becomes a single
newline, because a line break ends a clause for the negation rules; any other
run becomes one space. Folding (on by default; a bank may turn it off with
``options.fold_script: false``) also makes Traditional = Simplified, character by
character (OpenCC's character tables: the same length, so 貨到付款 = 货到付款), and
writes amounts one way: thousands separators dropped, a currency sign or a spaced 元
written as 元 (NT$2,400 = 2,400 元 = 2400元).

``normalize_mapped`` also returns where each character of the normalised text came from,
so evidence quotes the reply as the agent wrote it.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

_WS_CHANGE = re.compile(r"\s{2,}|[^\S \n]")
_WS_NEEDED = re.compile(r"[^\S\n ]|\s\s")
# The full-width marks Chinese replies are full of, mapped exactly as NFKC maps them. After
# these few C-speed replaces most replies are NFKC already and the quick check skips the
# (slower) full normalisation; anything else still goes through unicodedata.
_WIDE = tuple((chr(cp), chr(cp - 0xFEE0)) for cp in map(ord, "，？！；：（）％")) + (("\u3000", " "),)
# An amount written with a currency sign, thousands separators or a spaced 元; the callback
# writes it as digits (and 元 when it is money).
# Characters Taiwanese text writes as the Simplified form does (台, not OpenCC's 臺).
_SHARED = frozenset("台")
_AMOUNT = re.compile(r"(?<![\d.,])(?:(?:nt ?\$|ntd ?\$?|\$) ?\d+(?:,\d{3})*|\d{1,3}(?:,\d{3})+"
                     r"|\d+(?= 元))(?:\.\d+)?(?: ?元)?")
_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")


@lru_cache(maxsize=1)
def _fold_table() -> tuple[dict[str, str], re.Pattern[str]]:
    """Every character of a Traditional/Simplified class → one of the class (the Taiwanese form
    of the first Traditional one OpenCC lists: 发, 髮 → 發; 为 → 為), one character for one, so
    offsets stay put; and a scanner for the characters that change: a Traditional reply holds few of
    them, so only those few are rewritten. Read once per process."""
    from importlib.resources import files

    def read(name: str) -> dict[str, list[str]]:
        out = {}
        for line in files("opencc").joinpath("dictionary", name).read_text("utf-8").splitlines():
            key, _, values = line.partition("\t")
            if len(key) == 1 and values:
                out[key] = [v for v in values.split(" ") if len(v) == 1]
        return out

    t2s, s2t, tw = read("TSCharacters.txt"), read("STCharacters.txt"), read("TWVariants.txt")

    def rep(c: str) -> str:
        # the Taiwanese form of OpenCC's first Traditional one (為, 裡, 於), or 台
        simp = (t2s.get(c) or [c])[0]
        trad = s2t.get(simp) or [simp]
        if simp in _SHARED:
            return simp
        return (tw.get(trad[0]) or trad)[0]

    fold = {}
    for c in {*t2s, *s2t}:
        r = rep(c)
        for _ in range(3):  # settle the rare chains, so folding is idempotent
            if rep(r) == r:
                break
            r = rep(r)
        if r != c and rep(r) == r and ord(c) < 0x10000 and ord(r) < 0x10000:
            fold[c] = r
    return fold, re.compile("[" + "".join(sorted(fold)) + "]")


def fold_script(text: str) -> str:
    """Fold Traditional and Simplified Chinese into one script, character for character
    (货到付款 → 貨到付款); text without a character to fold is returned as it is."""
    if text.isascii():
        return text
    table, changes = _fold_table()
    return changes.sub(lambda m: table[m.group()], text)


@dataclass(frozen=True, slots=True)
class Mapped:
    """A normalised text and, per stage that changed lengths, breakpoints back to the original."""

    text: str
    original: str
    stages: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()  # last stage first

    def origin(self, i: int) -> int:
        """The index in the original text of normalised index ``i`` (a boundary maps to one)."""
        for news, olds in self.stages:
            k = bisect_right(news, i) - 1
            j = olds[k] + (i - news[k])
            i = min(j, olds[k + 1]) if k + 1 < len(olds) else j
        return min(i, len(self.original))

    def quote(self, lo: int, hi: int) -> str:
        """The original text of normalised ``[lo, hi)``."""
        return self.original[self.origin(lo):self.origin(hi)]

    def marked(self, lo: int, start: int, end: int, hi: int) -> str:
        """The original text of normalised ``[lo, hi)`` with ``[start, end)`` marked «so»."""
        o = self.original
        a, b, c, d = (self.origin(i) for i in (lo, start, end, hi)) if self.stages else (
            lo, start, end, hi)
        return (o[a:b] + "«" + o[b:c] + "»" + o[c:d]).strip()


def _edit_mapped(s: str, edits, stages: list) -> str:
    """Apply ``edits`` ((start, end, replacement), in order, not overlapping) to ``s``,
    recording breakpoints where a replacement changes the length."""
    news, olds, out = [0], [0], []
    last = delta = 0
    for a, b, r in edits:
        out += (s[last:a], r)
        last = b
        if len(r) != b - a:
            news.append(a + delta)
            olds.append(a)
            delta += len(r) - (b - a)
            news.append(b + delta)
            olds.append(b)
    if not out:
        return s
    out.append(s[last:])
    if len(news) > 1:
        stages.append((tuple(news), tuple(olds)))
    return "".join(out)


def _sub_mapped(regex: re.Pattern[str], repl, s: str, stages: list) -> str:
    """``regex.sub(repl, s)``, recording breakpoints where a replacement changes the length."""
    edits = ((m.start(), m.end(), r) for m in regex.finditer(s) if (r := repl(m)) != m.group())
    return _edit_mapped(s, edits, stages)


def _anchors(text: str) -> list[int]:
    """Where an amount may need rewriting: a currency sign, a spaced 元, a comma between digits
    (found with str.find, at C speed: most replies hold none)."""
    found = [m.start() + 1 for m in _THOUSANDS.finditer(text)] if "," in text else []
    for mark in ("$", " 元"):
        i = text.find(mark)
        while i >= 0:
            found.append(i)
            i = text.find(mark, i + 1)
    return sorted(found)


_THOUSANDS = re.compile(r"\d,\d")


def _amounts(text: str) -> list[tuple[int, int, str]]:
    """The rewrites of the amounts around the anchors: (start, end, replacement)."""
    edits: list[tuple[int, int, str]] = []
    last = 0
    for i in _anchors(text):
        if i < last:
            continue
        floor = max(last, i - 24)  # an amount is short: a hostile digit run costs no more
        if text[i] == " ":  # "1000 元", the common case: digits, a space, 元
            j = i
            while j > floor and text[j - 1].isdigit():
                j -= 1
            if j < i and (j == 0 or text[j - 1] not in "$,.") and not (j > 0 and text[j - 1].isdigit()):
                edits.append((i, i + 1, ""))
                last = i + 2
                continue
        if text[i] == "$":
            starts = [j for j in (i - 4, i - 3, i - 2, i) if j >= last]  # "nt $", "ntd$", "nt$"
        else:
            j = i
            while j > floor and (text[j - 1].isdigit() or text[j - 1] in ",."):
                j -= 1
            starts = [j]
        for j in starts:
            a = _AMOUNT.match(text, j)
            if a and a.end() > i:
                r = _amount(a)
                if r != a.group():
                    edits.append((a.start(), a.end(), r))
                last = a.end()
                break
    return edits


def _amount(m: re.Match[str]) -> str:
    s = m.group()
    num = _DIGITS.search(s).group().replace(",", "")  # type: ignore[union-attr]
    return num + "元" if not s[0].isdigit() or s.endswith("元") else num


def _char_by_char(s: str, stages: list) -> str:
    """NFKC and casefold one character at a time, for the rare text whose length they change."""
    news, olds, out = [0], [0], []
    n = 0
    for i, ch in enumerate(s):
        c = unicodedata.normalize("NFKC", ch).casefold()
        if len(c) != 1:
            news.append(n)
            olds.append(i)
            news.append(n + len(c))
            olds.append(i + 1)
        out.append(c)
        n += len(c)
    stages.append((tuple(news), tuple(olds)))
    return "".join(out)


def normalize_mapped(text: str, *, fold: bool = True) -> Mapped:
    """The normalised text with its way back to ``text`` (see ``normalize``)."""
    original = text
    stages: list = []
    for wide, narrow in _WIDE:
        if wide in text:
            text = text.replace(wide, narrow)
    # is_normalized is a fast quick-check: most replies are NFKC by now and skip the rewrite
    t = text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
    t = t.casefold()
    # casefold can produce sequences NFKC would compose differently; a second pass settles it.
    if not unicodedata.is_normalized("NFKC", t):
        t = unicodedata.normalize("NFKC", t)
    if len(t) != len(text):  # ﬁ, ß, ㈱, …: rare; keep the offsets one character at a time
        t = _char_by_char(text, stages)
        if not unicodedata.is_normalized("NFKC", t):  # combining marks: offsets approximate
            t = unicodedata.normalize("NFKC", t)
    text = t
    if _WS_NEEDED.search(text):
        text = _sub_mapped(_WS_CHANGE, lambda m: "\n" if "\n" in m.group() else " ", text, stages)
    if fold:
        text = fold_script(text)
        edits = _amounts(text)
        if edits:
            text = _edit_mapped(text, edits, stages)
    stripped = text.strip()
    if stripped != text:
        lead = len(text) - len(text.lstrip())
        if lead:
            stages.append(((0,), (lead,)))
        text = stripped
    return Mapped(text, original, tuple(reversed(stages)))


def normalize(text: str, *, fold: bool = True) -> str:
    """Return ``text`` normalised for matching; idempotent for both settings of ``fold``."""
    return normalize_mapped(text, fold=fold).text


@lru_cache(maxsize=1024)
def normalize_short(text: str) -> str:
    """normalize() for the few distinct short strings that repeat (statuses, tool names)."""
    return normalize(text)
