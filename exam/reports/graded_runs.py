"""Graded runs: each finished run's graded cells kept as one row, read back in one query.

The grade cache (``grade_cache``) saves grading, but a report over 100,000 cells still loaded
every cell, built every reply and its key and looked each one up. A finished run's cells do
not change, so its graded cells (before any review decision) are kept whole, under a key of
everything they were made from:

- the rules (``rules_key``: grader and rule versions);
- today's questions of the run's bank (each case's question key and digest: an edited
  rubric, a bank option, a removed or added question gives another key);
- the run's settings (the agent's budget and reply mapping, which grading reads);
- the store's backend (PostgreSQL keeps a reply's NUL as U+FFFD: a row copied from SQLite
  by ``exam store copy`` was graded from texts it does not hold);
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exam.bank import Item
from exam.records import RunState
from exam.reports.stats import percentile
from exam.store import Run, Store
from graders import CheckResult
from graders.model import GRADED

LAYOUT = 4  # bump when the row layout below changes
COST = ("model_calls", "tokens", "latency_ms")  # the cost figures kept per run (the overview's)
_read_json = json.JSONDecoder().raw_decode  # our own compact JSON: no white space to skip
NOT_KEPT = frozenset(RunState.LIVE)  # their cells change with every reply


def run_key(rules: str, questions: str, run: Run, mark: tuple[int, int], backend: str) -> str:
    """``backend``: the store's, since what it keeps of a reply differs (PostgreSQL keeps a
    NUL as U+FFFD): a row kept on SQLite and copied (``exam store copy``) was graded from
    texts PostgreSQL does not hold."""
    settings = json.dumps(run.settings, sort_keys=True, ensure_ascii=False)
    setting_key = hashlib.blake2b(settings.encode(), digest_size=16).hexdigest()
    return (f"{rules}|layout={LAYOUT}|db={backend}|q={questions}|s={setting_key}"
            f"|cells={mark[0]}/{mark[1]}")


def run_keys(store: Store, by_id: Mapping[int, Run], questions: Mapping[str, str], rules: str,
             marks: Mapping[int, tuple[int, int]]) -> dict[int, str]:
    """Each run's ``run_key`` on ``store``, by its bank's questions key and its cells mark."""
    return {i: run_key(rules, questions[r.bank_path], r, marks[i], store.backend)
            for i, r in by_id.items()}


class LazyChecks(Sequence[CheckResult]):
    """A kept cell's checks, decoded from their JSON on first use (a report over 100,000
    cells reads the checks of the few it shows); equal to, and hashed as, the tuple."""

    __slots__ = ("_raw", "_checks")

    def __init__(self, raw: str, checks: tuple[CheckResult, ...] | None = None):
        self._raw = raw
        self._checks = checks

    @property
    def raw(self) -> str:
        return self._raw

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


FAILED = ("fail", "needs_human")  # a check's outcomes counted as failing


def encode(cells: Sequence[Any], removed: Sequence[str]) -> str:
    """One run's graded cells as text: a head line, a block of lines per question, then a
    cost line.

    The head (JSON) holds what was removed and, per question in order, its counts — cells,
    graded, passes, whether any changed since run —, where its block lies after the head
    (start and length, in characters), its failing checks (name, times, the first one), then
    its fails and the cells that arrived as ok; the run's cost (``COST``: p50, p95 and how
    many cells report it) and the cost line's length. Discrimination, the overview and the
    runs page read the head alone; a page of one question reads its block alone (the
    database cuts it out). The cost line holds each ``COST`` figure's values, sorted: a
    version of several runs takes its percentiles from them. A block is a line of JSON for the
    question's cells, then one line for each distinct list of checks (JSON never holds a raw
    newline, so the lines split without being parsed and each list is decoded only when
    read). Reply texts are kept only where a person must read them (needs_human), as the
    parallel path keeps them. The text depends only on the cells: the same cells under the
    same key are the same text, whichever process wrote them.
    """
    lines_of: dict[Any, str] = {}  # a list of checks → its line (each encoded once)
    failing_of: dict[str, list[list]] = {}  # a line → its failing checks, as read
    by_case: dict[str, list[Any]] = {}
    for c in cells:
        by_case.setdefault(c.case_no, []).append(c)
    questions, blocks, start = [], [], 0
    for case_no, part in by_case.items():
        groups: dict[str, int] = {}
        rows = []
        graded = passes = fails = answered = 0
        changed = False
        times: dict[str, int] = {}  # failing check → cells, in the order first seen
        first: dict[str, dict] = {}
        for c in part:
            line = checks_line(c.checks, lines_of)
            n = groups.setdefault(line, len(groups))
            failing = failing_of.get(line)
            if failing is None:  # most lines hold no failing check: not parsed at all
                failing = failing_of[line] = [
                    check for check in _read_json(line)[0] if check[1] in FAILED
                ] if '"fail"' in line or '"needs_human"' in line else []
            for name, o, m, u, e in failing:
                times[name] = times.get(name, 0) + 1
                if name not in first:
                    first[name] = CheckResult(name, o, tuple(m), tuple(u), e).as_dict()
            rows.append((c.repeat, c.run_status, c.verdict, n, c.attempts, c.model_calls,
                         c.tokens, c.latency_ms, c.error, c.changed, c.reply_digest,
                         c.tokens_estimated, c.usage_note,
                         c.text if c.verdict == "needs_human" else None))
            if c.verdict in GRADED:
                graded += 1
                passes += c.verdict == "pass"
                fails += c.verdict == "fail"
            answered += c.run_status == "ok"
            changed = changed or c.changed
        block = "\n".join([_dumps(rows), *groups])
        questions.append((case_no, len(part), graded, passes, changed, start, len(block),
                          [(name, n, first[name]) for name, n in times.items()], fails,
                          answered))
        blocks.append(block)
        start += len(block) + 1
    values = cost_values(cells)
    cost_line = _dumps(values)
    head = {"removed": list(removed), "questions": questions,
            "cost": {k: cost_of(v) for k, v in values.items()}, "cost_chars": len(cost_line)}
    return "\n".join([_dumps(head), *blocks, cost_line])


def cost_values(cells: Sequence[Any]) -> dict[str, list]:
    """Each ``COST`` figure's values over the cells that report it, sorted."""
    return {k: sorted(v for c in cells if (v := getattr(c, k)) is not None) for k in COST}


