"""Holding runs while working on them: one thread renews this process's leases.

A run is held by a lease (``Store.claim_run`` for a worker, ``Store.hold_run`` for
``exam run`` and ``exam resume``) that runs out ``LEASE_S`` after its last renewal. While the
leases are renewed, the runs read ``running`` everywhere and nobody else takes them; once this
process is gone (kill -9, a crash, a laptop closed), they read ``interrupted`` on every host
within a lease, and a worker (a queued run's) or ``exam resume`` (one started by ``exam run``)
finishes the missing cells.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from exam.errors import StoreError
from exam.store import Store

log = logging.getLogger("exam.pipeline.lease")
HEARTBEAT_S = 5.0  # several beats per lease (30 s), however busy the process


def beat_every(lease_s: float) -> float:
    """How often a lease of ``lease_s`` is renewed: several beats per lease, however short
    (``exam worker --lease`` takes 1 s), and every ``HEARTBEAT_S`` at most."""
    return min(HEARTBEAT_S, lease_s / 5)


def _beat(store: Store, run_ids: list[int], stop: threading.Event, every_s: float) -> None:
    live = list(run_ids)
    while live and not stop.wait(every_s):
        for run_id in list(live):
            try:
                if not store.heartbeat(run_id):
                    log.warning("run %s: the lease was taken over by another process", run_id)
                    live.remove(run_id)
            except StoreError as exc:  # the store away for a moment: one line, not a traceback
                log.warning("heartbeat for run %s failed: %s", run_id, exc)
            except Exception:  # a missed beat is not worth killing the run for
                log.exception("heartbeat for run %s failed", run_id)


@contextmanager
def renewed(store: Store, run_ids: Iterable[int], every_s: float = HEARTBEAT_S) -> Iterator[None]:
    """Renew this Store's leases on ``run_ids`` every ``every_s`` until the block ends."""
    stop = threading.Event()
    beat = threading.Thread(target=_beat, args=(store, list(run_ids), stop, every_s),
                            daemon=True, name="exam-lease")
    beat.start()
    try:
        yield
    finally:
        stop.set()
