"""Report answers kept per process, under the key of everything they are made of.

A report of finished runs is a pure function of its runs, their cells, today's banks, the
rules and the review decisions. The API answers the same report again and again (a
dashboard refreshing, a CI job polling a change's verdict), and building it, from kept
graded runs, is still most of a request's CPU. So the answer's JSON text is kept under a key
of every one of those inputs, each read afresh from the store and the bank files on every
request:

- every run's row as stored (``repr(Run)``: status, exclusion, settings, plan, …);
- every run's cells mark (``Store.cell_marks``; it changes whenever a cell arrives or is
  retried, see exam.reports.graded_runs);
- today's bank of each run: the digest of its whole text (an edit anywhere in the file,
  even to a category or a note, gives another key) and every question's key, or the message
  of a bank that will not load;
- the rules (``rules_key``) and the mark of the review decisions on those banks' questions
  (``Store.adjudications_mark``: their count, highest id, the sum and latest of their times,
  and the newest one's answer; a decision applies only to the question it was made on);
- the report, the route's arguments and the runs' order.

Runs still queued or running are never kept (their rows and cells change with every reply);
a run whose process is gone (its lease ran out) reads interrupted and is: resuming it changes
its row.
What is kept is bounded: ``KEPT`` answers per process, none over ``KEPT_CHARS``, and
``KEPT_TOTAL_CHARS`` in all (the oldest used go first). Every
instance keeps its own; one that has not seen the store change reads the same key as one
that has, because the key is read from the store, not remembered.

Below the process's answers, the store keeps the latest answer of each report and arguments
(``Store.kept_answer``, one row per slot, under the key above with the code's digest and the
store's backend added: an upgrade, or a copy to PostgreSQL, makes them again): the first view
in a new process, on another instance, or after the worker finished a run
(exam/reports/kept.py makes that run's answers) reads it instead of building it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from exam.grading import keys
from exam.grading.keys import questions_key, rules_key
from exam.reports.graded_runs import NOT_KEPT
from exam.reports.regrade import load_banks, question_digests
from exam.store import Run, Store

KEPT = 64  # answers per process
KEPT_CHARS = 2_000_000  # a larger answer (a scorecard of 10,000 cells) is built each time
KEPT_TOTAL_CHARS = 16_000_000  # all answers kept by a process (~16–48 MB: JSON of CJK text)
KEPT_STORE_CHARS = 4_000_000  # a larger answer is not kept in the store either
_kept: OrderedDict[str, str] = OrderedDict()
_lock = threading.Lock()
_making: dict[str, _Making] = {}  # keys being made now


def key(store: Store, runs: Sequence[Run], *parts: Any) -> str | None:
    """The key of a report of ``runs`` (and ``parts``: which report, its arguments); None
    when a run may still change."""

    if not runs or any(r.shown_status in NOT_KEPT for r in runs):
        return None
    banks, missing = load_banks(store, runs)
    marks = store.cell_marks([r.id for r in runs])
    every = (
        parts, rules_key(), [repr(r) for r in runs], [marks[r.id] for r in runs],
        sorted((p, b.content_digest or repr([i.raw for i in b.items]), b.digest,
                questions_key(b)) for p, b in banks.items()),
        [m["message"] for m in missing],
        # a mark of the decisions on these banks' questions, which any change to them changes
        # (Store.adjudications_mark): a decision on another agent's question keeps this answer
        store.adjudications_mark(question_digests(banks)),
    )
    return hashlib.blake2b(repr(every).encode(), digest_size=20).hexdigest()


def _default(value: Any) -> Any:
    """What JSON cannot say by itself, as Flask's provider says it (a dataclass as a dict)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def api_text(report: Any) -> str:
    """A report as the API answers it: UTF-8 (Chinese as text), keys sorted, one line."""
    return json.dumps(report, ensure_ascii=False, sort_keys=True, default=_default) + "\n"


def page_text(report: Any) -> str:
    """A report as a page keeps it: its keys in the order it was built (a page shows them so)."""
    return json.dumps(report, ensure_ascii=False, default=_default)


def api_answer(asked: Any) -> str:
    """The API's answer of a report asked (``kinds.Asked``), kept."""
    return answer(asked.inputs.store, asked.runs, lambda: api_text(asked.report()),
                  *asked.key())


def page_answer(asked: Any) -> str:
    """A page's answer of a report asked (``kinds.Asked``), kept: what its template shows of
    it (``ReportKind.shown``, capped), so a view renders what was made once."""
    def make() -> str:
        report = asked.report()
        return page_text(asked.kind.shown(report, True) if asked.kind.shown else report)

    return answer(asked.inputs.store, asked.runs, make, "page", *asked.key())


def answer(store: Store, runs: Sequence[Run], make: Callable[[], str], *parts: Any,
           in_store: bool = True) -> str:
    """The report's text as ``make()`` writes it, kept under its key, or made and kept. Threads
    asking for the same key at once (a dashboard's first view, eight clients starting
    together) wait for the one that makes it, rather than each making it. ``in_store=False``:
    kept by this process alone (a page past the first, whose slots a visitor could multiply)."""
    k = key(store, runs, *parts)
    if k is None:
        return make()
    with _lock:
        text = _kept.get(k)
        if text is not None:
            _kept.move_to_end(k)
            return text
        making = _making.setdefault(k, _Making())
    with making.lock:
        if making.text is not None:  # made while this thread waited
            return making.text
        try:  # the first to come (or the one before it failed): read it kept, or make it
            slot, stored = _stored(store, k, parts)
            text = store.kept_answer(slot, stored) if in_store else None
            if text is not None:
                making.text = text
                return text
            text = make()
            # make() read its inputs again: one that changed after the key was read (a bank
            # edited, later put back) would leave this answer under a key it was not made
            # from. Kept (and shared) only if the key still holds; else waiters make their own.
            if key(store, runs, *parts) == k:
                making.text = text
                if in_store and len(text) <= KEPT_STORE_CHARS:
                    store.keep_answer(slot, stored, text)
        finally:
            with _lock:
                if making.text is not None and len(making.text) <= KEPT_CHARS:
                    _kept[k] = making.text
                    total = sum(map(len, _kept.values()))
                    while len(_kept) > KEPT or (total > KEPT_TOTAL_CHARS and len(_kept) > 1):
                        total -= len(_kept.popitem(last=False)[1])
                if _making.get(k) is making:
                    del _making[k]
        return text


def _stored(store: Store, k: str, parts: Sequence[Any]) -> tuple[str, str]:
    """(slot, key) of an answer kept in the store: one slot per report and arguments; the key
    adds the code and the backend to the process's key (kept across upgrades and copies)."""
    slot = hashlib.blake2b(repr(parts).encode(), digest_size=20).hexdigest()
    return slot, f"{k}|code={keys.code_digest()}|db={store.backend}"


class _Making:
    """A report being made: the lock its maker holds, and the text once made."""

    __slots__ = ("lock", "text")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.text: str | None = None


def clear() -> None:
    with _lock:
        _kept.clear()
        _making.clear()