def cost_of(values: Sequence[float]) -> list:
    """[p50, p95, how many] of some values."""
    return [percentile(values, 50), percentile(values, 95), len(values)]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def checks_line(checks: Sequence[CheckResult], memo: dict[Any, str]) -> str:
    """A list of checks as its JSON line (a kept or cached one as it was read)."""
    if isinstance(checks, LazyChecks):
        return checks.raw
    line = memo.get(checks)
    if line is None:
        line = memo[checks] = _dumps([(k.name, k.outcome, k.missing, k.unexpected, k.evidence)
                                      for k in checks])
    return line


def decode_block(block: str, run: Run, case_no: str, item: Item,
                 texts: Mapping[tuple[int, str, int], str | None] | None = None) -> list[tuple]:
    """One question's kept cells, each as the fields of a ``GradedCell`` in order."""
    rows, *lines = block.split("\n")
    groups = [LazyChecks(line) for line in lines]
    rid, agent, version = run.id, run.agent, run.version
    category, severity = item.category, item.question.severity
    cells = []
    for (repeat, run_status, verdict, n, attempts, model_calls, tokens, latency_ms, error,
         changed, reply_digest, tokens_estimated, usage_note, text) in json.loads(rows):
        if texts is not None:
            text = texts.get((rid, case_no, repeat))
        cells.append((rid, agent, version, case_no, category, severity, repeat, run_status,
                      verdict, groups[n], attempts, model_calls, tokens, latency_ms, error,
                      changed, text, False, reply_digest, tokens_estimated, usage_note))
    return cells


