"""The registry of check kinds: how a bank's keys become a check the grader runs.

Every check is a ``CheckKind``, the built-in ones too (registered at the bottom of
graders/checks.py, in the order their results appear): the bank reads its keys, its JSON
Schema and "nothing to grade" from ``KINDS``, the grader runs each kind in turn, and
``RULE_VERSIONS`` holds each kind's rule version (review decisions and the grade cache follow
it). Like promptfoo's assertion registry or inspect_ai's ``@scorer``: the built-ins are
registered the way a new kind is, and nothing else lists them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graders.model import CheckResult, FieldSpec, Question, Reply, ToolExpectation
from graders.normalize import Mapped
from graders.patterns import Entry, PatternError, parse_entry

RULE_VERSIONS: dict[str, int] = {}  # every registered kind's rule → its version
ABSENT = object()  # a question without the kind's key


class KeyProblems(ValueError):
    """A kind's keys cannot be read: each problem as (where under the question, message),
    e.g. ``("expect_facts[0]", "invalid regex ...")``; the bank names the file and question."""

    def __init__(self, problems: Iterable[tuple[str, str]]):
        self.problems = list(problems)
        super().__init__("; ".join(f"{where}: {message}" for where, message in self.problems))


@dataclass(slots=True)
class Cell:
    """What every check of one reply reads (``grade`` makes one per reply)."""

    question: Question
    reply: Reply
    text: str  # the reply's text normalised (NFKC, casefold, white space; folded unless off)
    source: Mapped | None  # the offset map evidence quotes the reply as written through
    reading: Any  # checks.Budget: the occurrences the scope model may still read in this cell
    budget: Mapping[str, float]  # the agent's budget (the question's overrides it key by key)


def _same(value: Any) -> Any:
    return value


def _always(value: Any) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class CheckKind:
    """A kind of check: the bank accepts its ``key`` (validated against ``schema``; ``also``:
    further keys it reads, with theirs), the grader runs ``check`` on every question that has
    it, and ``RULE_VERSIONS`` carries its ``rule`` at ``version`` (bump it when the check's
    behaviour changes: a review decision made under another version is dropped)."""

    key: str  # the question's key in a bank file, e.g. "expect_language"
    rule: str  # its CheckResults are named rule or rule[i]; review decisions follow its version
    version: int
    schema: Mapping[str, Any]  # JSON Schema of the key's value
    # (the parsed value, the cell: its reply, normalised text, question) → results
    check: Callable[[Any, Cell], Iterable[CheckResult]]
    # the key's value → what ``check`` gets; a ValueError is a bank problem at that key
    parse: Callable[[Any], Any] = _same
    # -- what the built-in kinds need besides ------------------------------------------
    also: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # key → JSON Schema
    # (the question's keys, fold_script) → the value, for a kind of several keys or one read
    # as the bank folds; raises KeyProblems. None: ``parse`` of the key's value
    read: Callable[[Mapping[str, Any], bool], Any] | None = None
    attribute: str = ""  # the ``Question`` field holding the value ("": registered_checks)
    # the value grades something; None: never on its own (a budget alone is not a rubric)
    grades: Callable[[Any], bool] | None = _always
    named: str = ""  # how "nothing to grade" names it ("a graded field"; "": the key)
    last: bool = False  # its results come after every other kind's (the budget's)

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.also)

    def value_in(self, raw: Mapping[str, Any], fold: bool) -> Any:
        """The value a bank question gives this kind (``ABSENT`` when it has none of its
        keys); KeyProblems or ValueError when it cannot be read."""
        if self.read is not None:
            return self.read(raw, fold)
        return self.parse(raw[self.key]) if self.key in raw else ABSENT

    def value_of(self, question: Question) -> Any:
        """The value the question holds for this kind (``ABSENT``: none)."""
        if self.attribute:
            return getattr(question, self.attribute)
        return question.registered_checks.get(self.key, ABSENT)


KINDS: dict[str, CheckKind] = {}  # by bank key, in the order they were registered
_ordered: list[CheckKind] = []
# what the grader reads of each kind, in its order: (Question field or "", bank key, check)
_plan: list[tuple[str, str, Callable[[Any, Cell], Iterable[CheckResult]]]] = []


def register(kind: CheckKind) -> CheckKind:
    """Add (or replace) a check kind. Register it in graders/checks.py (imported by every
    process, the parallel re-grade's too), so every process grades alike."""
    KINDS[kind.key] = kind
    RULE_VERSIONS[kind.rule] = kind.version
    _order()
    return kind


def unregister(key: str) -> None:
    kind = KINDS.pop(key, None)
    if kind is not None:
        RULE_VERSIONS.pop(kind.rule, None)
        _order()


def _order() -> None:
    _ordered[:] = [k for k in KINDS.values() if not k.last] + [k for k in KINDS.values() if k.last]
    _plan[:] = [(k.attribute, k.key, k.check) for k in _ordered]


def ordered() -> list[CheckKind]:
    """The kinds in the order the grader runs them: as registered, those marked ``last``
    at the end."""
    return _ordered


def plan() -> list[tuple[str, str, Callable[[Any, Cell], Iterable[CheckResult]]]]:
    """``ordered()`` as the grader reads it, once per reply: (the ``Question`` field holding
    the value, or "" for ``registered_checks``; the bank key; the check)."""
    return _plan


def bank_keys() -> tuple[str, ...]:
    """Every bank key a registered kind reads."""
    return tuple(key for kind in KINDS.values() for key in kind.keys)


def unknown_keys(obj: Mapping[str, object], known: Iterable[str]) -> list[tuple[str, str]]:
    """(key, message) for every key not in ``known``, with a did-you-mean when one is close."""
    known = tuple(known)
    out = []
    for key in obj:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6) or [
                k for k in known if k.startswith(str(key)) or str(key).startswith(k)][:1]
            hint = f" (did you mean {near[0]!r}?)" if near else f" (known keys: {', '.join(known)})"
            out.append((key, f"unknown key {key!r}{hint}"))
    return out


