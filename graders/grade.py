"""grade(question, reply) → Grade: the one entry point, a pure function."""

from __future__ import annotations

from collections.abc import Mapping

from graders import checks
from graders.model import STRICTNESS, CheckResult, Grade, Question, Reply, Verdict
from graders.normalize import normalize_mapped
from graders.trajectory import check_tools

# 2.1: a reported 0 tokens with model calls is needs_human; 2.2: the scope model's adversarial
# batches (negated and rhetorical questions, hedges, excepted items, list heads, topics)
# 2.3: assertion, not presence; folding by default; whole-word literal patterns; linear time
# whatever the reply (RE2, a window around each hit, bounded occurrences) (issue 31); 2.3.1:
# thresholds, tiers, events, deadlines, modal hedges, contrasts after a general rule
GRADER_VERSION = "2.3.1"
# every check kind's rule version, the registered kinds' included (graders/checks.py)
RULE_VERSIONS = checks.RULE_VERSIONS


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
    """Grade one reply. ``budget`` (the agent's) is overridden key by key by the question's."""
    if reply.run_status != "ok":
        return Grade(question.case_no, reply.run_status, None, (), GRADER_VERSION)
    mapped = normalize_mapped(reply.text or "", fold=question.fold_script)
    text = mapped.text
    source = mapped if mapped.original != text else None  # evidence quotes the reply as written
    results: list[CheckResult] = []
    reading = checks.Budget()  # what the scope model may read in this cell (issue 31)
    if question.expect_status is not None:
        results.append(checks.check_status(question.expect_status, reply))
    for i, entry in enumerate(question.facts):
        results.append(checks.check_fact(f"fact[{i}]", entry, text, question.input_text,
                                         reading, source=source))
    for i, entry in enumerate(question.forbidden):
        results.append(checks.check_forbidden(f"forbidden[{i}]", entry, text, question.input_text,
                                              reading, source=source))
    for spec in question.fields:
        results.append(checks.check_field(spec, reply, fold=question.fold_script))
    if question.numbers_grounded:
        results.append(checks.check_numbers_grounded(text, question.input_text))
    if question.tools:
        results.extend(check_tools(question.tools, reply))
    for key, value in question.registered_checks.items():
        results.extend(checks.KINDS[key].check(value, text, reply, question))
    effective = {**(budget or {}), **question.budget}
    results.extend(checks.check_budget(effective, reply))
    return Grade(question.case_no, "ok", combine(results), tuple(results), GRADER_VERSION)
