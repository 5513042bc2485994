"""One function per kind of check; each returns a CheckResult with its evidence.

A new kind of check is a function here plus ``register(CheckKind(...))`` at the bottom: the
bank's schema and keys, the grader and the rule versions read the registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graders.model import CheckResult, FieldSpec, Question, Reply
from graders.negation import AMBIGUOUS, FORBIDDEN_FAILS, Occurrence, read_hit
from graders.normalize import Mapped, normalize, normalize_short
from graders.patterns import Entry, Match, find_all

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

# Bump the rule of a check kind when its behaviour changes: a reviewer's decision on
# that check (issue 9) is dropped when the rule it was made under changes, and the grade
# cache is keyed by every entry. A registered kind (below) adds its own.
# fact/forbidden 4, field 2, tools 2, numbers_grounded 2 (issue 31): folding on by default,
# whole-word literals, assertion rules; regexes on RE2, each hit read within a window, at most
# MAX_OCCURRENCES per check and CELL_OCCURRENCES per cell, stray numbers listed ten at a time;
# fact/forbidden 5: thresholds, tiers, conditions and events before the hit, deadlines, English
# modal hedges, contrasts after a general rule, more word boundaries (2.3.1)
RULE_VERSIONS: dict[str, int] = {
    "fact": 5, "forbidden": 5, "status": 1, "field": 2, "numbers_grounded": 2, "budget": 2,
    "tools": 2,
}


# How an occurrence counts, by its kind (graders/negation.py), for a fact and a forbidden
# phrase. A fact passes only when asserted in the reply's own voice, now, unconditionally;
# what is not is a fail when the reply makes clear it does not hold, else a person reads it.
FACT_FAILS = frozenset({"negated", "interrogative", "quoted", "past", "not_yet", "unmet",
                        "taken_back"})
# A forbidden thing fails when claimed, hedged or offered on a condition (negation's
# FORBIDDEN_FAILS, which the bounded reading reads too); said of a time to come, offered in a
# question or ambiguous, a person reads it; otherwise it passes.
FORBIDDEN_HUMAN = AMBIGUOUS | {"future", "not_yet", "offered"}


# What one reply may cost (issue 31), counted rather than timed so a replay grades alike: a
# check reads at most MAX_OCCURRENCES hits, a cell (every check of a question) CELL_OCCURRENCES,
# each within negation.WINDOW characters. What is left unread goes to a person, never passes.
MAX_OCCURRENCES = 32
CELL_OCCURRENCES = 128
NOTHING = Occurrence("unclear", 0, 0)  # stands for the occurrences left unread


@dataclass(slots=True)
class Budget:
    """What is left of one cell's reading: occurrences classified (``grade`` makes one)."""

    occurrences: int = CELL_OCCURRENCES


def _read(found: list[Match], text: str, budget: Budget | None,
          **kw: Any) -> Iterator[tuple[Occurrence, str]]:
    """The hits ``found`` (``find_all`` with ``limit=MAX_OCCURRENCES + 1``) read in reply order,
    lazily, with "" or why the rest went unread (the check's own limit or the cell's budget)."""
    budget = budget if budget is not None else Budget()
    for i, m in enumerate(found):
        if i == MAX_OCCURRENCES:
            yield NOTHING, (f"more than {MAX_OCCURRENCES} occurrences: the first "
                         f"{MAX_OCCURRENCES} were read and decided nothing, a person reads the rest")
            return
        if budget.occurrences <= 0:
            yield NOTHING, (f"the cell's grading budget ({CELL_OCCURRENCES} occurrences read) ran out "
                         f"after {i} of this check's: a person reads the rest")
            return
        budget.occurrences -= 1
        yield read_hit(text, m.start, m.end, **kw), ""