def decode(raw: str, run: Run, items: Mapping[str, Item],
           texts: Mapping[tuple[int, str, int], str | None] | None = None
           ) -> tuple[list[tuple], list[str]]:
    """``decode_part`` of a whole kept text."""
    head, _, body = raw.partition("\n")
    return decode_part(json.loads(head), body, 0, run, items, texts)


def decode_part(data: dict, part: str, offset: int, run: Run, items: Mapping[str, Item],
                texts: Mapping[tuple[int, str, int], str | None] | None = None,
                wanted: Callable[[list], bool] | None = None) -> tuple[list[tuple], list[str]]:
    """A run's graded cells, each as the fields of a ``GradedCell`` in order (regrade makes
    them), from its head (``data``) and the part of its blocks from ``offset`` on; with
    ``texts``, every reply's text (else needs_human ones); with ``wanted``, the cells of the
    questions whose head row it accepts alone."""
    cells = []
    for q in data["questions"]:
        case_no, start, length = q[0], q[5] - offset, q[6]
        if wanted is None or wanted(q):
            cells += decode_block(part[start:start + length], run, case_no, items[case_no],
                                  texts)
    return cells, data["removed"]


def open_questions(q: list) -> bool:
    """Whether a head's question row has a cell that needs a person (graded − passes − fails)."""
    return q[2] - q[3] - q[8] > 0


def read(store: Store, by_id: Mapping[int, Run], questions: Mapping[str, str],
         items: Mapping[str, Mapping[str, Item]], rules: str, keep_text: bool,
         wanted: Callable[[list], bool] | None = None, case_no: str | None = None
         ) -> tuple[dict[int, tuple[list[tuple], list[str]]], dict[int, str]]:
    """The runs whose kept cells are current, decoded; and the key each other run's cells
    are to be kept under once graded (made from the mark read before they are loaded).
    With ``wanted``, only the questions whose head row it accepts, and only the part of each
    kept text that holds them is read; with ``case_no``, that question's alone, and only its
    replies' texts."""
    if case_no is not None:
        wanted = lambda q: q[0] == case_no  # noqa: E731 — the head row's case
    marks = store.cell_marks(list(by_id))
    keys = run_keys(store, by_id, questions, rules, marks)
    if wanted is None:
        parts = {i: (None, text, 0) for i, text in store.graded_runs(keys).items()}
    else:
        parts = _parts(store, keys, wanted)
    texts = store.cell_texts(list(parts), case_no) if keep_text and parts else {}
    # read again: a cell that arrived or was retried while these were read is not in them
    # (without texts, a row kept under the first mark is that moment's cells, whole)
    after = store.cell_marks(list(by_id)) if keep_text and parts else marks
    served = {}
    for i, (data, part, offset) in parts.items():
        if after[i] != marks[i]:
            continue
        if data is None:
            head, _, part = part.partition("\n")
            data = json.loads(head)
        served[i] = decode_part(data, part, offset, by_id[i], items[by_id[i].bank_path],
                                texts if keep_text else None, wanted)
    rest = run_keys(store, {i: r for i, r in by_id.items() if i not in served}, questions,
                    rules, after)
    return served, rest


def _parts(store: Store, keys: Mapping[int, str], wanted: Callable[[list], bool]
           ) -> dict[int, tuple[dict, str, int]]:
    """{run id: (its head, the part of its blocks that holds the wanted questions, where that
    part starts among the blocks)} of the runs kept under these keys; a run with no wanted
    question reads nothing more than its head."""
    spans, heads = {}, {}
    for i, head in store.graded_run_heads(dict(keys)).items():
        if not head.startswith("{"):
            continue
        data = heads[i] = json.loads(head)
        rows = [q for q in data["questions"] if wanted(q)]
        if rows:
            lo = min(q[5] for q in rows)
            hi = max(q[5] + q[6] for q in rows)
            spans[i] = (len(head) + 1 + lo, hi - lo, lo)
    got = store.graded_run_parts(dict(keys), {i: (a, n) for i, (a, n, _) in spans.items()})
    return {i: (data, got.get(i, ""), spans[i][2] if i in spans else 0)
            for i, data in heads.items() if i not in spans or i in got}


