"""RequestGate: bound requests in flight and space request starts, across threads.

A semaphore alone bounds concurrency but not pace; the model provider's rate limit
is about pace. Starts are serialised under a lock: a thread waits out the interval while
holding it and stamps the *actual* start time, so a late wake-up can never bring the next
start closer than the interval.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class Stopped(Exception):
    """The gate was closed (the run was told to stop) while this request waited for a slot:
    it was never sent."""


class RequestGate:
    def __init__(self, concurrency: int = 1, min_interval_s: float = 0.0,
                 stop: threading.Event | None = None):
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._stop = stop
        self._lock = threading.Lock()
        self._interval = max(0.0, min_interval_s)
        self._next_start = 0.0
        # the latest start stamps (monotonic), so the pacing can be checked on a busy machine
        self.starts: deque[float] = deque(maxlen=10_000)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of ``concurrency`` slots; the body starts no sooner than the interval allows.
        Raises Stopped, sending nothing, once ``stop`` is set: a runner has more threads than
        slots, and those waiting here when it is told to stop must not start new requests."""
        with self._slots:
            if self._stop is not None and self._stop.is_set():
                raise Stopped()
            with self._lock:
                wait = self._next_start - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                now = time.monotonic()
                self.starts.append(now)
                self._next_start = now + self._interval
            yield
