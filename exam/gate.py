"""RequestGate (seed 002): bound requests in flight and space request starts, across threads.

A semaphore alone bounds concurrency but not pace; the model provider's rate limit
is about pace. Each start reserves the next slot under a lock, then sleeps outside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class RequestGate:
    def __init__(self, concurrency: int = 1, min_interval_s: float = 0.0, clock=time.monotonic,
                 sleep=time.sleep):
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._lock = threading.Lock()
        self._interval = max(0.0, min_interval_s)
        self._next_start = 0.0
        self._clock = clock
        self._sleep = sleep

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of ``concurrency`` slots; the body starts no sooner than the interval allows."""
        with self._slots:
            with self._lock:
                now = self._clock()
                start = max(now, self._next_start)
                self._next_start = start + self._interval
            if start > now:
                self._sleep(start - now)
            yield
