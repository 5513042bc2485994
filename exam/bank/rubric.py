"""A bank's rubric as a run was made with it, and how a question's rubric changed since.

Reports re-grade every stored reply under today's bank (one rubric across the versions
compared). That is fair between the versions, but a rubric loosened in the same change as the
agent lets a worse agent pass both: the verdict has to say which questions changed since the
baseline ran, and which way. A change is ``looser`` when every reply the old rubric passed
would pass the new one as far as these fields go, ``stricter`` the other way round, else
``changed``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from exam.bank.load import UNGRADED_KEYS, Bank
from graders.patterns import split_alternatives

SEVERITIES = {"critical": 3, "major": 2, "minor": 1}  # a lower one asks less of a drop


def snapshot(bank: Bank) -> dict[str, Any]:
    """What the store keeps of the bank with a run: every question's graded fields, and its
    severity (not graded, but the verdict's evidence rule depends on it)."""
    fold = bool(bank.items and bank.items[0].question.fold_script)
    return {"fold_script": fold, "questions": {i.case_no: graded_fields(i.raw)
                                               for i in bank.items}}


def graded_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k not in UNGRADED_KEYS}
    out["severity"] = raw.get("severity", "major")
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, ensure_ascii=False) == \
        json.dumps(b, sort_keys=True, ensure_ascii=False)


def _short(value: Any) -> str:
    text = "none" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


def _alternatives(entries: Any) -> list[frozenset[str]]:
    out = []
    for e in entries or []:
        if isinstance(e, str):
            out.append(frozenset(split_alternatives(e)))
        else:  # an object entry (a field spec, say): compared whole
            out.append(frozenset([json.dumps(e, sort_keys=True, ensure_ascii=False)]))
    return out


def _facts_direction(then: Any, now: Any) -> str:
    """Each fact must appear (any of its alternatives): a rubric is looser when every fact it
    asks is implied by one the other asked (its alternatives a superset)."""
    t, n = _alternatives(then), _alternatives(now)
    looser = all(any(old <= new for old in t) for new in n)
    stricter = all(any(new <= old for new in n) for old in t)
    return "looser" if looser and not stricter else "stricter" if stricter and not looser \
        else "changed"


def _forbidden_direction(then: Any, now: Any) -> str:
    """Any forbidden alternative fails a reply: forbidding less is looser."""
    t = frozenset().union(*_alternatives(then))
    n = frozenset().union(*_alternatives(now))
    return "looser" if n < t else "stricter" if n > t else "changed"


def changes(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How a question's graded fields changed: [{field, then, now, direction}]."""
    then, now = graded_fields(then), graded_fields(now)
    out: list[dict[str, Any]] = []

    def add(name: str, a: Any, b: Any, direction: str) -> None:
        out.append({"field": name, "then": a, "now": b, "direction": direction})

    for key in sorted(set(then) | set(now)):
        a, b = then.get(key), now.get(key)
        if _same(a, b):
            continue
        if key == "budget":
            a, b = a or {}, b or {}
            for k in sorted(set(a) | set(b)):
                x, y = a.get(k), b.get(k)
                if _same(x, y):
                    continue
                direction = ("looser" if y is None or (x is not None and y > x) else "stricter"
                             if x is None or y < x else "changed")
                add(f"budget.{k}", x, y, direction)
        elif key == "expect_facts":
            add(key, a, b, _facts_direction(a, b))
        elif key == "expect_forbidden":
            add(key, a, b, _forbidden_direction(a, b))
        elif key == "expect_status":
            add(key, a, b, "looser" if b is None else "stricter" if a is None else "changed")
        elif key == "severity":
            x, y = SEVERITIES.get(a, 2), SEVERITIES.get(b, 2)
            add(key, a, b, "looser" if y < x else "stricter" if y > x else "changed")
        elif key in ("input", "case_no"):
            add(key, a, b, "changed")  # another question: old replies answer something else
        else:
            add(key, a, b, "looser" if b is None else "stricter" if a is None else "changed")
    return out


def describe(change: Mapping[str, Any]) -> str:
    """``budget.tokens 3000 → 6000 (looser)``."""
    return (f"{change['field']} {_short(change['then'])} → {_short(change['now'])} "
            f"({change['direction']})")
