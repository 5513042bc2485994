"""A bounded load generator for 127.0.0.1 only: N requests over a thread pool, then stop.

Each client thread keeps one connection (a ``requests.Session``) and opens it with a request
that is not timed; the N timed requests are then sent on open connections, so the latencies
are the service's, not the cost of 8 clients connecting at the same instant. The untimed
requests also take most of what a route does only the first time in a worker (its first use
of its store, a report answer or chart made and then kept): such costs are mostly in neither
p50 nor p99 (a worker no untimed request reached pays them in a timed one).
It does fall inside ``seconds``, so ``rate`` (timed requests over the whole time) is a little
low, never high.

Used by bench/run.py (service figures) and tests/reliability/test_load.py (error count, p99).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests


@dataclass(frozen=True)
class LoadResult:
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def _ok(session: requests.Session, url: str, headers: dict[str, str]) -> bool:
    try:
        return session.get(url, headers=headers, timeout=10).status_code == 200
    except requests.RequestException:
        return False


def run_load(urls: Sequence[str], headers: dict[str, str], total: int = 500,
             concurrency: int = 8, timeout_s: float = 60.0) -> LoadResult:
    for url in urls:
        host = urlsplit(url).hostname
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"load is only ever sent to this machine, not {host}")
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    local = threading.local()
    deadline = time.monotonic() + timeout_s

    def one(i: int) -> None:
        nonlocal errors
        if time.monotonic() > deadline:
            return
        url = urls[i % len(urls)]
        session = getattr(local, "s", None)
        if session is None:
            session = local.s = requests.Session()
            # each client's first request opens its connection: sent, not timed (as wrk opens
            # its connections before it measures); it still counts as an error if it fails
            if not _ok(session, url, headers):
                with lock:
                    errors += 1
        t0 = time.perf_counter()
        ok = _ok(session, url, headers)
        ms = (time.perf_counter() - t0) * 1000
        with lock:
            latencies.append(ms)
            if not ok:
                errors += 1

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(total)))
    seconds = time.perf_counter() - start
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0.0

    return LoadResult(len(latencies), errors, seconds, pct(0.50), pct(0.99))
