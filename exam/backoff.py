"""How long to wait before trying again: one rule for the agents' webhooks and LINE's API."""

from __future__ import annotations

MAX_RETRY_AFTER_S = 60.0  # a server's Retry-After is believed up to this


def backoff_s(attempt_number: int, retry_after: float | None = None) -> float:
    """Seconds before try ``attempt_number + 1``: the server's Retry-After when it sent one,
    else 0.5 s doubling per try, at most 8 s."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER_S)
    return min(0.5 * 2 ** (attempt_number - 1), 8.0)
