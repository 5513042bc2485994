"""grade(question, reply) → Grade: the one entry point, a pure function."""

from __future__ import annotations

from collections.abc import Mapping

from graders import checks
from graders.kinds import ABSENT, RULE_VERSIONS, Cell, plan
from graders.model import STRICTNESS, CheckResult, Grade, Question, Reply, Verdict
from graders.normalize import normalize_mapped

# 2.1: a reported 0 tokens with model calls is needs_human; 2.2: the scope model's adversarial
# batches (negated and rhetorical questions, hedges, excepted items, list heads, topics)
# 2.3: assertion, not presence; folding by default; whole-word literal patterns; linear time
# whatever the reply (RE2, a window around each hit, bounded occurrences) (issue 31); 2.3.1:
# thresholds, tiers, events, deadlines, modal hedges, contrasts after a general rule
GRADER_VERSION = "2.3.1"
# every check kind's rule version, registered with the kind (graders/checks.py)
__all__ = ["GRADER_VERSION", "RULE_VERSIONS", "combine", "grade"]


def combine(results: tuple[CheckResult, ...] | list[CheckResult]) -> Verdict:
    """The strictest graded outcome; ``not_graded`` when nothing was graded (never ``pass``)."""
    outcomes = {r.outcome for r in results}
    for outcome in STRICTNESS:
        if outcome in outcomes:
            return outcome  # type: ignore[return-value]
    return "not_graded"


def grade(
    question: Question, reply: Reply, *, budget: Mapping[str, float] | None = None
) -> Grade:
    """Grade one reply: every registered check kind the question has, in the registry's
    order. ``budget`` (the agent's) is overridden key by key by the question's."""
    if reply.run_status != "ok":
        return Grade(question.case_no, reply.run_status, None, (), GRADER_VERSION)
    mapped = normalize_mapped(reply.text or "", fold=question.fold_script)
    text = mapped.text
    source = mapped if mapped.original != text else None  # evidence quotes the reply as written
    # what the scope model may read in this cell (issue 31)
    cell = Cell(question, reply, text, source, checks.Budget(), budget or {})
    results: list[CheckResult] = []
    registered = question.registered_checks
    for attribute, key, check in plan():  # CheckKind.value_of, inline: it runs per reply
        value = getattr(question, attribute) if attribute else registered.get(key, ABSENT)
        if value is not ABSENT:
            results.extend(check(value, cell))
    return Grade(question.case_no, "ok", combine(results), tuple(results), GRADER_VERSION)
