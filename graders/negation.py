"""Classify one occurrence of a pattern in a reply: asserted, negated, asked, quoted...

Chinese negation contains the affirmative (不提供貨到付款 ⊃ 提供貨到付款), so a
substring hit says nothing until we know how the clause around it uses it. The rules
model negation *scope* on both sides of the hit (docs/graders.md, "The scope model"):

1. The clause is the text between clause breaks (，。！？；, newline; '.' ending a
   sentence). The hit's own characters are never a cue: it is the proposition whose
   polarity is being read.
2. Quotation marks, or a stretch copied from the work order, make it ``quoted``; a
   question word or question ending makes it ``interrogative``; a condition makes it
   ``hypothetical``. A quoted or asked hit the reply then answers "yes" is ``answered``.
3. Cues are words, longest first (特別 is not 別, 毫不猶豫地 is an adverb, 免費 is
   "free"). Before the hit, a negator scopes to the hit unless a break word (contrast,
   coordination, consequence, a new subject, the end of a modifier or time clause)
   stands between. After the hit, a negated predicate governs it when it is the
   clause's verdict on the hit (X目前沒有開放, X是不太可能的, X isn't offered).
4. Negators counted on both sides: none is ``asserted``, one ``negated``, two or more
   ``double_negation`` (今天寄出也不是不可能; it's not that we won't...); a negated
   quantifier (not every, 不是每) is ``unclear``: true of some.
5. What a rule cannot decide goes to a person (``unclear``) rather than pass: a negated or
   rhetorical question (我們不是有提供…嗎？), an excepted item (除了X以外都不支援), a topic or
   quotation whose sentence does not go on to deny it (關於X，本店有提供). A hedge with no
   negator (應該已經出貨了) is ``hedged``: a fact it does not state, a forbidden claim it
   still makes. A list item (- X) takes the negators of its head line ending in ':'.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from graders import cues
from graders.normalize import Mapped, fold_script

Kind = Literal[
    "asserted", "negated", "interrogative", "hypothetical", "quoted", "double_negation",
    "unclear", "answered", "hedged",
    # not said in the reply's own voice, now, unconditionally (issue 31):
    "conditional",  # the consequent of a condition, a warning: no fact yet, no offer
    "conditional_offer",  # an offer on a condition (若是會員可以…): no fact yet, an offer made
    "unmet",  # a condition the reply says is not met (…還差 300 元): not so
    "past",  # what was (we used to…): not so now
    "not_yet",  # what will be from a date (下個月起): not so now
    "future",  # said of a time to come (下個月): a person reads it
    "taken_back",  # a general rule the next clause takes back (原則上可以，不過這項不行)
    "reported",  # someone else's word, not confirmed (物流說已經修好了): a fact a person reads
    "offered",  # asked in a question that offers it (退到信用卡還是轉購物金？)
]
# Kinds a person must decide: the rules cannot tell whether the reply asserts it.
# "unclear" is a negated quantifier (not every store offers pickup): true of some.
AMBIGUOUS: frozenset[str] = frozenset({"double_negation", "unclear", "answered"})
# "hedged" (應該已經出貨了, probably shipped) claims without certainty: a forbidden claim
# hedged is still made (fail); a fact hedged is not stated (a person reads it).

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_EN_WORD = re.compile(r"[a-z][a-z'’-]*")


@dataclass(frozen=True, slots=True)
class Occurrence:
    kind: Kind
    start: int
    end: int
    cue: str = ""  # the word(s) that decided it, "" for asserted
    sentence: str = ""  # the sentence, with the hit marked «like this»

    def describe(self) -> str:
        why = f" by '{self.cue}'" if self.cue else ""
        return f"{self.kind}{why}: {self.sentence}"


# token kinds
NEG, CLAUSAL, PARTIAL, ENDING = "neg", "clausal", "partial", "ending"
PSEUDO, ASK, HYPO, REPORT = "pseudo", "ask", "hypo", "report"
CAUSE, EXCEPT, HEDGE, COPULA, CANCEL, DASH = "cause", "except", "hedge", "copula", "cancel", "dash"
SUFFICIENT = "sufficient"
PAST, FUTURE, FSTART, GENERAL, HEARSAY, SHOWS = "past", "future", "fstart", "general", "hearsay", \
    "shows"
BREAK, COORD, SUBJECT, MODIFIER, TIME, RELATIVE = "break", "coord", "subj", "mod", "time", "rel"


def _cue_table() -> dict[str, str]:
    table: dict[str, str] = {}
    groups = (
        (NEG, cues.NEGATION_ZH + cues.NEGATION_EN),
        (CLAUSAL, cues.CLAUSAL_NEGATION),
        (PARTIAL, cues.PARTIAL_NEGATION),
        (ENDING, cues.ENDING_ZH),
        (BREAK, cues.SCOPE_BREAK_ZH + cues.SCOPE_BREAK_EN),
        (CAUSE, cues.SCOPE_CAUSE_ZH + cues.SCOPE_CAUSE_EN + cues.SCOPE_STILL_ZH),
        (EXCEPT, cues.EXCEPT_ZH + cues.EXCEPT_EN),
        (HEDGE, cues.HEDGE_ZH + cues.HEDGE_EN),
        (CANCEL, cues.CANCEL_ZH + cues.CANCEL_EN),
        (DASH, cues.DASH),
        (SUFFICIENT, cues.SUFFICIENT_ZH),
        (PAST, cues.PAST_ZH + cues.PAST_EN),
        (FUTURE, cues.FUTURE_ZH + cues.FUTURE_EN),
        (FSTART, cues.FUTURE_START_ZH + cues.FUTURE_START_EN),
        (GENERAL, cues.GENERAL_ZH + cues.GENERAL_EN),
        (HEARSAY, cues.HEARSAY_ZH + cues.HEARSAY_EN),
        (SHOWS, cues.SHOWS_ZH + cues.SHOWS_EN),
        (COORD, cues.COORDINATION_ZH + cues.COORDINATION_EN),
        (SUBJECT, cues.SCOPE_SUBJECT_ZH + cues.SCOPE_SUBJECT_EN),
        (MODIFIER, cues.SCOPE_MODIFIER_ZH),
        (TIME, cues.SCOPE_TIME_ZH + cues.SCOPE_TIME_EN),
        (RELATIVE, cues.SCOPE_RELATIVE_EN),
        (HYPO, cues.HYPOTHETICAL_ZH + cues.HYPOTHETICAL_EN),
        (ASK, cues.INTERROGATIVE_ZH + cues.INTERROGATIVE_EN),
        (REPORT, cues.REPORTED_ZH + cues.REPORTED_EN + cues.TOPIC_ZH + cues.TOPIC_EN),
        (PSEUDO, cues.PSEUDO_NEGATION_ZH + cues.PSEUDO_NEGATION_EN),
    )
    for kind, words in groups:  # later groups win on the same word
        for w in words:
            table[w] = kind
            table[fold_script(w)] = kind  # the text is folded (沒關係 → 沒關系)
    return table


def _trie_regex(words: list[str]) -> str:
    """An alternation factored by common prefix, longest first: re then tests one branch per
    character instead of every word at every position."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        ends = "" in node
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return build(trie)