@dataclass(frozen=True, slots=True)
class Head:
    """A kept run's head: its counts per question, and where each question's cells lie."""

    key: str
    removed: list[str]
    # case → (cells, graded, passes, changed, start, length, failing, fails, answered), in the
    # run's order; failing: [name, times, the first one as a dict] of each check that failed
    # or needs a person, in the order first seen; answered: cells that arrived as ok
    questions: dict[str, tuple[int, int, int, bool, int, int, list, int, int]]
    cost: dict[str, list]  # COST figure → [p50, p95, how many cells report it]
    tail: tuple[int, int]  # where the cost line lies in the kept text (start, length)


def read_heads(store: Store, by_id: Mapping[int, Run], questions: Mapping[str, str],
               rules: str, marks: Mapping[int, tuple[int, int]] | None = None
               ) -> dict[int, Head]:
    """The heads of the runs whose kept cells are current (the rest are not kept, or stale);
    ``marks``: the runs' cells marks, if already read."""
    if marks is None:
        marks = store.cell_marks(list(by_id))
    keys = run_keys(store, by_id, questions, rules, marks)
    heads = store.graded_run_heads(keys)
    after = store.cell_marks(list(by_id))  # as in read(): cells that moved meanwhile
    return {i: parse_head(keys[i], head) for i, head in heads.items()
            if after[i] == marks[i] and head.startswith("{")}


def parse_head(key: str, head: str) -> Head:
    data = json.loads(head)
    # the blocks follow the head and its newline; the cost line follows them and its newline
    blocks = max((q[5] + q[6] + 1 for q in data["questions"]), default=0)
    return Head(key, data["removed"], {q[0]: tuple(q[1:]) for q in data["questions"]},
                data["cost"], (len(head) + 1 + blocks, data["cost_chars"]))


def read_costs(store: Store, keys: Mapping[int, str], tails: Mapping[int, tuple[int, int]]
               ) -> dict[int, dict[str, list]]:
    """{run id: each COST figure's sorted values} of the runs kept under exactly these keys:
    the cost line each head says where to find (``Head.tail``), cut out by the database (a
    version of several runs takes its percentiles from all of their values)."""
    return {i: json.loads(line) for i, line in
            store.graded_run_parts(dict(keys), {i: tails[i] for i in keys}).items()}


def keep(store: Store, runs: Mapping[int, Run], keys: Mapping[int, str], rules: str,
         cells: Sequence[Any], removed: Mapping[int, list[str]], heads: bool = False
         ) -> dict[int, str]:
    """Keep the graded cells of each finished run whose cells did not move while graded;
    with ``heads``, return every run's head (kept or not: a running run's too)."""
    # a run whose process is gone reads interrupted: kept (its key holds its cells' mark)
    wanted = [i for i, r in runs.items() if r.shown_status not in NOT_KEPT and i in keys]
    todo = list(runs) if heads else wanted
    if not todo:
        return {}
    now = store.cell_marks(wanted) if wanted else {}
    by_run: dict[int, list[Any]] = {i: [] for i in todo}
    for c in cells:
        if c.run_id in by_run:
            by_run[c.run_id].append(c)
    out = {}
    writable = True
    for i in todo:
        text = encode(by_run[i], removed.get(i, []))
        if heads:
            out[i] = text.partition("\n")[0]
        if writable and i in now and keys[i].endswith(f"|cells={now[i][0]}/{now[i][1]}"):
            # a store that cannot be written: nothing kept, nothing wrong
            writable = store.keep_graded_run(i, rules, keys[i], text)
    return out
