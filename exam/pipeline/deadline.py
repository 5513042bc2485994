"""An absolute deadline for one HTTP attempt, from connect to the last byte.

requests' read timeout bounds each socket read, not the attempt: an agent that sends a header
line every second, or a byte of body every 4.9 s, resets it again and again. Here a timer shuts
down the attempt's socket when the time is up; whatever read is blocked on it ends at once, and
the caller, seeing ``fired``, records a timeout. The sockets are found by connection classes
that register each one they open or reuse with the deadline of the thread sending on it.

One watcher thread per process keeps every pending deadline (a thread started and cancelled per
attempt cost ~8% of a 10,000-cell run's CPU).
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time

import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_current = threading.local()


def _shut(sock: socket.socket) -> None:
    try:
        # the plain socket's shutdown, also for an SSLSocket: wakes a read blocked in another
        # thread (close() would not), and ends a TLS session without a polite goodbye
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed, or never connected


class _Watcher:
    """Fires each pending deadline when its time comes, from one daemon thread.

    Pending deadlines are kept by number; the heap holds (when, number) and may keep numbers
    of deadlines already ended (skipped when they come up, and dropped whenever the heap grows
    past twice the pending ones, so memory stays flat however many attempts a run makes).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int]] = []
        self._pending: dict[int, Deadline] = {}
        self._numbers = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline, seconds: float) -> int:
        when = time.monotonic() + max(0.0, seconds)
        with self._cond:
            number = next(self._numbers)
            self._pending[number] = deadline
            heapq.heappush(self._heap, (when, number))
            if len(self._heap) > 2 * len(self._pending) + 64:
                self._heap = [e for e in self._heap if e[1] in self._pending]
                heapq.heapify(self._heap)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="exam-deadlines",
                                                daemon=True)
                self._thread.start()
            elif self._heap[0][1] == number:  # sooner than what the watcher waits for
                self._cond.notify()
        return number

    def remove(self, number: int) -> None:
        with self._cond:
            self._pending.pop(number, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] not in self._pending:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    when, number = self._heap[0]
                    wait = when - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        deadline = self._pending.pop(number)
                        break
                    self._cond.wait(wait)
            deadline._fire()  # outside the watcher's lock: it takes the deadline's own


_watcher = _Watcher()


def _new_watcher_in_child() -> None:
    """A forked child has no watcher thread (only the forking thread survives a fork)."""
    global _watcher
    _watcher = _Watcher()


os.register_at_fork(after_in_child=_new_watcher_in_child)


class Deadline:
    """``with Deadline(seconds) as d:`` around one attempt; ``d.fired`` says it ran out."""

    def __init__(self, seconds: float):
        self.fired = False
        self._done = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._seconds = seconds
        self._number: int | None = None

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._number = _watcher.add(self, self._seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._number is not None:
            _watcher.remove(self._number)
        _current.deadline = None
        with self._lock:
            self._done = True
            self._socks.clear()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            self._socks.append(sock)
            if self.fired:  # connected after the time was up
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            for sock in self._socks:
                _shut(sock)


def _attach(sock: socket.socket | None) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.attach(sock)


class _Watched:
    """Registers the connection's socket when it is opened and each time a request is sent."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        _attach(sock)
        return sock

    def request(self, *args, **kwargs):  # a kept-alive connection is reused without _new_conn
        _attach(self.sock)  # type: ignore[attr-defined]
        return super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Watched, HTTPConnection):
    pass


class _HTTPSConnection(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter whose connections answer to the sending thread's ``Deadline``."""

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