@lru_cache(maxsize=1)
def _scanners() -> tuple[re.Pattern[str], re.Pattern[str], dict[str, str]]:
    """Two scanners: CJK cues (pure literals) and word-bounded Latin cues; longest match wins."""
    table = _cue_table()
    cjk = re.compile(_trie_regex([w for w in table if not w.isascii()]))
    latin = re.compile(r"(?<![a-z0-9'’])" + _trie_regex([w for w in table if w.isascii()])
                       + r"(?![a-z0-9'’])")
    return cjk, latin, table


_LATIN = re.compile(r"[a-z]")

Token = tuple[str, str, int, int]  # (kind, cue, start, end)


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[Token, ...]:
    """(kind, cue, start, end) for every cue in ``text``, in order; the longest cue wins."""
    cjk, latin, table = _scanners()
    found = [(table[m.group()], m.group(), m.start(), m.end()) for m in cjk.finditer(text)]
    if _LATIN.search(text):
        found += [(table[m.group()], m.group(), m.start(), m.end()) for m in latin.finditer(text)
                  if m.group() in table]
        found.sort(key=lambda t: t[2])
    return tuple(found)


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


_EMOJI = re.compile(cues.EMOJI_BREAK)


@lru_cache(maxsize=64)
def _emoji_breaks(text: str) -> tuple[int, ...]:
    """Where an emoji ends a chat clause (不提供分期😊 可以貨到付款); not the negative ones."""
    return tuple(m.start() for m in _EMOJI.finditer(text)
                 if m.group() not in cues.EMOJI_NOT_BREAK)


@lru_cache(maxsize=64)
def _present(text: str) -> tuple[str, str, bool]:
    """The clause and sentence break characters this text contains at all, and whether it
    may hold an emoji."""
    clause = "".join(ch for ch in _CLAUSE_CHARS if ch in text)
    return (clause, "".join(ch for ch in clause if ch in _SENTENCE_CHARS),
            not text.isascii() and _EMOJI.search(text) is not None)


def _clause_bounds(text: str, start: int, end: int, sentence: bool = False,
                   within: tuple[int, int] | None = None) -> tuple[int, int]:
    """[lo, hi): from just after the last break before ``start`` to the first break at/after
    ``end``, searching inside ``within`` when given. str.rfind/find keep this at C speed."""
    present = _present(text)
    chars = present[1 if sentence else 0]
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
    if not sentence and present[2]:
        for j in _emoji_breaks(text):
            if lo <= j < start:
                lo = j + 1
            elif end <= j < hi:
                hi = j
                break
    return lo, hi


_QUOTE_CHARS = frozenset("".join(cues.QUOTE_PAIRS) + "".join(cues.QUOTE_PAIRS.values()))
# a search at C speed: frozenset.isdisjoint(str) hashes every character of the sentence
_QUOTE_RE = re.compile("[" + re.escape("".join(sorted(_QUOTE_CHARS))) + "]")


def _quote_end(sentence: str, rel_start: int, rel_end: int) -> int:
    """Where the quotation around the hit closes (index in ``sentence``), or -1 if unquoted."""
    if not _QUOTE_RE.search(sentence):
        return -1
    before = sentence[:rel_start]
    for opener, closer in cues.QUOTE_PAIRS.items():
        j = sentence.find(closer, rel_end)
        if j < 0:
            continue
        if opener == closer:
            if before.count(opener) % 2 == 1:
                return j
        elif before.rfind(opener) > before.rfind(closer):
            return j
    return -1


def _copied_stretch(text: str, start: int, end: int, input_text: str) -> tuple[int, int] | None:
    """The stretch around the hit copied from the input, if it is at least 4 characters longer
    than the hit."""
    if not input_text or text[start:end] not in input_text:
        return None
    lo, hi = start, end
    while lo > 0 and text[lo - 1 : hi] in input_text:
        lo -= 1
    while hi < len(text) and text[lo : hi + 1] in input_text:
        hi += 1
    return (lo, hi) if (hi - lo) - (end - start) >= 4 else None


# The customer's own voice: a reply does not call itself 你們 nor the customer 我.
_CUSTOMER_VOICE = re.compile(r"我(?![們们])|你|妳|(?<![a-z])(?:i|my|me)(?![a-z'’])")


def _echoes_question(copied: str, input_text: str) -> bool:
    """The copied stretch repeats a question of the customer's, in the customer's voice."""
    if not _CUSTOMER_VOICE.search(copied):
        return False
    i = input_text.find(copied)
    lo, hi = _clause_bounds(input_text, i, i + len(copied))
    clause = input_text[lo:hi]
    asked = hi < len(input_text) and input_text[hi] == "?"
    return asked or any(w in clause for w in cues.QUESTION_SUFFIX) or any(
        t[0] == ASK for t in _tokens(clause))


_AFFIRM_ZH = tuple(sorted(cues.AFFIRMATIVE_ZH, key=len, reverse=True))
_AFFIRM_EN = re.compile(r"(?:" + "|".join(re.escape(w) for w in sorted(
    cues.AFFIRMATIVE_EN, key=len, reverse=True)) + r")(?![a-z])")
# A yes that must stand alone, ended by a break, a particle or the text's end.
_STANDALONE = frozenset({"可以", "可以的", "是的", "有的", "對的", "对的", "行的"})
_ANSWER_END = frozenset(["", ",", "。", "!", ".", ";", " ", "\n", "~", "…", *cues.PARTICLES_ZH])
_SKIP_BEFORE_ANSWER = " ?!,.:;—–-~…」』”\"’》\n。"


_GREETINGS = tuple(sorted(cues.GREETING_ZH + cues.GREETING_EN + cues.ANSWER_LEAD_ZH, key=len,
                          reverse=True))


def _skip_greeting(rest: str) -> str:
    """The answer after marks, emoji and a greeting: 「…嗎？」👍 可以的, …? 您好，可以的."""
    while True:
        i = 0
        while i < len(rest) and (rest[i] in _SKIP_BEFORE_ANSWER
                                 or unicodedata.category(rest[i])[0] in "SPZ"):
            i += 1
        rest = rest[i:]
        word = next((g for g in _GREETINGS if rest.startswith(g)), "")
        if not word or (word.isascii() and rest[len(word):len(word) + 1].isalpha()):
            return rest
        rest = rest[len(word):]


