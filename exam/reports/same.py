"""Identical replies and identical evidence said once.

Thirty repeats that gave the same words are one reply with "×30, same reply" beside it, not
thirty copies: the question page of a question asked 30 times was 14,737 px tall on a phone.
A scorecard row says each failing check's evidence once, with the repeats it holds for.
Grouping is one pass over the cells (a dict keyed by what a reader would see twice).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# the order a scorecard row lists its outcomes in: what needs someone first
OUTCOME_ORDER = {"fail": 0, "needs_human": 1, "not_graded": 2, "pass": 9}


def _checks_key(cell: Mapping[str, Any]) -> tuple:
    return tuple((c["name"], c["outcome"]) for c in cell.get("checks") or ())


def same_replies(cells: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Cells (the reply viewer's dicts) grouped when a reader would see the same thing twice:
    the same outcome, the same reply text (or error) and every check's outcome alike (cost,
    and so a budget's figure, may differ). First-seen order; each group is ``{"cell": the
    first, "others": the rest}``."""
    groups: dict[tuple, dict[str, Any]] = {}
    for c in cells:
        key = (c.get("verdict"), c.get("run_status"), c.get("error") or "", c.get("text"),
               _checks_key(c))
        group = groups.get(key)
        if group is None:
            groups[key] = {"cell": c, "others": []}
        else:
            group["others"].append(c)
    return list(groups.values())


def outcome_of(cell: Mapping[str, Any]) -> str:
    """A cell's one word: its verdict, else why it has none (timeout, http_error…)."""
    return cell.get("verdict") or cell.get("run_status") or "not_run"


def by_outcome(cells: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A scorecard row's cells by outcome, failing first: ``[{"word", "cells"}]``."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in cells:
        groups.setdefault(outcome_of(c), []).append(c)
    return [{"word": w, "cells": cs} for w, cs in
            sorted(groups.items(), key=lambda kv: OUTCOME_ORDER.get(kv[0], 5))]


def same_evidence(cells: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A scorecard row's evidence, each line once with the cells it holds for: a reply that
    never arrived says its status and error; a graded one each check that failed or waits for
    a person, with its evidence and what was missing or unexpected. ``[{"cells", "error"}]``
    or ``[{"cells", "check"}]``, in first-seen order."""
    lines: dict[tuple, dict[str, Any]] = {}
    for c in cells:
        if c.get("verdict") is None:
            key: tuple = ("error", c.get("run_status"), c.get("error") or "")
            line = {"cells": [], "error": {"run_status": c.get("run_status"),
                                          "error": c.get("error") or ""}}
            lines.setdefault(key, line)["cells"].append(c)
            continue
        for check in c.get("checks") or ():
            if check["outcome"] not in ("fail", "needs_human"):
                continue
            key = ("check", check["name"], check["outcome"], check.get("evidence") or "",
                   tuple(check.get("missing") or ()), tuple(check.get("unexpected") or ()))
            lines.setdefault(key, {"cells": [], "check": check})["cells"].append(c)
    return list(lines.values())


def most_first(lines: Sequence[Mapping[str, Any]], shown: int | None = None
               ) -> list[Mapping[str, Any]]:
    """Evidence lines (``same_evidence``), the ones that hold for the most cells first (ties in
    first-seen order); with ``shown``, that many: a page over a year of varied replies shows
    what most of them say, and links to the rest, instead of every distinct line."""
    ordered = sorted(lines, key=lambda line: -len(line["cells"]))
    return ordered if shown is None else ordered[:shown]


def biggest_first(groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Groups of the same reply (``same_replies``), the biggest first (ties in first-seen order)."""
    return sorted(groups, key=lambda g: -len(g["others"]))
