"""Re-grade stored replies with today's grader and bank: one rubric across every version.

Every report starts here. A cell whose question changed since it was run is flagged
(``changed``), a question no longer in the bank is counted as ``removed``; neither is
silently mixed with the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from exam.bank import Bank, Item, load_bank
from exam.registry import mapping_from_dict
from exam.replies import read_body
from exam.store import CellRow, Run, Store
from graders import CheckResult, Reply, Step, grade


@dataclass(frozen=True, slots=True)
class GradedCell:
    run_id: int
    agent: str
    version: str
    case_no: str
    category: str
    severity: str
    repeat: int
    run_status: str
    verdict: str | None  # None when the reply never arrived as ok
    checks: tuple[CheckResult, ...]
    attempts: int
    model_calls: int | None
    tokens: int | None
    latency_ms: float | None
    error: str
    changed: bool  # the question's rubric changed since this cell was run
    text: str | None = None
    reviewed: bool = False  # a person's stored decision set (part of) this verdict

    def as_dict(self) -> dict:
        return {
            "run_id": self.run_id, "repeat": self.repeat, "run_status": self.run_status,
            "verdict": self.verdict, "attempts": self.attempts, "model_calls": self.model_calls,
            "tokens": self.tokens, "latency_ms": self.latency_ms, "error": self.error,
            "changed_since_run": self.changed, "reviewed": self.reviewed,
            "checks": [c.as_dict() for c in self.checks],
        }


@dataclass
class Regraded:
    cells: list[GradedCell]
    banks: dict[str, Bank]
    runs: list[Run]
    removed: dict[int, list[str]] = field(default_factory=dict)  # run id → case_nos gone

    def bank_digests(self) -> dict[str, str]:
        return {b.agent: b.digest for b in self.banks.values()}


def _final_body(store: Store, cell: CellRow):
    attempts = store.attempts(cell.run_id, cell.case_no, cell.repeat)
    if not attempts or attempts[-1].body is None or attempts[-1].body_cut:
        return None
    try:
        return json.loads(attempts[-1].body)
    except ValueError:
        return None


def reply_of(store: Store, run: Run, cell: CellRow, item: Item) -> Reply:
    steps = None if cell.steps is None else tuple(Step(s["tool"], s.get("args") or {})
                                                   for s in cell.steps)
    body = None
    if item.question.fields and cell.run_status == "ok":
        raw = _final_body(store, cell)
        if raw is not None:
            body = read_body(raw, mapping_from_dict(run.settings.get("reply", {}))).body
    return Reply(text=cell.text, status=cell.status, body=body, steps=steps,
                 attempts=cell.attempts, model_calls=cell.model_calls, tokens=cell.tokens,
                 latency_ms=cell.latency_ms, run_status=cell.run_status)  # type: ignore[arg-type]


def regrade(store: Store, runs: Sequence[Run]) -> Regraded:
    from exam import review

    decisions = review.index(store.adjudications())
    banks: dict[str, Bank] = {}
    out: list[GradedCell] = []
    removed: dict[int, list[str]] = {}
    by_id = {r.id: r for r in runs}
    for run in runs:
        if run.bank_path not in banks:
            banks[run.bank_path] = load_bank(run.bank_path)
    items = {path: bank.by_case() for path, bank in banks.items()}
    for cell in store.cells(list(by_id)):
        run = by_id[cell.run_id]
        item = items[run.bank_path].get(cell.case_no)
        if item is None:
            removed.setdefault(run.id, [])
            if cell.case_no not in removed[run.id]:
                removed[run.id].append(cell.case_no)
            continue
        reply = reply_of(store, run, cell, item)
        g = grade(item.question, reply, budget=run.settings.get("budget") or {})
        checks, verdict, reviewed = review.apply(g.checks, g.verdict, review.reply_digest(
            cell.text), item.digest, decisions)
        out.append(GradedCell(
            run_id=run.id, agent=run.agent, version=run.version, case_no=cell.case_no,
            category=item.category, severity=item.question.severity, repeat=cell.repeat,
            run_status=cell.run_status, verdict=verdict, checks=checks,
            attempts=cell.attempts, model_calls=cell.model_calls, tokens=cell.tokens,
            latency_ms=cell.latency_ms, error=cell.error,
            changed=cell.question_digest != item.digest, text=cell.text, reviewed=reviewed,
        ))
    return Regraded(out, banks, list(runs), removed)


def select_runs(store: Store, agent: str | None = None, version: str | None = None,
                run_ids: Iterable[int] = ()) -> list[Run]:
    ids = list(run_ids)
    if ids:
        return [store.get_run(i) for i in ids]
    return [r for r in store.list_runs(agent, version) if r.status != "queued"]