def _answered_yes(text: str, pos: int) -> str:
    """The yes that opens the text at ``pos`` (after a question), "" if none: 可以的, yes, 當然可以.

    A bare 可以, 是的, 有的 must stand alone (可以的, 可以。): 可以改用信用卡 offers something
    else, 是的話 is a condition; an answer holding a negator (當然不行) is not a yes.
    """
    rest = _skip_greeting(text[pos : pos + 60])
    word = next((w for w in _AFFIRM_ZH if rest.startswith(w)), "")
    if word in _STANDALONE and rest[len(word):len(word) + 1] not in _ANSWER_END:
        word = ""  # 可以改用信用卡, 是的話, 有的商品: not a yes
    if not word:
        m = _AFFIRM_EN.match(rest)
        word = m.group() if m else ""
    if not word:
        return ""
    _, hi = _clause_bounds(rest, len(word), len(word))
    if any(t[0] in (NEG, CLAUSAL, PARTIAL) for t in _tokens(rest[len(word):hi])):
        return ""
    return word


def _adjacent(text: str, end: int, start: int) -> bool:
    return not text[end:start].strip()


_NEED = frozenset(cues.NEED_NEGATION)


def _prefix_negators(prefix: str, tokens: tuple[Token, ...]) -> list[Token]:
    """Negators before the hit whose scope reaches it."""
    negs: list[Token] = []
    last_end = -1  # end of the last negator, to let a subject right after it stay in scope
    for tok in tokens:
        kind = tok[0]
        if kind in (NEG, CLAUSAL, PARTIAL) or (
                kind == CANCEL and negs and _adjacent(prefix, last_end, tok[2])):
            negs.append(tok)
            last_end = tok[3]
        elif kind in (BREAK, COORD, MODIFIER, TIME, DASH) or (
                kind == CAUSE and "而" not in prefix[tok[3]:]):  # 不會因為颱風而延遲: in scope
            negs.clear()
        elif kind == SUBJECT and not (last_end >= 0 and _adjacent(prefix, last_end, tok[2])):
            negs.clear()
    # "without" governs its noun phrase: a finite verb after it is the clause's own verb;
    # a negator governing a fee makes the thing priced free, not absent
    kept = []
    for tok in negs:
        if tok[1] == "without" and any(w in cues.FINITE_EN for w in
                                       _EN_WORD.findall(prefix[tok[3]:])):
            continue
        if _governs_cost(prefix[tok[3]:]):
            continue
        if tok[1] in _NEED and any(w in prefix[tok[3]:] for w in cues.MODAL_ZH):
            continue  # 無需申請即可使用…: the modal begins the reply's own claim
        kept.append(tok)
    # 非會員無法…: a bare prefix negator before another negator makes a word with its noun
    kept = [t for i, t in enumerate(kept)
            if not (t[1] in cues.WORD_PREFIX_NEGATION and i + 1 < len(kept))]
    return _neither_nor(kept)


_COST_EN = re.compile(r"\s*(?:(?:" + "|".join(cues.COST_LEAD_EN) + r")\s+)*(?:"
                      + "|".join(cues.COST_EN) + r")(?![a-z])")
_COST_ZH = re.compile("(?:" + "|".join(cues.COST_LEAD_ZH) + ")*(?:" + "|".join(
    sorted(cues.COST_ZH, key=len, reverse=True)) + ")")


def _governs_cost(after: str) -> bool:
    """Does the negator whose scope starts at ``after`` govern a fee (no fee, 不收運費)?"""
    return bool(_COST_ZH.match(after) or _COST_EN.match(after))


def _neither_nor(negs: list[Token]) -> list[Token]:
    """"neither … nor" (and "not … nor") is one negation: nor counts only when it opens it."""
    return [t for i, t in enumerate(negs) if not (t[1] == "nor" and i > 0)]


_PARTICLES = cues.PARTICLES_ZH
_GOV_ZH = tuple(sorted(cues.GOVERNING_ZH, key=len, reverse=True))
_SKIP_ZH = tuple(sorted(cues.GOVERNING_SKIP_ZH, key=len, reverse=True))


def _governs(tail: str) -> bool:
    """Is the text after a negator (up to the end of its scope) a verdict on the hit?"""
    # 貨到付款不行嗎？ is the verdict, asked; 貨到付款(目前不提供) too, in brackets
    tail = tail.strip(_PARTICLES + "嗎吗?)]}>」』】〕")
    if _CJK.search(tail):
        changed = True
        while changed:
            changed = False
            for w in _SKIP_ZH:
                if tail.startswith(w):
                    tail, changed = tail[len(w):], True
        if not tail:
            return True
        if tail.startswith(("在", "於", "于")) and tail.endswith(cues.EXCLUDED_ZH):
            return True  # 不在本次活動範圍內
        for w in _GOV_ZH:
            if tail.startswith(w):
                rest = tail[len(w):].strip(_PARTICLES)
                return not rest or rest.startswith(cues.LOCATIVE_ZH) or rest in ("服務", "服务")
        return False
    for word in _EN_WORD.findall(tail):
        if word in cues.GOVERNING_SKIP_EN:
            continue
        return word in cues.GOVERNING_EN or (word.endswith("ed") and len(word) > 4)
    return True


_MODAL = re.compile(r"(?<![a-z])(?:can|could|may|might|must|should|would)(?![a-z])"
                    r"|可(?!能)|能夠|能够|[才就也都還还]能")


def _suffix_negators(suffix: str, tokens: tuple[Token, ...]) -> list[Token]:
    """Negators after the hit that pass a verdict on it (X目前沒有開放, X isn't offered)."""
    scope_end = len(suffix)
    negs: list[Token] = []
    for tok in tokens:
        kind = tok[0]
        if kind in (BREAK, TIME, RELATIVE, ASK, HYPO, REPORT) or (kind == DASH and negs):
            scope_end = tok[2]
            break
        if kind == COORD and tok[1] == "and":
            nxt = _EN_WORD.findall(suffix[tok[3]:tok[3] + 16])
            if nxt and nxt[0] in cues.VERB_START_EN:
                scope_end = tok[2]
                break
        elif kind == ENDING:
            # under a negator (無法取消) it is that negator's verb; after a modal (可以取消,
            # can be cancelled) a possibility, not the hit's end
            if not negs and not _MODAL.search(suffix, 0, tok[2]):
                negs.append(tok)
        elif kind in (NEG, CLAUSAL, PARTIAL):
            negs.append(tok)
    if not negs:
        return []
    tail = suffix[negs[-1][3]:scope_end]
    if any(w in suffix[:negs[0][2]] for w in cues.PROBLEM_ZH) or _governs_cost(
            tail.lstrip(" " + _PARTICLES + "".join(cues.GOVERNING_SKIP_ZH))):
        return []  # 貨到付款一點問題都沒有, 完全不是問題: the negator denies a problem
    if not _governs(tail):
        # X 並非本店提供的付款方式: X is not something; whether that denies X, a person reads
        last = negs[-1]
        return [(COPULA, last[1], last[2], last[3])] if last[1] in cues.COPULA_NEGATION else []
    return _neither_nor(negs)