def check_fact(name: str, entry: Entry, text: str, input_text: str = "",
               budget: Budget | None = None, *, source: Mapped | None = None) -> CheckResult:
    """Must appear, asserted. Negated, asked, quoted, past or taken-back occurrences do not
    count, nor does an echo of the customer's question (``input_text``: the normalised work
    order); hedged, conditional, future or reported ones go to a person."""
    found = find_all(entry, text, limit=MAX_OCCURRENCES + 1)
    if not found:  # most entries, most replies: nothing to read
        return CheckResult(name, "fail", missing=(entry.source,), evidence="not found in the reply")
    seen = []
    for occ, unread in _read(found, text, budget, input_text=input_text,
                             echo_questions_only=True, source=source):
        if unread:
            return CheckResult(name, "needs_human", evidence=unread)
        if occ.kind == "asserted":
            return CheckResult(name, "pass", evidence=occ.sentence)
        seen.append(occ)
    unclear = [o for o in seen if o.kind not in FACT_FAILS]
    if unclear:
        return CheckResult(
            name, "needs_human", evidence="only unclear occurrences: " + unclear[0].describe()
        )
    if seen:
        return CheckResult(
            name, "fail", missing=(entry.source,),
            evidence="occurs only " + "; ".join(o.describe() for o in seen[:3]),
        )
    return CheckResult(name, "fail", missing=(entry.source,), evidence="not found in the reply")


def check_forbidden(name: str, entry: Entry, text: str, input_text: str,
                    budget: Budget | None = None, *, source: Mapped | None = None) -> CheckResult:
    """Must not be asserted. Every occurrence is classified; one asserted (or asserted with a
    hedge: 可能會延誤, or offered on a condition) is enough to fail."""
    found = find_all(entry, text, limit=MAX_OCCURRENCES + 1)
    if not found:
        return CheckResult(name, "pass", evidence="not found")
    occs = []
    for o, unread in _read(found, text, budget, input_text=input_text, source=source):
        if unread:
            return CheckResult(name, "needs_human", evidence=unread)
        if o.kind in FORBIDDEN_FAILS:  # the first one decides: the rest is not read
            how = {"asserted": "asserted", "hedged": f"asserted with a hedge ('{o.cue}')",
                   "conditional_offer": f"offered on a condition ('{o.cue}')"}[o.kind]
            if o.kind == "asserted" and o.cue:
                how = f"asserted ({o.cue})"
            return CheckResult(name, "fail", unexpected=(entry.source,),
                               evidence=f"{how}: {o.sentence}")
        occs.append(o)
    unclear = [o for o in occs if o.kind in FORBIDDEN_HUMAN]
    if unclear:
        return CheckResult(name, "needs_human", evidence=unclear[0].describe())
    if occs:
        return CheckResult(name, "pass", evidence="; ".join(o.describe() for o in occs[:3]))
    return CheckResult(name, "pass", evidence="not found")


def check_status(expected: str, reply: Reply) -> CheckResult:
    if reply.status is None:
        return CheckResult("status", "not_graded", evidence="the reply reports no status")
    if normalize_short(str(reply.status)) == normalize_short(expected):
        return CheckResult("status", "pass", evidence=f"status {reply.status!r}")
    return CheckResult(
        "status", "fail", missing=(expected,), unexpected=(str(reply.status),),
        evidence=f"expected status {expected!r}, the agent reported {reply.status!r}",
    )


def lookup(body: Any, path: str) -> tuple[bool, Any]:
    """Follow a dot path (``usage.total_tokens``, ``items.0.name``): (found, value). The one
    walker of dot paths: field checks here, reply mappings in exam/reading.py."""
    cur = body
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False, None
    return True, cur


def _as_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple | set):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def check_field(spec: FieldSpec, reply: Reply, *, fold: bool = False) -> CheckResult:
    name = f"field.{spec.path}"
    if spec.mode == "ignore":
        return CheckResult(name, "not_graded", evidence=spec.note or "ignored by the bank")
    found, value = lookup(reply.body, spec.path)
    if not found:
        return CheckResult(
            name, "fail", missing=spec.values or spec.keywords,
            evidence=f"the reply has no field {spec.path!r}",
        )
    got = [normalize(v, fold=fold) for v in _as_strings(value)]
    if spec.mode == "exact_set":
        expected = {normalize(v, fold=fold) for v in spec.values}
        gotset = set(got)
        missing = tuple(sorted(expected - gotset))
        unexpected = tuple(sorted(gotset - expected))
        outcome = "fail" if missing or unexpected else "pass"
        return CheckResult(name, outcome, missing, unexpected, evidence=f"{spec.path} = {got}")
    got = [g for g in got if g]
    if not spec.keywords:
        ok = bool(got)
        return CheckResult(
            name, "pass" if ok else "fail", evidence=f"{spec.path} = {got}" if ok else "empty"
        )
    missing = tuple(
        kw for kw in spec.keywords if not any(normalize(kw, fold=fold) in g for g in got)
    )
    return CheckResult(
        name, "fail" if missing else "pass", missing=missing, evidence=f"{spec.path} = {got}"
    )


