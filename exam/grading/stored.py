"""A stored cell as the graders read it: the one place a cell of the store becomes a ``Reply``.

The runner grades the reply it is about to store exactly as the reports will read it back, so
both read through here (``cell_reply``); the re-grade reads many cells at once (``replies_of``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from exam.reading import mapping_from_dict, read_body
from exam.records import AttemptRow, CellRow
from graders import Reply, Step

if TYPE_CHECKING:
    from exam.bank import Item
    from exam.store import Run


BODY_CHUNK = 500  # cells whose last body one query reads (re-grading field checks)

Key = tuple[int, str, int]  # a cell: (run id, case, repeat)


class RecordedAttempts(Protocol):
    """What reading a stored cell needs of the store."""

    def attempts(self, run_id: int, case_no: str, repeat: int) -> Sequence[AttemptRow]: ...

    def last_bodies(self, keys: Sequence[Key]) -> Mapping[Key, tuple[str | None, bool]]: ...


def final_body(store: RecordedAttempts, cell: CellRow) -> Any:
    """The JSON of a cell's last attempt; None when it was cut, missing or not JSON."""
    return last_json(store.attempts(cell.run_id, cell.case_no, cell.repeat))


def last_json(attempts: Sequence[AttemptRow]) -> Any:
    """The JSON of the last of ``attempts`` as stored; None when it was cut, missing or not
    JSON."""
    if not attempts:
        return None
    return _stored_json(attempts[-1].body, attempts[-1].body_cut)


def _stored_json(body: str | None, cut: bool) -> Any:
    if body is None or cut:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _needs_body(cell: CellRow, item: Item) -> bool:
    return bool(item.question.fields) and cell.run_status == "ok"


def reply_of(store: RecordedAttempts, run: Run, cell: CellRow, item: Item) -> Reply:
    """A stored cell as the graders read it; the body (for field checks) is read again from the
    last attempt through the mapping the run recorded. Many cells: ``replies_of``."""
    return cell_reply(run, cell, final_body(store, cell) if _needs_body(cell, item) else None,
                      item)


def replies_of(store: RecordedAttempts, cells: Iterable[tuple[Run, CellRow, Item]]
               ) -> Iterator[Reply]:
    """``reply_of`` of each (run, cell, question), in order: the bodies field checks read are
    fetched ``BODY_CHUNK`` cells to a query, not one query per cell (4,000 cells of a question
    with fields: 4,000 round trips to PostgreSQL)."""
    held: list[tuple[Run, CellRow, Item]] = []
    wanted: list[Key] = []
    for entry in cells:
        held.append(entry)
        if _needs_body(entry[1], entry[2]):
            wanted.append((entry[1].run_id, entry[1].case_no, entry[1].repeat))
            if len(wanted) >= BODY_CHUNK:
                yield from _with_bodies(store, held, wanted)
                held, wanted = [], []
    yield from _with_bodies(store, held, wanted)


def _with_bodies(store: RecordedAttempts, held: Sequence[tuple[Run, CellRow, Item]],
                 wanted: Sequence[Key]) -> Iterator[Reply]:
    bodies = store.last_bodies(wanted) if wanted else {}
    for run, cell, item in held:
        found = bodies.get((cell.run_id, cell.case_no, cell.repeat))
        raw = _stored_json(*found) if found is not None and _needs_body(cell, item) else None
        yield cell_reply(run, cell, raw, item)


def cell_reply(run: Run, cell: CellRow, raw: Any, item: Item) -> Reply:
    """``reply_of`` given the JSON of the cell's last attempt (``raw``): the runner grades the
    reply it is about to store exactly as the reports will read it back."""
    steps = None if cell.steps is None else tuple(Step(s["tool"], s.get("args") or {})
                                                   for s in cell.steps)
    body = None
    if item.question.fields and cell.run_status == "ok" and raw is not None:
        body = read_body(raw, mapping_from_dict(run.settings.get("reply", {}))).body
    return Reply(text=cell.text, status=cell.status, body=body, steps=steps,
                 attempts=cell.attempts, model_calls=cell.model_calls, tokens=cell.tokens,
                 latency_ms=cell.latency_ms, run_status=cell.run_status,  # type: ignore[arg-type]
                 tokens_estimated=cell.tokens_estimated)