# -- reading the built-in kinds' keys (graders/checks.py registers them) ---------------------

PATTERNS_SCHEMA: Mapping[str, Any] = {"type": "array", "items": {"type": "string"}}
FIELD_KEYS = ("mode", "values", "keywords", "note")


def patterns(raw: Any, where: str, fold: bool, problems: list[tuple[str, str]]
             ) -> tuple[Entry, ...]:
    """A list of ``a|b|re:...`` entries; each one that does not parse is a problem at
    ``where[i]`` (what is not a list of strings the schema has reported)."""
    entries = []
    if not isinstance(raw, list):
        return ()
    for i, pattern in enumerate(raw):
        if not isinstance(pattern, str):
            continue
        try:
            entries.append(parse_entry(pattern, fold=fold))
        except PatternError as exc:
            problems.append((f"{where}[{i}]", str(exc)))
    return tuple(entries)


def _raise(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise KeyProblems(problems)


def pattern_reader(key: str) -> Callable[[Mapping[str, Any], bool], tuple[Entry, ...]]:
    """The reader of a key holding patterns, matched as the bank folds."""

    def read(raw: Mapping[str, Any], fold: bool) -> tuple[Entry, ...]:
        problems: list[tuple[str, str]] = []
        entries = patterns(raw.get(key, []), key, fold, problems)
        _raise(problems)
        return entries

    return read


def read_fields(raw: Mapping[str, Any], fold: bool) -> tuple[FieldSpec, ...]:
    problems: list[tuple[str, str]] = []
    specs = []
    for path, spec in raw.get("fields", {}).items():
        where = f"fields.{path}"
        for key, msg in unknown_keys(spec, FIELD_KEYS):
            problems.append((f"{where}.{key}", msg))
        mode = spec["mode"]
        if mode == "exact_set" and "values" not in spec:
            problems.append((where, "mode exact_set needs 'values' (the exact set expected)"))
        if mode == "must_include" and "keywords" not in spec:
            problems.append((where, "mode must_include needs 'keywords' ([] means: any "
                                    "non-empty value)"))
        specs.append(FieldSpec(path, mode, tuple(spec.get("values", ())),
                               tuple(spec.get("keywords", ())), spec.get("note", "")))
    _raise(problems)
    return tuple(specs)


def read_tools(raw: Mapping[str, Any], fold: bool) -> ToolExpectation:
    """Tool names are matched unfolded: a tool is named as its code names it."""
    problems: list[tuple[str, str]] = []
    expect = patterns(raw.get("expect_tools", []), "expect_tools", False, problems)
    forbidden = patterns(raw.get("forbidden_tools", []), "forbidden_tools", False, problems)
    _raise(problems)
    args = {t: {a: tuple(v) for a, v in spec.items()}
            for t, spec in raw.get("tool_args", {}).items()}
    return ToolExpectation(expect, forbidden, args, raw.get("max_steps"))


def budget_reader(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any], bool], dict[str, float]]:
    def read(raw: Mapping[str, Any], fold: bool) -> dict[str, float]:
        budget = raw.get("budget", {})
        _raise([(f"budget.{key}", msg) for key, msg in unknown_keys(budget, keys)])
        return {k: v for k, v in budget.items() if k in keys}

    return read