def canonical_number(raw: str) -> str:
    """'1,200' → '1200', '09' → '9', '2.50' → '2.5': how a number is compared."""
    s = raw.replace(",", "")
    if "." in s:
        whole, frac = s.split(".", 1)
        frac = frac.rstrip("0")
        s = (whole.lstrip("0") or "0") + ("." + frac if frac else "")
    else:
        s = s.lstrip("0") or "0"
    return s


@lru_cache(maxsize=1024)
def numbers_in(text: str) -> frozenset[str]:
    """Canonical numbers in a text; cached because a work order is graded many times."""
    return frozenset(canonical_number(m.group()) for m in _NUMBER.finditer(text))


def check_numbers_grounded(text: str, input_text: str) -> CheckResult:
    """Every number in the reply must occur somewhere in the work order (any field, any key)."""
    grounded = numbers_in(input_text)
    found = _NUMBER.findall(text)
    # each distinct figure once: a reply of 100,000 numbers canonicalises its few distinct ones
    stray = [n for n in dict.fromkeys(found) if canonical_number(n) not in grounded]
    if stray:
        shown = ", ".join(stray[:10]) + (f" … and {len(stray) - 10} more" if len(stray) > 10 else "")
        return CheckResult(
            "numbers_grounded", "fail", unexpected=tuple(stray),
            evidence="numbers not in the work order: " + shown,
        )
    return CheckResult("numbers_grounded", "pass",
                       evidence=f"{len(found)} number(s), all in the work order")


_UNITS = {"attempts": "attempt(s)", "model_calls": "model call(s)", "tokens": "token(s)",
          "latency_ms": "ms"}


def check_budget(budget: Mapping[str, float], reply: Reply) -> Iterable[CheckResult]:
    for key, limit in budget.items():
        name = f"budget.{key}"
        value = getattr(reply, key)
        # an estimate is graded, and says so: n8n counts tokens itself when the provider doesn't
        est = " (estimated)" if key == "tokens" and reply.tokens_estimated else ""
        if value is None:
            yield CheckResult(name, "not_graded", evidence=f"the agent did not report {key}")
        elif key == "tokens" and value == 0 and reply.model_calls != 0:
            # an LLM agent that answered used tokens: a 0 is a placeholder, not a figure
            calls = "unknown" if reply.model_calls is None else f"{reply.model_calls:g}"
            yield CheckResult(name, "needs_human", evidence=f"the agent reported 0 tokens with "
                              f"{calls} model call(s): how does it count them?")
        elif value > limit:
            yield CheckResult(
                name, "fail", unexpected=(f"{value:g}",),
                evidence=f"{value:g} {_UNITS[key]}{est} > budget {limit:g}",
            )
        else:
            yield CheckResult(name, "pass",
                              evidence=f"{value:g} {_UNITS[key]}{est} ≤ budget {limit:g}")


# -- check kinds a bank question turns on by a key of its own ------------------------------

@dataclass(frozen=True, slots=True)
class CheckKind:
    """A kind of check, registered: the bank accepts its ``key`` (validated against
    ``schema``), the grader runs ``check`` on every question that has it, and ``RULE_VERSIONS``
    carries its ``rule`` at ``version`` (bump it when the check's behaviour changes)."""

    key: str  # the question's key in a bank file, e.g. "expect_language"
    rule: str  # its CheckResults are named rule or rule[i]; review decisions follow its version
    version: int
    schema: Mapping[str, Any]  # JSON Schema of the key's value
    # (the parsed value, the reply's normalised text, the reply, the question) → results
    check: Callable[[Any, str, Reply, Question], Iterable[CheckResult]]
    # the key's value → what ``check`` gets; a ValueError is a bank problem at that key
    parse: Callable[[Any], Any] = lambda value: value


KINDS: dict[str, CheckKind] = {}


def register(kind: CheckKind) -> CheckKind:
    """Add (or replace) a check kind. Register it in this module (imported by every process,
    the parallel re-grade's too)."""
    KINDS[kind.key] = kind
    RULE_VERSIONS[kind.rule] = kind.version
    return kind


def unregister(key: str) -> None:
    kind = KINDS.pop(key, None)
    if kind is not None:
        RULE_VERSIONS.pop(kind.rule, None)
