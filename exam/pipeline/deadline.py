"""An absolute deadline for one HTTP attempt, from connect to the last byte.

requests' read timeout bounds each socket read, not the attempt: an agent that sends a header
line every second, or a byte of body every 4.9 s, resets it again and again. Here a timer shuts
down the attempt's socket when the time is up; whatever read is blocked on it ends at once, and
the caller, seeing ``fired``, records a timeout. The sockets are found by connection classes
that register each one they open or reuse with the deadline of the thread sending on it.
"""

from __future__ import annotations

import socket
import threading

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


class Deadline:
    """``with Deadline(seconds) as d:`` around one attempt; ``d.fired`` says it ran out."""

    def __init__(self, seconds: float):
        self.fired = False
        self._done = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
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
