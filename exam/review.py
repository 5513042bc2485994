"""Human review of needs_human verdicts, remembered across re-grades: a person decides a reply
once, not again at every re-grade.

A decision is stored against what was judged: the reply text's digest, the check, the
question's digest, and the grader's rule version for that kind of check. Re-grading
applies it wherever the same reply meets the same check again, in every report and
every version; when the question or the rule changes, the key no longer matches and the
cell is back in the queue.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from exam.errors import ExamError
from exam.textsafe import csv_cell, csv_uncell
from graders import GRADER_VERSION, RULE_VERSIONS, CheckResult, combine

WHOLE = "*"  # a spot-check decision on the whole reply
EXPORT_FIELDS = ("item", "agent", "version", "case_no", "question_digest", "reply_digest",
                 "checks", "evidence", "reply", "work_order", "cells", "decision", "reason",
                 "reviewer")


def reply_digest(text: str | None) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:24]


def rule_version(check_name: str) -> str:
    """'forbidden[1]' → the forbidden rule's version; '*' → the whole grader's."""
    if check_name == WHOLE:
        return GRADER_VERSION
    kind = check_name.split("[", 1)[0].split(".", 1)[0]
    return str(RULE_VERSIONS.get(kind, GRADER_VERSION))


Key = tuple[str, str, str, str]


def index(rows: Iterable[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {(r["reply_digest"], r["check_name"], r["question_digest"], r["rule_version"]): r
            for r in rows}


def apply(checks: Sequence[CheckResult], verdict: str | None, rdigest: str, qdigest: str,
          decisions: dict[Key, dict[str, Any]]) -> tuple[tuple[CheckResult, ...], str | None, bool]:
    """(checks, verdict, reviewed) after applying any stored decisions that still hold."""
    if verdict is None or not decisions:
        return tuple(checks), verdict, False
    whole = decisions.get((rdigest, WHOLE, qdigest, rule_version(WHOLE)))
    reviewed = False
    out = []
    for c in checks:
        d = decisions.get((rdigest, c.name, qdigest, rule_version(c.name)))
        if d and c.outcome == "needs_human":
            note = f"reviewed by {d['reviewer']}: {d['decision']}" + (
                f" ({d['reason']})" if d["reason"] else "")
            c = replace(c, outcome=d["decision"], evidence=f"{c.evidence} — {note}")
            reviewed = True
        out.append(c)
    new_verdict = combine(out)
    if whole:
        new_verdict = whole["decision"]
        reviewed = True
    return tuple(out), new_verdict, reviewed


@dataclass
class ReviewItem:
    """One distinct reply waiting for a decision (identical replies are decided once)."""

    agent: str
    case_no: str
    question_digest: str
    reply_digest: str
    text: str
    work_order: dict[str, Any]
    checks: list[dict[str, Any]]  # the needs_human checks (or, for spot checks, all of them)
    verdict: str
    cells: list[tuple[int, str, int]] = field(default_factory=list)  # (run_id, version, repeat)
    spot_check: bool = False

    @property
    def versions(self) -> list[str]:
        return sorted({v for _, v, _ in self.cells})

    @property
    def key(self) -> str:
        return f"{self.agent}:{self.case_no}:{self.question_digest}:{self.reply_digest}"


def queue(regraded, agent: str | None = None, version: str | None = None, sample: int = 0,
          seed: int | None = None) -> list[ReviewItem]:
    """needs_human replies still open, then (on request) a random sample of passes and fails."""
    items: dict[str, ReviewItem] = {}
    spot: dict[str, ReviewItem] = {}
    # by the run's bank file: a registry agent may use another agent's bank (W2canary with
    # bank/W2.json), so the bank's own `agent` says nothing about whose cells these are
    by_case = {path: b.by_case() for path, b in regraded.banks.items()}
    bank_of = {r.id: r.bank_path for r in regraded.runs}
    for c in regraded.cells:
        if (agent and c.agent != agent) or (version and c.version != version):
            continue
        if c.verdict not in ("needs_human", "pass", "fail") or c.text is None:
            continue
        # passes and fails are only ever a sample's pool: without one, not looked at at all
        # (100,000 cells: their checks decoded and digested for nothing, ~80% of /review)
        if c.verdict != "needs_human" and (c.reviewed or not sample):
            continue
        item = by_case[bank_of[c.run_id]][c.case_no]
        target = items if c.verdict == "needs_human" else spot
        rd = reply_digest(c.text)
        key = f"{c.agent}:{c.case_no}:{item.digest}:{rd}"
        if key not in target:
            checks = [ch.as_dict() for ch in c.checks
                      if c.verdict != "needs_human" or ch.outcome == "needs_human"]
            target[key] = ReviewItem(c.agent, c.case_no, item.digest, rd, c.text,
                               dict(item.question.input), checks, c.verdict,
                               spot_check=c.verdict != "needs_human")
        target[key].cells.append((c.run_id, c.version, c.repeat))
    out = sorted(items.values(), key=lambda i: (i.agent, i.case_no))
    if sample:
        rng = random.Random(seed)
        pool = sorted(spot.values(), key=lambda i: i.key)
        out += rng.sample(pool, min(sample, len(pool)))
    return out


REVIEWER_MAX_CHARS = 80  # a name, kept with each decision and in the dashboard's session cookie


def decide(store, item: ReviewItem, decision: str, reviewer: str, reason: str = "") -> int:
    """Store a decision for every needs_human check of the item (or the whole reply)."""
    if decision not in ("pass", "fail"):
        raise ExamError(f"decision: expected pass or fail, found {decision!r}")
    if decision == "fail" and not reason.strip():
        raise ExamError(f"{item.case_no}: a fail needs a reason (what is wrong with the reply)")
    if not reviewer.strip():
        raise ExamError("reviewer: give your name (--reviewer NAME)")
    if len(reviewer.strip()) > REVIEWER_MAX_CHARS:
        raise ExamError(f"reviewer: a name of at most {REVIEWER_MAX_CHARS} characters, found "
                        f"{len(reviewer.strip())}")
    names = [WHOLE] if item.spot_check else [c["name"] for c in item.checks]
    for name in names:
        store.add_adjudication(reply_digest=item.reply_digest, check_name=name,
                               question_digest=item.question_digest,
                               rule_version=rule_version(name), decision=decision,
                               reason=reason.strip(), reviewer=reviewer.strip(), agent=item.agent,
                               case_no=item.case_no)
    return len(names)


def export_csv(items: Sequence[ReviewItem], path: str | Path, blind: bool = False) -> int:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=EXPORT_FIELDS)
        writer.writeheader()
        for n, item in enumerate(items, 1):
            writer.writerow({k: csv_cell(v) for k, v in {
                "item": n, "agent": item.agent,
                "version": "" if blind else ",".join(item.versions), "case_no": item.case_no,
                "question_digest": item.question_digest, "reply_digest": item.reply_digest,
                "checks": ";".join(c["name"] for c in item.checks) if not item.spot_check
                else WHOLE,
                "evidence": " | ".join(f"{c['name']}: {c['evidence']}" for c in item.checks),
                "reply": item.text, "work_order": json.dumps(item.work_order, ensure_ascii=False),
                "cells": len(item.cells), "decision": "", "reason": "", "reviewer": ""}.items()})
    return len(items)


def import_csv(store, path: str | Path, default_reviewer: str = "") -> tuple[int, int]:
    """Store the decisions filled in a CSV made by export; returns (decided, left blank)."""
    decided = blank = 0
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise ExamError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with f:
        reader = csv.DictReader(f)
        missing = {"agent", "case_no", "question_digest", "reply_digest", "checks",
                   "decision"} - set(reader.fieldnames or ())
        if missing:
            raise ExamError(f"{path}: not a review export: missing column(s) "
                            f"{', '.join(sorted(missing))}")
        for n, raw_row in enumerate(reader, 2):
            row = {k: csv_uncell(v) if isinstance(v, str) else v for k, v in raw_row.items()}
            decision = (row.get("decision") or "").strip().lower()
            if not decision or decision == "skip":
                blank += 1
                continue
            if decision not in ("pass", "fail"):
                raise ExamError(f"{path}: line {n}: decision: expected pass, fail or skip, "
                                f"found {row['decision']!r}")
            names = row["checks"].split(";") if row["checks"] else []
            item = ReviewItem(row["agent"], row["case_no"], row["question_digest"],
                        row["reply_digest"], row.get("reply", ""), {},
                        [{"name": nm} for nm in names], "needs_human",
                        spot_check=names == [WHOLE])
            try:
                decide(store, item, decision, row.get("reviewer") or default_reviewer,
                       row.get("reason") or "")
            except ExamError as exc:
                raise ExamError(f"{path}: line {n}: {exc}") from None
            decided += 1
    return decided, blank