_EXCEPT_WORD = re.compile("|".join(cues.EXCEPT_ZH) + "|except|other than|apart from|aside from"
                          "|excluding")


_CONTRAST = frozenset(cues.CONTRAST)
_LIMITING = re.compile("|".join(w for w in cues.LIMITING if not w.isascii()) + r"|(?<![a-z])(?:"
                       + "|".join(w for w in cues.LIMITING if w.isascii()) + r")(?![a-z])")


_STILL = frozenset(("還在", "仍在", "仍然", "still"))
_STILL_HOLDS = ("適用", "有效", "可以", "可用", "進行", "提供", "applies", "valid", "available",
                "running", "active", "on", "in effect", "stands")


def _comment_denies(comment: str) -> bool:
    """Does the rest of a quoted or topical hit's sentence deny, contrast or limit it (or say
    nothing at all)?"""
    if not comment.strip(_SKIP_BEFORE_ANSWER):
        return True
    m = _LIMITING.search(comment)
    if m and m.group() in _STILL and _has(comment[m.end():m.end() + 8], _STILL_HOLDS):
        m = None  # 仍然適用, still valid: the quoted claim stands
    return bool(m) or any(
        t[0] in (NEG, CLAUSAL, PARTIAL, ENDING) or (t[0] == BREAK and t[1] in _CONTRAST)
        for t in _tokens(comment))


_MODAL_ZH = re.compile("|".join(cues.MODAL_ZH))


def _consequent(prefix: str, cue_end: int) -> int:
    """Where the consequent starts in a condition without a comma (若是會員可以貨到付款:
    the modal after the condition's own words), or -1 when the hit is in the condition
    (如果可以貨到付款就好了: the modal opens it)."""
    m = _MODAL_ZH.search(prefix, cue_end)
    return m.start() if m and prefix[cue_end:m.start()].strip() else -1


def _excepted(prefix: str, tokens: tuple[Token, ...], suffix: str) -> str:
    """The except-word that makes the hit an excepted item (除了貨到付款以外, except cash on
    delivery, 貨到付款以外的方式), or ""."""
    for kind, word, _, w_end in reversed(tokens):
        if kind in (BREAK, COORD, CAUSE):
            break
        if kind == EXCEPT and not any(w in prefix[w_end:] for w in cues.EXCEPT_CLOSE_ZH):
            return word
    tail = suffix.lstrip()
    return next((w for w in cues.EXCEPT_CLOSE_ZH if tail.startswith(w)), "")


def _hedge(tokens: tuple[Token, ...], prefix: str = "") -> str:
    """A hedge before the hit whose scope reaches it (應該已經出貨了, probably shipped)."""
    for kind, word, _, w_end in reversed(tokens):
        if kind in (BREAK, COORD, MODIFIER, TIME, CAUSE):
            return ""
        if kind == HEDGE:
            if word == "should" and re.search(r"(?:you|we|i)\s+should\s*$", prefix[:w_end]):
                return ""  # you should bring your ID: an instruction, not a hedge
            return word
    return ""


_ITEM = re.compile(r"\s*(?:[-*•・·‧●○◦▪]|\d{1,2}[.、)]|[①-⑳])")


def _list_head(text: str, c_lo: int) -> list[Token]:
    """Negators of the head a list item hangs from (以下付款方式均不支援：\n- 貨到付款): the
    nearest line above ending in ':', over the items between; [] unless the hit opens a line
    marked as an item (-, •, 1.): an unmarked line after a colon may be a new statement."""
    hi = text.rfind("\n", 0, c_lo)  # the newline ending the line above
    line_end = text.find("\n", hi + 1)
    # "2." ends a clause: the hit's clause may begin after the item's marker
    if hi < 0 or text[hi + 1 : c_lo].strip() and not _ITEM.fullmatch(text[hi + 1 : c_lo].rstrip()):
        return []
    if not _ITEM.match(text, hi + 1, line_end if line_end >= 0 else len(text)):
        return []
    while hi > 0:
        lo = text.rfind("\n", 0, hi) + 1
        line = text[lo:hi].rstrip()
        if line.endswith(":"):
            colon = lo + len(line) - 1
            h_lo, _ = _clause_bounds(text, colon, colon)
            head = text[h_lo:colon]
            return _prefix_negators(head, _tokens(head))
        if not _ITEM.match(line):
            return []
        hi = lo - 1
    return []


# How far the assertion rules look outside the hit's clause: the clause before it and the one
# after it, each cut to this many characters, so a hit never costs more than a bounded window.
NEAR = 60


def _previous_clause(text: str, c_lo: int) -> str:
    """The clause before the hit's (within ``NEAR`` characters), "" at a sentence start."""
    if c_lo == 0 or text[c_lo - 1] not in ",;—–" and not (text[c_lo - 1] == ":"):
        return ""
    lo = max(0, c_lo - 1 - NEAR)
    for ch in _present(text)[0]:
        j = text.rfind(ch, lo, c_lo - 1)
        if j >= lo:
            lo = j + 1
    return text[lo:c_lo - 1]


def _next_clauses(text: str, c_hi: int) -> str:
    """What follows the hit's clause, ``NEAR`` characters of it."""
    return text[c_hi + 1:c_hi + 1 + NEAR] if c_hi < len(text) else ""


@lru_cache(maxsize=64)
def _word_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    """One scanner for a word list: Latin words whole, longest first."""
    words = (*words, *(fold_script(w) for w in words))  # the text is folded (核准 → 核準)
    latin = [w for w in set(words) if w.isascii() and w[0].isalnum() and w[-1].isalnum()]
    other = [w for w in set(words) if w not in latin]
    alts = ([_trie_regex(other)] if other else []) + (
        [r"(?<![a-z])(?:" + _trie_regex(latin) + r")(?![a-z])"] if latin else [])
    return re.compile("|".join(alts))


_SCANNERS: dict[int, tuple[tuple[str, ...], re.Pattern[str]]] = {}


def _has(window: str, words: tuple[str, ...]) -> str:
    """The first of ``words`` found in ``window`` (Latin words whole), or "". ``words`` is one
    of the module's word lists: its scanner is kept by identity (hashing the list costs more
    than the search)."""
    if not window:
        return ""
    kept = _SCANNERS.get(id(words))
    if kept is None or kept[0] is not words:
        kept = _SCANNERS[id(words)] = (words, _word_regex(words))
    m = kept[1].search(window)
    return m.group() if m else ""


