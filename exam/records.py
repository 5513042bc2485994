"""What a run records: an attempt, a cell, and the caps on what is kept of them.

The runner's transport builds these and the store writes them; both import them from here, so
the transport never needs the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BODY_CAP_BYTES = 1_000_000  # raw bodies stored up to this size; a note marks a cut body
HEADER_CAP_CHARS = 200  # a header value stored (Content-Type): a longer one is cut, marked …
TEXT_CAP_CHARS = 200_000  # a cell's reply text; a longer one is a bad_reply, its start kept


class RunState:
    """A run's lifecycle (``runs.status``): queued → running → done | failed | interrupted.
    Plain strings, as the store, the API and the CLI hold them; named here once."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    ALL = (QUEUED, RUNNING, DONE, INTERRUPTED, FAILED)
    FINISHED = (DONE, FAILED, INTERRUPTED)  # a run that changes no more by itself
    LIVE = (RUNNING, QUEUED)  # a run whose cells still change


# the run statuses of cells that did not arrive: `exam resume --retry-failed` runs them again
RETRY_STATUSES = ("blocked", "timeout", "http_error", "harness_error")


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One POST of a cell as it happened: status, time taken, error, and the body (capped)."""

    n: int
    started_at: float
    http_status: int | None
    latency_ms: float
    error: str
    content_type: str | None
    body: str | None
    body_bytes: int | None
    body_cut: bool


@dataclass(frozen=True, slots=True)
class CellRow:
    """One question × repeat of a run: its run status and what was read of the last reply."""

    run_id: int
    case_no: str
    repeat: int
    question_digest: str
    run_status: str
    error: str
    text: str | None
    status: str | None
    truncated: bool
    steps: list[dict[str, Any]] | None
    attempts: int
    model_calls: int | None
    tokens: int | None
    latency_ms: float | None
    completed_at: float
    tokens_estimated: bool = False  # the tokens are n8n's estimate, not the provider's count
    usage_note: str = ""  # where model calls and tokens came from, or why they are unknown


@dataclass(frozen=True, slots=True)
class CachedGrade:
    """A row of the store's grade cache: the grade of one reply to one question under one set
    of rules (exam.reports.regrade keys them)."""

    rules: str
    reply_key: str
    question_key: str
    verdict: str  # '' for no verdict
    checks: str  # the checks as their JSON line


def cap_body(body: str | None) -> tuple[str | None, int | None, bool]:
    """(the body kept, its size in bytes, whether it was cut) under BODY_CAP_BYTES."""
    if body is None:
        return None, None, False
    raw = body.encode("utf-8", "replace")
    if len(raw) <= BODY_CAP_BYTES:
        return body, len(raw), False
    return raw[:BODY_CAP_BYTES].decode("utf-8", "ignore"), len(raw), True


def cap_text(text: str | None) -> tuple[str | None, bool]:
    """(the text kept, whether it was cut) under TEXT_CAP_CHARS."""
    if text is None or len(text) <= TEXT_CAP_CHARS:
        return text, False
    return text[:TEXT_CAP_CHARS], True
