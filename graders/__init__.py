"""Pure grading: a question and a reply in, a verdict with evidence out.

No I/O, no clock, no network; that is what makes replay and re-grading cheap.
"""

from __future__ import annotations

from graders.grade import GRADER_VERSION, RULE_VERSIONS, combine, grade
from graders.model import (
    CheckResult,
    FieldSpec,
    Grade,
    Question,
    Reply,
    Step,
    ToolExpectation,
)
from graders.normalize import normalize
from graders.patterns import PatternError, parse_entry

__all__ = [
    "GRADER_VERSION", "RULE_VERSIONS", "CheckResult", "FieldSpec", "Grade", "PatternError",
    "Question", "Reply", "Step", "ToolExpectation", "combine", "grade", "normalize", "parse_entry",
]