_OFFER = cues.OFFER_ZH + cues.OFFER_EN
_UNMET = cues.UNMET
_PENDING = cues.PENDING + cues.TIER
_HEARSAY = cues.HEARSAY_ZH + cues.HEARSAY_EN
_ASKED_OFFER = cues.ALTERNATIVE + cues.OFFER_QUESTION
_LIST_AND = (" or ", " and ", "或", "和", "及")


def _condition_before(prev: str, warnings: bool) -> tuple[str, str]:
    """A condition opening ``prev``, the clause before the hit's (如果醫師同意，…; once you
    report the loss, …), or with ``warnings`` a warning (提醒您，…): (its word, that clause),
    or ("", "")."""
    if not prev or "if ever" in prev:  # "rarely, if ever, …" is no condition
        return "", ""
    word = next((t[1] for t in _tokens(prev) if t[0] == HYPO), "")
    if not word:  # the other words open their clause: once you…, 等您…, 提醒您
        head = prev.lstrip()[:12]
        if not head.startswith(("once again", "once more")):
            word = _has(head, _CONDITION_WORDS + (cues.WARNING_LEAD if warnings else ()))
            word = word if word and head.startswith(word) else ""
    return word, prev


_CONDITION_WORDS = cues.CONDITION_ZH + cues.CONDITION_EN
_CONTRAST_WORDS = tuple(w for w in cues.CONTRAST if w != "instead")
_WILL_ZH = ("會在", "会在", "將在", "将在", "將於", "将于")


def _fact_condition_before(prev: str) -> tuple[str, str]:
    """For a fact, a condition or an event to wait for in the clause before the hit: opening
    it (provided that…, after the payment clears…) or closing it (系統更新完成後，…; 您到店
    的時候，…). (its word, that clause) or ("", "")."""
    if not prev:
        return "", ""
    head = prev.lstrip()[:16]
    word = _has(head, cues.CONDITION_FACT_EN)
    if word and head.startswith(word):
        return word, prev
    tail = prev.rstrip(" " + _PARTICLES)
    word = next((w for w in cues.CONDITION_FACT_END_ZH if tail.endswith(w)), "")
    # 之前 / 以前 are deadlines, 同時 / 隨時 / 小時 no event
    if word and not tail.endswith(("同時", "同时", "隨時", "随时", "小時", "小时", "準時", "准时",
                                   "及時", "及时", "即時", "即时", "暫時", "暂时", "臨時", "临时")):
        return word, prev
    return "", ""
_FIRST_PERSON = re.compile(r"我|(?<![a-z])(?:we|i)(?![a-z])")


def _negated_clause(clause: str) -> bool:
    """Do negators reach the end of ``clause`` (本店不支援貨到付款)?"""
    toks = _tokens(clause)
    return bool(toks) and bool(_prefix_negators(clause, toks))


def _inherited(text: str, c_lo: int, c_hi: int, prefix: str, suffix: str) -> str:
    """The clause takes the negation of the one before it: …不支援 A，B 也一樣; "and the same
    goes for B"; a list's last item after a comma (we don't offer X, Y or Z). The cue, or ""."""
    if c_lo < 2 or text[c_lo - 1] not in ",;":
        return ""
    tail = suffix.strip(" " + _PARTICLES) if len(suffix) <= 16 else ""
    cue = tail if tail in cues.INHERIT_SUFFIX else next(
        (w for w in cues.INHERIT_PREFIX_EN if prefix[-24:].rstrip().endswith(w)), "")
    if not cue and c_hi - c_lo <= 50 and (c_hi == len(text) or text[c_hi] in ".。!") and _has(
            text[c_lo:c_hi], _LIST_AND) and all(
            t[0] == COORD for t in _tokens(text[c_lo:c_hi])):
        cue = "a list's last item"
    if not cue:
        return ""
    prev = _previous_clause(text, c_lo)
    return cue if prev and _negated_clause(prev) else ""


def _offers(clause: str) -> bool:
    """Does the clause offer (可以, 幫您, we can, I'll…) rather than warn?"""
    return bool(_has(clause, _OFFER))


_AMOUNT_OVER = re.compile(r"(?:滿|满|over|above)\s?\$?\d")
# a threshold (滿 2,000 元, over $50, above NT$3,000, more than 5,000, 兩件以上) and the amounts
# around it
_THRESHOLD = re.compile(
    r"(?<![未不沒没])(?:滿|满|超過|超过|達到|达到|over|above|more than|at least|exceeding)\s?"
    r"(?:nt)?\$?\s?(\d[\d,]*(?:\.\d+)?)"
    r"|(?:nt)?\$?\s?(\d[\d,]*|[一二兩两三四五六七八九十])\s?(?:元|件|個|个|份|組|组|樣|样)?\s?"
    r"(?:以上|or more|or above|and above|and up)|(?<![已經经])達\s?(\d[\d,]*)")
_AMOUNT = re.compile(r"(?<![\d.])(\d[\d,]*(?:\.\d+)?)(?![\d])")
_TIER_LINK = ("available to", "available for", "for members", "to members", "to all", "for all",
              "members only", "only for", "only to", "限", "僅限", "仅限", "專屬", "专属",
              "享有", "享", "get", "gets", "receive", "receives", "enjoy", "enjoys")
_TIER_MET = ("您是", "您已是", "您已經是", "您已经是", "you are", "you're", "as a", "身為", "身为",
             "作為", "作为")
_CUSTOMER_DOES = re.compile(r"您(?![的們们])|你(?![的們们])|(?<![a-z])you(?![a-z'’])")
_DEADLINE_ZH = re.compile(r"(?:[週周][一二三四五六日末]|星期[一二三四五六日天]|[日天號号底點点]|\d)\s?"
                          r"(?:之前|以前|前)")
_WILL_EN = re.compile(r"(?:(?<![a-z])will|'ll|’ll)(?![a-z])")
_EVENT_WORDS = frozenset(("after", "when", "once", *cues.CONDITION_FACT_END_ZH)) - {"的話", "的话"}
_DEADLINE_EN = re.compile(r"(?<![a-z])(?:by|before|within)\s+(?:the end|end of|monday|tuesday|"
                          r"wednesday|thursday|friday|saturday|sunday|tomorrow|next|\d)")


def _number(raw: str) -> float:
    return float(raw.replace(",", ""))


