"""What the reply viewer shows: a cell's reply with its deciding words, work order, checks,
attempts and cost; and every reply to one question, version beside version.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from exam.reports import same
from exam.reports.html import mark_text, quoted
from exam.reports.regrade import GradedCell, regrade
from exam.reports.selection import select_runs
from exam.store import Run, Store


def _cell_dict(c: GradedCell, marked: bool = True) -> dict[str, Any]:
    out = {**c.as_dict(), "case_no": c.case_no, "version": c.version, "agent": c.agent,
           "text": c.text}
    return mark(out) if marked else out


def mark(cell: dict[str, Any]) -> dict[str, Any]:
    """The cell (a viewer's dict) with its reply's deciding words marked (``marked``): it reads
    the whole reply, so a page marks only the replies it shows."""
    cell["marked"] = mark_text(cell["text"], quoted(ch["evidence"] for ch in cell["checks"]))
    return cell


def cell(store: Store, run: Run, case_no: str, repeat: int) -> dict[str, Any] | None:
    """One cell of one run, re-graded with today's bank; None when the run has no such cell."""
    rows = store.cells([run.id], case_no=case_no, repeat=repeat)
    if not rows:
        return None
    row = rows[0]
    regraded = regrade(store, [run], case_no=case_no)  # that question's cells alone
    graded = next((c for c in regraded.cells if c.case_no == case_no and c.repeat == repeat),
                  None)
    bank = regraded.banks.get(run.bank_path)
    item = bank.by_case().get(case_no) if bank else None
    attempts = [{"n": a.n, "http_status": a.http_status, "latency_ms": a.latency_ms,
                 "error": a.error, "content_type": a.content_type, "body": a.body,
                 "body_bytes": a.body_bytes, "body_cut": a.body_cut, "started_at": a.started_at}
                for a in store.attempts(run.id, case_no, repeat)]
    why_ungraded = None
    if graded is None:
        why_ungraded = (regraded.missing_banks[0]["message"] if regraded.missing_banks
                        else f"{case_no} is no longer in the bank: not graded")
    shown = _cell_dict(graded) if graded else None  # marked once: it reads the whole reply
    return {"run": run, "case_no": case_no, "repeat": repeat, "row": row,
            "graded": shown,
            "marked": shown["marked"] if shown else mark_text(row.text, ()),
            "work_order": dict(item.question.input) if item else None,
            "category": item.category if item else None,
            "severity": item.question.severity if item else None,
            "attempts": attempts, "why_ungraded": why_ungraded,
            "missing_banks": regraded.missing_banks}


def question(store: Store, agent: str, case_no: str, versions: Sequence[str] = ()
             ) -> dict[str, Any]:
    """Every stored reply of ``agent`` to ``case_no``, grouped by version (these versions, in
    the order given; or every version, oldest first); none marked yet (``mark``)."""
    runs = [r for r in select_runs(store, agent) if not versions or r.version in versions]
    regraded = regrade(store, runs, case_no=case_no)  # that question's cells and texts alone
    by_version: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in regraded.cells:
        if c.case_no == case_no:
            by_version[c.version].append(_cell_dict(c, marked=False))
    order = list(versions) or sorted(by_version, key=lambda v: min(
        r.id for r in runs if r.version == v))
    item = None
    for bank in regraded.banks.values():
        item = item or bank.by_case().get(case_no)
    return {"agent": agent, "case_no": case_no,
            "columns": [{"version": v, "cells": by_version.get(v, [])} for v in order],
            "work_order": dict(item.question.input) if item else None,
            "category": item.category if item else None,
            "severity": item.question.severity if item else None,
            "missing_banks": regraded.missing_banks}


OTHER_FIELDS = ("run_id", "repeat", "model_calls", "tokens", "latency_ms")


def question_page(store: Store, agent: str, case_no: str, versions: Sequence[str], start: int,
                  shown: int, others_shown: int) -> dict[str, Any]:
    """What the question page shows (``question`` made small once, and kept with the page's
    answer): per version its replies' counts by outcome, how many different replies, and a
    page of them, the most common first (``shown`` from the ``start``-th), each marked with
    the same reply's other cells (the first ``others_shown``; ``same``: how many in all). A
    year of history gives a question thousands of replies per version; a view renders these
    few instead of grouping them all again."""
    view = question(store, agent, case_no, versions)
    columns = []
    for col in view["columns"]:
        cells = col["cells"]
        groups = same.biggest_first(same.same_replies(cells))
        words = [c["verdict"] for c in cells if c["verdict"]]
        page = []
        for g in groups[start:start + shown]:
            cell = mark(dict(g["cell"]))
            cell["marked"] = str(cell["marked"])
            page.append({"cell": cell, "same": 1 + len(g["others"]),
                         "others": [{k: o[k] for k in OTHER_FIELDS}
                                    for o in g["others"][:others_shown]]})
        columns.append({
            "version": col["version"], "replies": len(cells), "graded": len(words),
            "passed": words.count("pass"),
            "worst": next((w for w in ("fail", "needs_human", "pass") if w in words), None),
            "outcomes": [{"word": g["word"], "n": len(g["cells"])}
                         for g in same.by_outcome(cells)],
            "groups": len(groups), "shown": page})
    return {**view, "columns": columns}
