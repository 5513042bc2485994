"""The data the graders work on: a question's expectations, a reply, a check, a grade."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from graders.patterns import Entry

Outcome = Literal["pass", "fail", "needs_human", "not_graded"]
Verdict = Literal["pass", "fail", "needs_human", "not_graded"]
RunStatus = Literal["ok", "timeout", "http_error", "bad_reply", "truncated", "agent_error",
                    "blocked", "harness_error"]
Severity = Literal["critical", "major", "minor"]
FieldMode = Literal["exact_set", "must_include", "ignore"]

# agent_error: the agent answered that it could not answer (its own structured failure report)
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
SEVERITIES: tuple[str, ...] = ("critical", "major", "minor")
# a question's and an agent's budget: the one list the bank, the registry and the grader read
BUDGET_KEYS: tuple[str, ...] = ("attempts", "model_calls", "tokens", "latency_ms")
# the verdicts that are a grade (a reply graded, whatever it scored); not_graded is not one
GRADED: tuple[str, ...] = ("pass", "fail", "needs_human")
# Strictest first: a reply's verdict is the first of these any graded check has.
STRICTNESS: tuple[str, ...] = ("fail", "needs_human", "pass")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """Per-field grading of a structured reply: exact set, must include, or ignore."""

    path: str
    mode: FieldMode
    values: tuple[str, ...] = ()  # exact_set: the set expected
    keywords: tuple[str, ...] = ()  # must_include: each must be contained in some value
    note: str = ""  # ignore: why it is not graded


@dataclass(frozen=True, slots=True)
class ToolExpectation:
    """Which tools a reply's reported steps must and must not show (issue 10)."""

    expect: tuple[Entry, ...] = ()
    forbidden: tuple[Entry, ...] = ()
    args: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    max_steps: int | None = None

    def __bool__(self) -> bool:
        return bool(self.expect or self.forbidden or self.args or self.max_steps is not None)


@dataclass(frozen=True, slots=True)
class Question:
    case_no: str
    input: Mapping[str, Any]
    category: str = ""
    severity: Severity = "major"
    expect_status: str | None = None
    facts: tuple[Entry, ...] = ()
    forbidden: tuple[Entry, ...] = ()
    fields: tuple[FieldSpec, ...] = ()
    numbers_grounded: bool = False
    budget: Mapping[str, float] = field(default_factory=dict)
    tools: ToolExpectation = field(default_factory=ToolExpectation)
    fold_script: bool = True  # Traditional = Simplified, amounts one way (a bank may say false)
    # the values of registered check kinds (graders/checks.py KINDS), by bank key, parsed
    registered_checks: Mapping[str, Any] = field(default_factory=dict)
    # Derived from ``input`` once, by the bank loader (normalised text of every string in it).
    input_text: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """What an agent returned, already read through the agent's reply mapping."""

    text: str | None
    status: str | None = None
    body: Any = None  # the parsed JSON body, for field checks
    steps: tuple[Step, ...] | None = None  # None: the agent reports no steps
    attempts: int | None = None
    model_calls: int | None = None
    tokens: int | None = None
    latency_ms: float | None = None
    run_status: RunStatus = "ok"
    tokens_estimated: bool = False  # tokens are an estimate (n8n's, with the Responses API)


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str  # "fact[0]", "forbidden[1]", "budget.tokens"
    outcome: Outcome
    missing: tuple[str, ...] = ()  # expected, not found   ("- ...")
    unexpected: tuple[str, ...] = ()  # found, not allowed ("+ ...")
    evidence: str = ""  # the sentence or figure that decided it

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome,
            "evidence": self.evidence,
            "missing": list(self.missing),
            "unexpected": list(self.unexpected),
        }


@dataclass(frozen=True, slots=True)
class Grade:
    case_no: str
    run_status: RunStatus
    verdict: Verdict | None  # None when the reply never arrived as ``ok``
    checks: tuple[CheckResult, ...]
    grader_version: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "case_no": self.case_no,
            "run_status": self.run_status,
            "verdict": self.verdict,
            "checks": [c.as_dict() for c in self.checks],
        }