def _threshold(text: str, start: int, end: int, lo: int, hi: int, prev: str,
               nxt: str) -> tuple[str, str] | None:
    """A fact stated as a rule on a threshold near the hit (消費滿 2,000 元即可享免費安裝;
    free shipping applies to orders over $50): ("unmet", …) when an amount of the customer's
    is below it, None when the reply says the customer meets it, else ("conditional", …)."""
    # the threshold is in the hit's clause (not the hit itself: 滿 «1000» 元免運費 states the
    # rule), or is all the clause before says (消費滿 2,000 元，即可…); a rule of its own there
    # (訂單滿 1000 元免運費，未滿的運費 80 元) is another statement
    window = text[lo:hi]
    m = next((t for t in _THRESHOLD.finditer(window)
              if not (lo + t.start() < end and start < lo + t.end())), None)
    if m is None and prev:
        last = list(_THRESHOLD.finditer(prev))
        if last and len(prev[last[-1].end():].strip(" 元件個个份組组樣样以上的")) == 0:
            window = prev + " " + window
            m = _THRESHOLD.search(window)
    if not m:
        return None
    cue = m.group().strip()
    if _has(nxt, cues.UNMET):
        return "unmet", f"{cue} … {_has(nxt, cues.UNMET)}"
    around = window + " " + nxt
    if _has(window, cues.MET) and not _has(around, ("不符合", "未符合", "未達", "未达")):
        return None
    figure = next((g for g in m.groups() if g and g[0].isdigit()), "")
    if figure:  # a number: compare it with the customer's amounts
        limit = _number(figure)
        rest = around[:m.start()] + " " * len(m.group()) + around[m.end():]
        own = _has(around, cues.CUSTOMER_OWN)
        for a in _AMOUNT.finditer(rest):
            value = _number(a.group(1))
            if value < limit and own:
                return "unmet", f"{cue} … {a.group(1)}"
            if value >= limit and own:
                return None
    return "conditional", cue


def _mood(text: str, start: int, end: int, c_lo: int, c_hi: int, tokens: tuple[Token, ...],
          after: tuple[Token, ...], condition: str, for_fact: bool) -> tuple[str, str]:
    """For a hit no negator reaches: is it said in the reply's own voice, now and
    unconditionally? (kind, cue) when not, ("", "") when it is."""
    lo, hi = max(c_lo, start - NEAR), min(c_hi, end + NEAR)  # the clause near the hit
    clause = text[lo:hi]
    nxt = _next_clauses(text, c_hi)
    both = tokens + after
    for kind, word, _, _ in both:
        if kind == PAST:
            return "past", word
        if kind == FSTART:
            return "not_yet", word
    for kind, word, _, _ in both:
        if kind == FUTURE:
            return "future", word
    general = next((t[1] for t in tokens if t[0] == GENERAL), "")
    if general:
        lead = nxt.lstrip(" ,;:.!?。—")
        if lead.startswith(("但", "不過", "不过", "可是", "只是", "however", "but")):
            toks = _tokens(lead[:NEAR])
            if any(t[0] in (NEG, CLAUSAL) for t in toks):
                return "taken_back", general
        # a contrast anywhere in the next window (…; however, for this order it will take
        # 10; 但這個商品是海外調貨): the rule may not hold for this case
        contrast = _has(nxt, _CONTRAST_WORDS) if for_fact else ""
        if contrast:
            return "conditional", f"{general} … {contrast.strip()}"
    if for_fact:  # 本店提供免費退貨，但特價品除外: this customer's case may be the exception
        lead = nxt.lstrip(" ,;:.!?。—")
        if lead.startswith(("但", "不過", "不过", "可是", "只是", "however", "but")):
            exception = _has(lead, cues.EXCEPTION)
            if exception:
                return "conditional", f"{lead.split()[0][:2]} … {exception}"
    cond_text = text[lo:start]
    prev = _previous_clause(text, c_lo)
    if not condition:
        condition, cond_text = _condition_before(prev, not for_fact)
    if not condition and for_fact:
        condition, cond_text = _fact_condition_before(prev)
    if condition:
        unmet = _has(nxt, cues.UNMET)
        if unmet:
            return "unmet", f"{condition} … {unmet}"
        if not _offers(clause):
            return "conditional", condition
        if not for_fact:
            return "conditional_offer", condition
        # for a fact, an offer on a condition is a policy the reply states (如果商品有瑕疵，
        # 我們會全額退款), unless the condition is still pending, a class the customer may not
        # be in, or (2.3.1) something the customer has still to do (要是您明天完成匯款，…;
        # if you upload the form today, …; provided that you return it…)
        pending = _has(condition + " " + cond_text, _PENDING)
        if not pending:
            m = _CUSTOMER_DOES.search(cond_text)
            pending = m.group() if m else ""
        if not pending and condition in _EVENT_WORDS:  # 付款完成後，我們會立即出貨: not yet
            pending = "an event still to come"
        if pending:
            return "conditional_offer", f"{condition} … {pending}"
    elif for_fact and (_offers(text[lo:end]) or _has(text[lo:hi], _TIER_LINK)):
        # 金卡會員可享免年費, available to Platinum cardholders: if the customer is one
        tier = _has(text[lo:hi], cues.TIER)
        if tier and not _has(text[lo:start], _TIER_MET):
            return "conditional_offer", tier
    threshold = _AMOUNT_OVER.search(text, lo, start)
    if threshold:
        unmet = _has(nxt, cues.UNMET)
        if unmet:
            return "unmet", unmet
    if for_fact:
        rule = _threshold(text, start, end, lo, hi, prev, nxt)
        if rule:
            return rule
        # a deadline still to keep (預計週五前完成退款, will be processed by Friday); a date
        # given (預計 3/1 送達, will arrive tomorrow) is the reply's own statement
        expect = (_has(text[lo:start], cues.EXPECT_ZH + _WILL_ZH) if _DEADLINE_ZH.search(
            text, lo, hi) else "") or (
            _DEADLINE_EN.search(text, lo, hi) if _WILL_EN.search(text, lo, hi) else None)
        if expect:
            return "future", expect if isinstance(expect, str) else expect.group()
        # someone else's word: not the reply's own (我們跟物流說了 is what we did)
        said = next((t[1] for t in tokens if t[0] == HEARSAY
                     and not _FIRST_PERSON.search(text, max(c_lo, c_lo + t[2] - 12), c_lo + t[2])),
                    "")
        if not said and prev and _has(prev, _HEARSAY):
            said = next((t[1] for t in _tokens(prev) if t[0] == HEARSAY
                         and not _FIRST_PERSON.search(prev, max(0, t[2] - 12), t[2])), "")
        if said:
            return "reported", said
        shown = next((t[1] for t in tokens if t[0] == SHOWS), "")
        doubt = _has(text[end:hi] + " " + nxt, cues.DOUBT) if shown else ""
        if doubt:
            return "reported", f"{shown} … {doubt}"
    return "", ""


