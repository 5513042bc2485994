from __future__ import annotations

import pytest


@pytest.fixture
def pauses(monkeypatch) -> list[float]:
    """The back-off of each retry as the runner asks the gate to wait it (``RequestGate.pause``),
    recorded and not waited: a test of what is retried, and how often, need not sleep 0.5 s,
    1 s, 2 s… between its tries. Told to stop, the gate still raises Stopped at once. (A test
    of the wait itself — test_429_honours_retry_after, the stop during a 60 s Retry-After —
    does not use this.)"""
    from exam.pipeline.gate import RequestGate, Stopped

    asked: list[float] = []

    def pause(gate: RequestGate, seconds: float) -> None:
        asked.append(seconds)
        if gate._stop is not None and gate._stop.is_set():
            raise Stopped()

    monkeypatch.setattr(RequestGate, "pause", pause)
    return asked
