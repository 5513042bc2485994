"""Graded runs: each finished run's graded cells kept as one row, read back in one query.

The grade cache (``grade_cache``) saves grading, but a report over 100,000 cells still loaded
every cell, built every reply and its key and looked each one up. A finished run's cells do
not change, so its graded cells (before any review decision) are kept whole, under a key of
everything they were made from:

- the rules (``rules_key``: grader and rule versions);
- today's questions of the run's bank (each case's question key and digest: an edited
  rubric, a bank option, a removed or added question gives another key);
- the run's settings (the agent's budget and reply mapping, which grading reads);
- the run's cells mark (``Store.cell_marks``: how many cells and earlier cells it has; it
  changes whenever a cell arrives or is retried, and is read from the store, so every
  process and every service instance sees the same). It holds because the store only ever
  inserts cells or moves them to ``earlier_cells``; a store that updated a cell in place
  would need a change counter in the mark.

A row whose key differs is never read: the run is graded as before (from the grade cache)
and its row replaced. Review decisions are applied on top afterwards, as on fresh grades.
Runs still running or queued are not kept (their cells change with every reply), only read
through the grade cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from exam.bank import Item
from exam.store import Run, Store
from graders import CheckResult

LAYOUT = 1  # bump when the row layout below changes
NOT_KEPT = frozenset({"running", "queued"})  # their cells change with every reply


def run_key(rules: str, questions: str, run: Run, mark: tuple[int, int]) -> str:
    settings = json.dumps(run.settings, sort_keys=True, ensure_ascii=False)
    setting_key = hashlib.blake2b(settings.encode(), digest_size=16).hexdigest()
    return f"{rules}|layout={LAYOUT}|q={questions}|s={setting_key}|cells={mark[0]}/{mark[1]}"


class LazyChecks(Sequence[CheckResult]):
    """A kept cell's checks, decoded from their JSON on first use (a report over 100,000
    cells reads the checks of the few it shows); equal to, and hashed as, the tuple."""

    __slots__ = ("_raw", "_checks")

    def __init__(self, raw: str):
        self._raw = raw
        self._checks: tuple[CheckResult, ...] | None = None

    def _value(self) -> tuple[CheckResult, ...]:
        if self._checks is None:  # two threads may both decode: they make equal tuples
            self._checks = tuple(CheckResult(n, o, tuple(m), tuple(u), e)
                                 for n, o, m, u, e in json.loads(self._raw))
        return self._checks

    def as_dicts(self) -> list[dict[str, Any]]:
        """``[c.as_dict() for c in self]``, made from the JSON without building the checks
        (a report that only shows them, as the scorecard does)."""
        if self._checks is not None:
            return [c.as_dict() for c in self._checks]
        return [{"name": n, "outcome": o, "evidence": e, "missing": m, "unexpected": u}
                for n, o, m, u, e in json.loads(self._raw)]

    def __getitem__(self, i):  # type: ignore[override]
        return self._value()[i]

    def __len__(self) -> int:
        return len(self._value())

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self._value())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyChecks):
            other = other._value()
        return self._value() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value())

    def __repr__(self) -> str:
        return repr(self._value())


def encode(cells: Sequence[Any], removed: Sequence[str]) -> str:
    """One run's graded cells: a line of JSON for the cells, then one line of JSON for each
    distinct list of checks (JSON never holds a raw newline, so the lines split without
    being parsed and each list is decoded only when read). Reply texts are kept only where
    a person must read them (needs_human), as the parallel path keeps them."""
    groups: dict[tuple[CheckResult, ...], int] = {}
    rows = []
    for c in cells:
        n = groups.setdefault(tuple(c.checks), len(groups))
        rows.append((c.case_no, c.repeat, c.run_status, c.verdict, n, c.attempts, c.model_calls,
                     c.tokens, c.latency_ms, c.error, c.changed, c.reply_digest,
                     c.tokens_estimated, c.usage_note,
                     c.text if c.verdict == "needs_human" else None))
    lines = [json.dumps({"cells": rows, "removed": list(removed)}, ensure_ascii=False,
                        separators=(",", ":"))]
    lines += [json.dumps([(k.name, k.outcome, k.missing, k.unexpected, k.evidence) for k in g],
                         ensure_ascii=False, separators=(",", ":")) for g in groups]
    return "\n".join(lines)


def decode(raw: str, run: Run, items: Mapping[str, Item],
           texts: Mapping[tuple[int, str, int], str | None] | None = None
           ) -> tuple[list[tuple], list[str]]:
    """The run's graded cells, each as the fields of a ``GradedCell`` in order (regrade makes
    them); with ``texts``, every reply's text (else needs_human ones)."""
    head, *lines = raw.split("\n")
    data = json.loads(head)
    groups = [LazyChecks(line) for line in lines]
    cells = []
    rid, agent, version = run.id, run.agent, run.version
    shown = {case_no: (i.category, i.question.severity) for case_no, i in items.items()}
    for (case_no, repeat, run_status, verdict, n, attempts, model_calls, tokens, latency_ms,
         error, changed, reply_digest, tokens_estimated, usage_note, text) in data["cells"]:
        category, severity = shown[case_no]
        if texts is not None:
            text = texts.get((rid, case_no, repeat))
        cells.append((rid, agent, version, case_no, category, severity, repeat, run_status,
                      verdict, groups[n], attempts, model_calls, tokens, latency_ms, error,
                      changed, text, False, reply_digest, tokens_estimated, usage_note))
    return cells, data["removed"]


def read(store: Store, by_id: Mapping[int, Run], questions: Mapping[str, str],
         items: Mapping[str, Mapping[str, Item]], rules: str, keep_text: bool
         ) -> tuple[dict[int, tuple[list[tuple], list[str]]], dict[int, str]]:
    """The runs whose kept cells are current, decoded; and the key each other run's cells
    are to be kept under once graded (made from the mark read before they are loaded)."""
    marks = store.cell_marks(list(by_id))
    keys = {i: run_key(rules, questions[r.bank_path], r, marks[i]) for i, r in by_id.items()}
    raw = store.graded_runs(keys)
    texts = store.cell_texts(list(raw)) if keep_text and raw else {}
    # read again: a cell that arrived or was retried while these were read is not in them
    # (without texts, a row kept under the first mark is that moment's cells, whole)
    after = store.cell_marks(list(by_id)) if keep_text and raw else marks
    served = {}
    for i, data in raw.items():
        if after[i] != marks[i]:
            continue
        served[i] = decode(data, by_id[i], items[by_id[i].bank_path],
                           texts if keep_text else None)
    rest = {i: run_key(rules, questions[r.bank_path], r, after[i])
            for i, r in by_id.items() if i not in served}
    return served, rest


def keep(store: Store, runs: Mapping[int, Run], keys: Mapping[int, str], rules: str,
         cells: Sequence[Any], removed: Mapping[int, list[str]]) -> None:
    """Keep the graded cells of each finished run whose cells did not move while graded."""
    wanted = [i for i, r in runs.items() if r.status not in NOT_KEPT and i in keys]
    if not wanted:
        return
    now = store.cell_marks(wanted)
    by_run: dict[int, list[Any]] = {i: [] for i in wanted}
    for c in cells:
        if c.run_id in by_run:
            by_run[c.run_id].append(c)
    for i in wanted:
        if keys[i].endswith(f"|cells={now[i][0]}/{now[i][1]}"):
            if not store.keep_graded_run(i, rules, keys[i], encode(by_run[i], removed.get(i, []))):
                return  # a store that cannot be written: nothing kept, nothing wrong
