"""A grade as terminal lines: ✓ ✗ ? · marks, and under a check what was missing (- ...) and
what was not allowed (+ ...), so a red line says what to fix, not only that it failed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from exam.textsafe import terminal
from graders import CheckResult, Grade

MARK = {"pass": "✓", "fail": "✗", "needs_human": "?", "not_graded": "·"}
LABEL = {"pass": "PASS", "fail": "FAIL", "needs_human": "HUMAN", "not_graded": "NOT GRADED"}
_COLOURS = {"pass": "32", "fail": "31", "needs_human": "33", "not_graded": "90"}


def use_colour(stream=None) -> bool:
    stream = stream or sys.stdout
    return stream.isatty() and "NO_COLOR" not in os.environ


def paint(text: str, outcome: str, colour: bool) -> str:
    code = _COLOURS.get(outcome)
    return f"\033[{code}m{text}\033[0m" if colour and code else text


def check_lines(checks: Iterable[CheckResult], colour: bool = False, indent: str = "  ") -> list[str]:
    lines = []
    for c in checks:
        head = f"{indent}{paint(MARK[c.outcome], c.outcome, colour)} {terminal(c.name)}"
        if c.evidence:
            head += f"  {terminal(c.evidence)}"
        lines.append(head)
        lines.extend(f"{indent}    - {terminal(m)}" for m in c.missing)
        lines.extend(f"{indent}    + {terminal(u)}" for u in c.unexpected)
    return lines


def verdict_label(g: Grade) -> str:
    return LABEL[g.verdict] if g.verdict else g.run_status.upper()


def grade_lines(g: Grade, title: str, colour: bool = False) -> list[str]:
    outcome = g.verdict or "not_graded"
    head = f"{paint(verdict_label(g).ljust(10), outcome, colour)} {terminal(title)}"
    if g.verdict is None:
        return [head + f"  (run status {g.run_status}: no content verdict)"]
    return [head, *check_lines(g.checks, colour)]
