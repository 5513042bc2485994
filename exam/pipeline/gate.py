"""RequestGate: bound requests in flight and space request starts, across threads.

A semaphore alone bounds concurrency but not pace; the model provider's rate limit
is about pace. Starts are serialised under a lock: a thread waits out the interval while
holding it and stamps the *actual* start time, so a late wake-up can never bring the next
start closer than the interval.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque


class Stopped(Exception):
    """The gate was closed (the run was told to stop) while this request waited for a slot,
    its turn or its back-off: it was never sent. Its cell is not stored (an earlier attempt
    that asked to be retried is let go): ``exam resume`` runs it again."""


class RequestGate:
    def __init__(self, concurrency: int = 1, min_interval_s: float = 0.0,
                 stop: threading.Event | None = None):
        # the slots are tokens in a C queue: taking one blocks in C without the GIL, and handing
        # it back wakes one waiter (threading's Semaphore is Python over a Condition: with more
        # threads than slots, ~5% of a 10,000-cell run's CPU went to its bookkeeping)
        self._slots: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(max(1, concurrency)):
            self._slots.put(None)
        self._stop = stop
        self._lock = threading.Lock()
        self._interval = max(0.0, min_interval_s)
        self._next_start = 0.0
        # the latest start stamps (monotonic), so the pacing can be checked on a busy machine
        self.starts: deque[float] = deque(maxlen=10_000)

    def slot(self) -> RequestGate:
        """``with gate.slot():`` holds one of ``concurrency`` slots; the body starts no sooner
        than the interval allows. Raises Stopped, sending nothing, once ``stop`` is set (at
        once, even in the middle of the interval): a runner has more threads than slots, and
        those waiting here when it is told to stop must not start new requests. (The slot is
        a token in the gate's queue, so the gate itself is the context manager.)"""
        return self

    def pause(self, seconds: float) -> None:
        """Sleep ``seconds`` (a retry's back-off); raises Stopped at once when told to stop:
        a cell waiting to try again (a Retry-After is believed up to 60 s) would only wait to
        be refused a slot."""
        if self._stop is None:
            time.sleep(seconds)
        elif self._stop.wait(seconds):
            raise Stopped()

    def __enter__(self) -> None:
        self._slots.get()
        try:
            with self._lock:
                wait = self._next_start - time.monotonic()
                # told to stop while waiting for a slot, for the lock or out the interval (a
                # thread holding a slot may wait min_interval_s here): nothing is sent
                if self._stop is None:
                    if wait > 0:
                        time.sleep(wait)
                else:
                    stopped = self._stop.wait(wait) if wait > 0 else self._stop.is_set()
                    if stopped:
                        raise Stopped()
                now = time.monotonic()
                self.starts.append(now)
                self._next_start = now + self._interval
        except BaseException:
            self._slots.put(None)
            raise

    def __exit__(self, *exc: object) -> None:
        self._slots.put(None)
