"""Classify one occurrence of a pattern in a reply: asserted, negated, asked, quoted...

Chinese negation contains the affirmative (不提供貨到付款 ⊃ 提供貨到付款), so a
substring hit says nothing until we know how the clause around it uses it. The
rules are deliberately simple and general (docs/graders.md lists them):

1. The clause is the text between clause breaks (，。！？；, newline; '.' ending a
   sentence). Within it, a contrast, coordination, time clause or new subject
   (但, 也, 時, 我們, but, and, when...) ends a negation's scope.
2. Quotation marks, or a stretch of context shared with the work order, make it
   ``quoted``; a question word or question ending makes it ``interrogative``; a
   condition makes it ``hypothetical``.
3. Negators left in scope are counted (pseudo-negations such as 非常, 不僅,
   沒問題 masked first): none is ``asserted``; one close before the hit is
   ``negated``; one far away is ``unclear``; two is ``double_negation``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from graders import cues

Kind = Literal[
    "asserted", "negated", "interrogative", "hypothetical", "quoted", "double_negation", "unclear"
]
# Kinds a person must decide: the rules cannot tell whether the reply asserts it.
AMBIGUOUS: frozenset[str] = frozenset({"double_negation", "unclear"})

_ASCII_WORD = re.compile(r"[a-z0-9'’]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Occurrence:
    kind: Kind
    start: int
    end: int
    cue: str = ""  # the word that decided it, "" for asserted
    sentence: str = ""  # the sentence, with the hit marked «like this»

    def describe(self) -> str:
        why = f" by '{self.cue}'" if self.cue else ""
        return f"{self.kind}{why}: {self.sentence}"


def _cue_table() -> dict[str, str]:
    table: dict[str, str] = {}
    groups = (
        ("neg", cues.NEGATION_ZH + cues.NEGATION_EN),
        ("break", cues.SCOPE_BREAK_ZH + cues.SCOPE_BREAK_EN),
        ("hypo", cues.HYPOTHETICAL_ZH + cues.HYPOTHETICAL_EN),
        ("ask", cues.INTERROGATIVE_ZH + cues.INTERROGATIVE_EN),
        ("pseudo", cues.PSEUDO_NEGATION_ZH + cues.PSEUDO_NEGATION_EN),
    )
    for kind, words in groups:  # later groups win on the same word
        for w in words:
            table[w] = kind
    return table


@lru_cache(maxsize=1)
def _scanners() -> tuple[re.Pattern[str], re.Pattern[str], dict[str, str]]:
    """Two scanners: CJK cues (pure literals, which re scans fast) and word-bounded Latin cues."""
    table = _cue_table()
    words = sorted(table, key=len, reverse=True)
    cjk = re.compile("|".join(re.escape(w) for w in words if not w.isascii()))
    latin = re.compile(r"(?<![a-z0-9'’])(?:" + "|".join(re.escape(w) for w in words if w.isascii())
                       + r")(?![a-z0-9'’])")
    return cjk, latin, table


_LATIN = re.compile(r"[a-z]")


def _tokens(text: str) -> list[tuple[str, str, int, int]]:
    """(kind, cue, start, end) for every cue in ``text``, in order; the longest cue wins."""
    cjk, latin, table = _scanners()
    found = [(table[m.group()], m.group(), m.start(), m.end()) for m in cjk.finditer(text)]
    if _LATIN.search(text):
        found += [(table[m.group()], m.group(), m.start(), m.end()) for m in latin.finditer(text)]
        found.sort(key=lambda t: t[2])
    return found


# Breaks in normalised text (NFKC has made ，！？； into ,!?;). A comma or point inside a
# number (1,200 / 2.5) is not a break; a '.' ends a clause only before white space or the end.
_CLAUSE_CHARS = ",。!?;\n."
_SENTENCE_CHARS = "。!?;\n."


def _counts(text: str, i: int, ch: str) -> bool:
    if ch == ",":
        return not (0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit())
    if ch == ".":
        return i == len(text) - 1 or text[i + 1] in " \n"
    return True


@lru_cache(maxsize=64)
def _present(text: str) -> tuple[str, str]:
    """The clause and sentence break characters this text contains at all."""
    clause = "".join(ch for ch in _CLAUSE_CHARS if ch in text)
    return clause, "".join(ch for ch in clause if ch in _SENTENCE_CHARS)


def _clause_bounds(text: str, start: int, end: int, sentence: bool = False,
                   within: tuple[int, int] | None = None) -> tuple[int, int]:
    """[lo, hi): from just after the last break before ``start`` to the first break at/after
    ``end``, searching inside ``within`` when given. str.rfind/find keep this at C speed."""
    chars = _present(text)[1 if sentence else 0]
    lo, hi = within or (0, len(text))
    for ch in chars:
        j = text.rfind(ch, lo, start)
        while j >= 0 and not _counts(text, j, ch):
            j = text.rfind(ch, lo, j)
        if j >= lo:
            lo = j + 1
        j = text.find(ch, end, hi)
        while j >= 0 and not _counts(text, j, ch):
            j = text.find(ch, j + 1, hi)
        if j >= 0:
            hi = j
    return lo, hi


def _gap_size(gap: str) -> int:
    """Distance in CJK characters plus Latin words."""
    return len(_CJK.findall(gap)) + len(_ASCII_WORD.findall(gap))


_QUOTE_CHARS = frozenset("".join(cues.QUOTE_PAIRS) + "".join(cues.QUOTE_PAIRS.values()))


def _inside_quotes(sentence: str, rel_start: int, rel_end: int) -> bool:
    if _QUOTE_CHARS.isdisjoint(sentence):
        return False
    before, after = sentence[:rel_start], sentence[rel_end:]
    for opener, closer in cues.QUOTE_PAIRS.items():
        if opener == closer:
            if before.count(opener) % 2 == 1 and opener in after:
                return True
        elif before.rfind(opener) > before.rfind(closer) and closer in after:
            return True
    return False


def _shared_with_input(text: str, start: int, end: int, input_text: str) -> bool:
    """True when the hit sits in a stretch of at least 4 more characters copied from the input."""
    if not input_text or text[start:end] not in input_text:
        return False
    lo, hi = start, end
    while lo > 0 and text[lo - 1 : hi] in input_text:
        lo -= 1
    while hi < len(text) and text[lo : hi + 1] in input_text:
        hi += 1
    return (hi - lo) - (end - start) >= 4


@lru_cache(maxsize=4096)
def _contains_negator(hit: str) -> bool:
    return any(kind == "neg" for kind, *_ in _tokens(hit))


def classify(text: str, start: int, end: int, *, input_text: str = "") -> Occurrence:
    """Classify the hit ``text[start:end]`` (normalised text) by how its clause uses it.

    ``input_text`` (the normalised work order) enables the quoted-from-input rule;
    pass it for forbidden checks, not for facts.
    """
    c_lo, c_hi = _clause_bounds(text, start, end)
    # a sentence contains its clause: search for its ends outside the clause only
    s_lo, _ = _clause_bounds(text, c_lo, c_lo, sentence=True, within=(0, c_lo))
    _, s_hi = _clause_bounds(text, c_hi, c_hi, sentence=True, within=(c_hi, len(text)))
    sentence = (text[s_lo:start] + "«" + text[start:end] + "»" + text[end:s_hi]).strip()

    def occ(kind: Kind, cue: str = "") -> Occurrence:
        return Occurrence(kind, start, end, cue, sentence)

    if _inside_quotes(text[s_lo:s_hi], start - s_lo, end - s_lo):
        return occ("quoted", "quotation marks")
    if _shared_with_input(text, start, end, input_text):
        return occ("quoted", "words copied from the work order")

    prefix, suffix = text[c_lo:start], text[end:c_hi]
    terminator = text[c_hi] if c_hi < len(text) else ""
    tokens = _tokens(prefix)
    for kind, word, _, _ in tokens:
        if kind == "ask":
            return occ("interrogative", word)
        if kind == "hypo":
            return occ("hypothetical", word)
    for word in cues.QUESTION_SUFFIX:
        if word in suffix:
            return occ("interrogative", word)
    if terminator in ("?", "？"):
        return occ("interrogative", "?")
    for word in cues.HYPOTHETICAL_SUFFIX:
        if word in suffix:
            return occ("hypothetical", word)

    last_break = max((t[3] for t in tokens if t[0] == "break"), default=0)
    negators = [t for t in tokens if t[0] == "neg" and t[2] >= last_break]
    hit_negated = _contains_negator(text[start:end])
    if not negators:
        return occ("asserted")
    if len(negators) >= 2 or hit_negated:
        return occ("double_negation", "".join(t[1] for t in negators))
    kind, word, _, cue_end = negators[0]
    if _gap_size(prefix[cue_end:]) <= cues.NEAR_WINDOW:
        return occ("negated", word)
    return occ("unclear", f"{word} (far before the match)")
