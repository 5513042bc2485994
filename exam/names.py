"""Agent names and version labels: a safe set, checked where they enter (registry, CLI, API,
LINE), because they end up in URLs, file-like paths, markdown headings, LINE messages and
terminal lines, where a ``/``, a newline or a NUL would break or forge something."""

from __future__ import annotations

import re

from exam.errors import ExamError

MAX_NAME_CHARS = 64
RULE = (f"letters, digits, '.', '_', '+', '-'; starting with a letter or digit; at most "
        f"{MAX_NAME_CHARS} characters")
_SAFE = re.compile(r"[^\W_][\w.+-]*")


def problem(value: str) -> str:
    """Why ``value`` is not a usable name or label; "" when it is."""
    if not value:
        return "it is empty"
    if len(value) > MAX_NAME_CHARS:
        return f"it has {len(value)} characters"
    if _SAFE.fullmatch(value):
        return ""
    if not _SAFE.fullmatch(value[0]):
        return f"it starts with {value[0]!r}"
    bad = next(ch for ch in value if not re.fullmatch(r"[\w.+-]", ch))
    return f"{bad!r} is not allowed"


def check(kind: str, value: str) -> str:
    """``value`` if it is a safe name, else an ExamError naming ``kind`` and the reason."""
    why = problem(value)
    if why:
        raise ExamError(f"{kind} {value[:80]!r} is not usable: {why} (use {RULE})")
    return value