def classify(text: str, start: int, end: int, *, input_text: str = "",
             echo_questions_only: bool = False, source: Mapped | None = None) -> Occurrence:
    """Classify the hit ``text[start:end]`` (normalised text) by how its clause uses it.

    ``input_text`` (the normalised work order) enables the quoted-from-input rule: any
    stretch of at least 4 more characters copied from it is quoted; with
    ``echo_questions_only`` (facts) only a copy of the customer's question in the customer's
    voice is, since a reply is meant to repeat the work order's facts.
    """
    c_lo, c_hi = _clause_bounds(text, start, end)
    # a sentence contains its clause: search for its ends outside the clause only
    s_lo, _ = _clause_bounds(text, c_lo, c_lo, sentence=True, within=(0, c_lo))
    _, s_hi = _clause_bounds(text, c_hi, c_hi, sentence=True, within=(c_hi, len(text)))
    # the evidence quotes the reply as written (``source``: the text before normalising)
    sentence = source.marked(s_lo, start, end, s_hi) if source is not None else (
        text[s_lo:start] + "«" + text[start:end] + "»" + text[end:s_hi]).strip()

    def occ(kind: Kind, cue: str = "") -> Occurrence:
        return Occurrence(kind, start, end, cue, sentence)

    def asked(kind: Kind, cue: str, after: int) -> Occurrence:
        yes = _answered_yes(text, after)
        return occ("answered", f"{cue}, then '{yes}'") if yes else occ(kind, cue)

    def quoted(cue: str, after: int) -> Occurrence:
        comment = text[after:min(s_hi, after + NEAR)]
        strong = _has(comment, cues.AFFIRM_STRONG)  # 您說…，這點我們確實有提供: a yes of its own
        if strong:
            i = comment.find(strong)
            lo, hi = _clause_bounds(comment, i, i + len(strong))
            if not any(t[0] in (NEG, CLAUSAL, PARTIAL) for t in _tokens(comment[lo:hi])):
                return occ("asserted", f"{cue}, then '{strong}'")
        found = asked("quoted", cue, after)
        # for a forbidden claim, the sentence must go on to deny, contrast or limit it (for a
        # fact a quotation never counts, which is already the safe side)
        if found.kind == "quoted" and not echo_questions_only and not _comment_denies(
                text[after:s_hi]):
            return occ("unclear", f"{cue}, and the rest of the sentence does not deny it")
        return found

    q_end = _quote_end(text[s_lo:s_hi], start - s_lo, end - s_lo)
    if q_end >= 0:
        return quoted("quotation marks", s_lo + q_end + 1)
    copied = _copied_stretch(text, start, end, input_text)
    if copied and (not echo_questions_only
                   or _echoes_question(text[copied[0]:copied[1]], input_text)):
        return quoted("words copied from the work order", copied[1])

    prefix, suffix = text[c_lo:start], text[end:c_hi]
    tokens = _tokens(prefix)
    after = _suffix_negators(suffix, _tokens(suffix)) if suffix else []

    def question(cue: str, negs: list[Token]) -> Occurrence:
        q_end = text.find("?", c_hi, c_hi + NEAR)
        after_q = q_end + 1 if q_end >= 0 else c_hi
        # a negated question asserts more often than it asks (我們不是有提供…嗎？, why
        # wouldn't we…?, 怎麼可能不…？): a person reads it; answered yes, it affirms (誰說不行？
        # 當然可以)
        if negs:
            yes = _answered_yes(text, after_q)
            if yes:
                return occ("asserted", f"a rhetorical question, then '{yes}'")
            return occ("unclear", f"{cue} with {' … '.join(t[1] for t in negs)} "
                                  "(a negated or rhetorical question)")
        # a question that offers it (退到信用卡，還是轉購物金？; would you like…?) presupposes it
        question_text = text[max(c_lo, start - NEAR):q_end if q_end >= 0 else min(
            c_hi, end + NEAR)]
        offer = _has(question_text, _ASKED_OFFER)
        if offer:
            yes = _answered_yes(text, after_q)
            if yes:
                return occ("asserted", f"offered in a question ('{offer.strip()}'), then '{yes}'")
            return occ("offered", f"offered in a question ('{offer.strip()}')")
        return asked("interrogative", cue, c_hi)

    # a question or condition before the hit reaches it unless a contrast, coordination or
    # consequence intervenes; a cue closed by 的 (您詢問的商品) modifies a noun instead
    condition = ""  # the hit is the consequent of this condition (若是會員可以…, 一旦…就…)
    for i, (kind, word, w_start, w_end) in enumerate(reversed(tokens)):
        if kind in (BREAK, COORD):
            # 一旦完成掛失就會鎖卡, 只要審核通過就會撥款: a consequence of a condition
            if word in ("就", "便", "則", "则", "才", "也", "then"):
                condition = next((t[1] for t in tokens[:len(tokens) - 1 - i]
                                  if t[0] in (HYPO, SUFFICIENT)), "")
            break
        if kind == SUFFICIENT:
            modal = _consequent(prefix + text[start:end], w_end)
            if modal >= 0:
                prefix = prefix[modal:]
                tokens = _tokens(prefix)
                condition = word
            break
        if kind in (ASK, HYPO, REPORT) and not prefix.startswith(("的", "地"), w_end) and not (
                kind == ASK and prefix[:w_start].rstrip().endswith(cues.CONCESSIVE)):
            if kind == HYPO:
                modal = _consequent(prefix + text[start:end], w_end)  # the hit may open with it
                if modal < 0:
                    return occ("hypothetical", word)
                # 若是會員可以貨到付款: the hit is the consequent, offered on a condition; the
                # condition's own negators (只要未拆封都可以退貨) do not reach it
                prefix = prefix[modal:]
                tokens = _tokens(prefix)
                condition = word
                break
            if kind == REPORT:
                return quoted(word, end)
            inner = prefix[w_end:]  # only negators inside the question: 沒有提到是否有… asks
            return question(word, _prefix_negators(inner, _tokens(inner)) + after)
    for word in cues.QUESTION_SUFFIX:
        if word in suffix:
            return question(word, _prefix_negators(prefix, tokens) + after)
    if text[c_hi : c_hi + 1] == "?":
        return question("?", _prefix_negators(prefix, tokens) + after)
    for word in cues.HYPOTHETICAL_SUFFIX:
        if word in suffix:
            return occ("hypothetical", word)
    if suffix.strip() in cues.TOPIC_SUFFIX_ZH and text[c_hi:c_hi + 1] == "," and (
            _comment_denies(text[c_hi:s_hi])):
        return occ("quoted", suffix.strip())  # 貨到付款的部分，很抱歉沒有辦法提供
    excepted = _excepted(prefix, tokens, suffix) if (
        "外" in suffix[:3] or _EXCEPT_WORD.search(prefix)) else ""
    if excepted:
        return occ("unclear", f"{excepted} (an excepted item: negated or offered?)")

    suffix_tokens = _tokens(suffix) if suffix else ()
    negators = _prefix_negators(prefix, tokens) + after
    if text.rfind("\n", 0, c_lo) >= 0:
        negators = _list_head(text, c_lo) + negators
    if not negators:
        inherited = _inherited(text, c_lo, c_hi, prefix, suffix)
        if inherited:
            return occ("negated", f"{inherited} (the clause before is negated)")
    copula = [t[1] for t in negators if t[0] == COPULA]
    if copula:
        return occ("unclear", f"{copula[0]} after the hit (what is it not?)")
    if not negators:
        mood, why = _mood(text, start, end, c_lo, c_hi, tokens, suffix_tokens, condition,
                          echo_questions_only)
        if mood:
            return occ(mood, why)  # type: ignore[arg-type]
        hedge = _hedge(tokens, prefix) or _has(suffix[:NEAR], cues.SUFFIX_HEDGE_EN)
        return occ("hedged", hedge) if hedge else occ("asserted")
    partial = [t[1] for t in negators if t[0] == PARTIAL]
    if partial:
        return occ("unclear", f"{partial[0]} (true of some, not all)")
    if len(negators) >= 2:
        # 不是不能退，只是需要先寄回: "only" after a double negation says the claim stands
        only = _next_clauses(text, c_hi).lstrip(" ")
        if only.startswith(cues.ONLY_AFTER):
            return occ("asserted", f"{' … '.join(t[1] for t in negators)}, then "
                                   f"'{only.split()[0][:3]}'")
        return occ("double_negation", " … ".join(t[1] for t in negators))
    return occ("negated", negators[0][1])


