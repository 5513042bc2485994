"""One function per kind of check; each returns a CheckResult with its evidence.

Every kind is registered at the bottom (``register(CheckKind(...))``, graders/kinds.py), the
built-in ones too: the bank's keys and schema, the grader and the rule versions read the
registry. A new kind of check is a function here and its registration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graders.kinds import (
    PATTERNS_SCHEMA,
    Cell,
    CheckKind,
    budget_reader,
    pattern_reader,
    read_fields,
    read_tools,
    register,
)
from graders.model import BUDGET_KEYS, CheckResult, FieldSpec, Reply
from graders.negation import AMBIGUOUS, FORBIDDEN_FAILS, Occurrence, read_hit
from graders.normalize import Mapped, normalize, normalize_short
from graders.patterns import Entry, Match, find_all
from graders.trajectory import check_tools

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

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


# -- the built-in kinds, in the order their results appear in a grade ------------------------
# Bump a kind's version when its behaviour changes: a reviewer's decision on that check
# (issue 9) is dropped when the rule it was made under changes, and the grade cache is keyed
# by every rule's version.
# fact/forbidden 4, field 2, tools 2, numbers_grounded 2 (issue 31): folding on by default,
# whole-word literals, assertion rules; regexes on RE2, each hit read within a window, at most
# MAX_OCCURRENCES per check and CELL_OCCURRENCES per cell, stray numbers listed ten at a time;
# fact/forbidden 5: thresholds, tiers, conditions and events before the hit, deadlines, English
# modal hedges, contrasts after a general rule, more word boundaries (2.3.1)

def _status(expected: str | None, cell: Cell) -> Iterable[CheckResult]:
    return () if expected is None else (check_status(expected, cell.reply),)


def _facts(entries: tuple[Entry, ...], cell: Cell) -> list[CheckResult]:
    return [check_fact(f"fact[{i}]", entry, cell.text, cell.question.input_text, cell.reading,
                       source=cell.source) for i, entry in enumerate(entries)]


def _forbidden(entries: tuple[Entry, ...], cell: Cell) -> list[CheckResult]:
    return [check_forbidden(f"forbidden[{i}]", entry, cell.text, cell.question.input_text,
                            cell.reading, source=cell.source) for i, entry in enumerate(entries)]


def _fields(specs: tuple[FieldSpec, ...], cell: Cell) -> list[CheckResult]:
    return [check_field(spec, cell.reply, fold=cell.question.fold_script) for spec in specs]


def _numbers(on: bool, cell: Cell) -> Iterable[CheckResult]:
    return (check_numbers_grounded(cell.text, cell.question.input_text),) if on else ()


def _tools(spec: Any, cell: Cell) -> Iterable[CheckResult]:
    return check_tools(spec, cell.reply) if spec else ()


def _budget(budget: Mapping[str, float], cell: Cell) -> Iterable[CheckResult]:
    return check_budget({**cell.budget, **budget}, cell.reply)


FIELD_SCHEMA = {
    "type": "object", "required": ["mode"],
    "properties": {
        "mode": {"enum": ["exact_set", "must_include", "ignore"]},
        "values": {"type": "array", "items": {"type": "string"}},
        "keywords": {"type": "array", "items": {"type": "string"}},
        "note": {"type": "string"},
    },
}
BUDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "attempts": {"type": "integer", "minimum": 1},
        "model_calls": {"type": "integer", "minimum": 0},
        "tokens": {"type": "integer", "minimum": 0},
        "latency_ms": {"type": "number", "exclusiveMinimum": 0},
    },
}

register(CheckKind(key="expect_status", rule="status", version=1, attribute="expect_status",
                   schema={"type": "string", "minLength": 1}, check=_status,
                   read=lambda raw, fold: raw.get("expect_status"),
                   grades=lambda value: value is not None))
register(CheckKind(key="expect_facts", rule="fact", version=5, attribute="facts",
                   schema=PATTERNS_SCHEMA, check=_facts, read=pattern_reader("expect_facts"),
                   grades=bool))
register(CheckKind(key="expect_forbidden", rule="forbidden", version=5, attribute="forbidden",
                   schema=PATTERNS_SCHEMA, check=_forbidden,
                   read=pattern_reader("expect_forbidden"), grades=bool))
register(CheckKind(key="fields", rule="field", version=2, attribute="fields",
                   schema={"type": "object", "additionalProperties": FIELD_SCHEMA},
                   check=_fields, read=read_fields, named="a graded field",
                   grades=lambda specs: any(s.mode != "ignore" for s in specs)))
register(CheckKind(key="numbers_grounded", rule="numbers_grounded", version=2,
                   attribute="numbers_grounded", schema={"type": "boolean"}, check=_numbers,
                   read=lambda raw, fold: bool(raw.get("numbers_grounded", False)), grades=bool))
register(CheckKind(key="expect_tools", rule="tools", version=2, attribute="tools",
                   schema=PATTERNS_SCHEMA, check=_tools, read=read_tools,
                   named="a tool expectation", grades=bool, also={
                       "forbidden_tools": PATTERNS_SCHEMA,
                       "tool_args": {"type": "object", "additionalProperties": {
                           "type": "object", "additionalProperties": {
                               "type": "array", "items": {"type": "string"}, "minItems": 1}}},
                       "max_steps": {"type": "integer", "minimum": 0},
                   }))
register(CheckKind(key="budget", rule="budget", version=2, attribute="budget",
                   schema=BUDGET_SCHEMA, check=_budget, read=budget_reader(BUDGET_KEYS),
                   grades=None, last=True))