# -- bounded reading (issue 31) ------------------------------------------------------------
# A reply of one unbroken 200,000-character sentence made every hit re-read the whole sentence
# (its cues, its quotes, its list head): grading one question took minutes. A hit is read
# within WINDOW characters on each side; a sentence that runs past them was not read whole.
WINDOW = 200
_ANSWER = 64  # _answered_yes reads 60 characters past a question: keep them inside the view
_WHOLE = 500  # a reply up to this long is read whole for every hit (the bench's are)
# a forbidden hit read as one of these fails (graders/checks.py reads this set): any other
# kind, cut short, could read otherwise in the part not read
FORBIDDEN_FAILS = frozenset({"asserted", "hedged", "conditional_offer"})


def read_hit(text: str, start: int, end: int, *, input_text: str = "",
             echo_questions_only: bool = False, source: Mapped | None = None) -> Occurrence:
    """``classify`` on the ``WINDOW`` characters each side of the hit (on the whole reply up to
    ``_WHOLE`` characters): the same answer for a hit whose clause fits in them, bounded work
    for any other. When the sentence (or the list the
    hit is an item of) runs past the window, what was not read could change the reading, so it
    cannot pass: a fact asserted there, or a forbidden hit negated, asked or quoted there, is
    ``unclear`` and a person reads it; a forbidden hit asserted in what was read still fails.
    (The clause is what negators reach; the sentence counts when it holds quotation marks.)"""
    if len(text) <= _WHOLE:  # a reply this short is read whole: bounded, and as before
        return classify(text, start, end, input_text=input_text,
                        echo_questions_only=echo_questions_only, source=source)
    lo, hi = max(0, start - WINDOW), min(len(text), end + WINDOW + _ANSWER)
    if lo == 0 and hi == len(text):
        return classify(text, start, end, input_text=input_text,
                        echo_questions_only=echo_questions_only, source=source)
    view = text[lo:hi]
    occ, cut, (s_lo, s_hi) = _read_view(view, start - lo, end - lo, input_text,
                                        echo_questions_only, lo > 0, hi < len(text))
    if source is not None:  # the evidence quotes the reply as written, as classify's does
        occ = Occurrence(occ.kind, start, end, occ.cue,
                         ("…" if lo > 0 and s_lo == 0 else "")
                         + source.marked(lo + s_lo, start, end, lo + s_hi)
                         + ("…" if hi < len(text) and s_hi == len(view) else ""))
    kind, cue = occ.kind, occ.cue
    if cut and (kind == "asserted" if echo_questions_only else kind not in FORBIDDEN_FAILS):
        kind, cue = "unclear", (f"{kind}{' by ' + repr(cue) if cue else ''} in a clause longer "
                                f"than the {WINDOW} characters read on each side of the hit")
    return Occurrence(kind, start, end, cue, occ.sentence)


@lru_cache(maxsize=1024)
def _read_view(view: str, start: int, end: int, input_text: str, echo_questions_only: bool,
               cut_before: bool, cut_after: bool
               ) -> tuple[Occurrence, bool, tuple[int, int]]:
    """classify() on a view of the reply, and whether the hit's sentence (or list) reaches a
    side of the view that is not the reply's. Cached: a flood of one phrase repeats its views."""
    occ = classify(view, start, end, input_text=input_text,
                   echo_questions_only=echo_questions_only)
    c_lo, c_hi = _clause_bounds(view, start, end)
    s_lo, _ = _clause_bounds(view, c_lo, c_lo, sentence=True, within=(0, c_lo))
    _, s_hi = _clause_bounds(view, c_hi, c_hi, sentence=True, within=(c_hi, len(view)))
    # the negators' scope is the clause; the sentence matters for quotation marks
    quoted = _QUOTE_RE.search(view) is not None
    before = cut_before and (c_lo == 0 or (quoted and s_lo == 0) or _list_reaches_top(view, c_lo))
    after = cut_after and (c_hi > len(view) - _ANSWER or (quoted and s_hi > len(view) - _ANSWER))
    sentence = (("…" if cut_before and s_lo == 0 else "") + occ.sentence
                + ("…" if cut_after and s_hi == len(view) else ""))
    return Occurrence(occ.kind, start, end, occ.cue, sentence), before or after, (s_lo, s_hi)


def _list_reaches_top(view: str, c_lo: int) -> bool:
    """Whether the hit opens a list item (as ``_list_head`` reads one) whose items go on up to
    the top of the view, so the head they hang from (以下均不支援：) may be above it, unread."""
    hi = view.rfind("\n", 0, c_lo)
    line_end = view.find("\n", hi + 1)
    if hi < 0 or view[hi + 1 : c_lo].strip() and not _ITEM.fullmatch(view[hi + 1 : c_lo].rstrip()):
        return False
    if not _ITEM.match(view, hi + 1, line_end if line_end >= 0 else len(view)):
        return False
    while True:
        lo = view.rfind("\n", 0, hi) + 1
        if hi <= 0 or lo == 0:
            return True  # the line above begins above the view
        line = view[lo:hi].rstrip()
        if line.endswith(":") or not _ITEM.match(line):
            return False
        hi = lo - 1
