"""The second process of a split run (exam/pipeline/shard.py): its share of the run's cells.

Started by ``shard.Helper`` as ``python -m exam.pipeline.shard_helper``, its configuration pickled
on its stdin by the main process (a pipe of its own: the store's URL and the agent's headers
never reach a command line). A module of its own because it runs the runner, which starts it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading

from exam.errors import ExamError, LeaseLost, StoreUnavailable
from exam.pipeline.lease import beat_every, renewed
from exam.pipeline.runner import TAKEN_OVER, execute
from exam.pipeline.shard import FAILED, OK, STORE_LOST, TAKEN
from exam.records import RunState
from exam.store import Store


def _die_with_parent(parent: int) -> None:
    """SIGTERM this process when the main one dies (a kill -9 gives it no chance to say)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)


def _to_nowhere() -> None:
    """This process's stdout and stderr to /dev/null: their pipes' reader is gone."""
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
        os.dup2(null, stream.fileno())
    os.close(null)


def stopped_by_signals(stop: threading.Event, parent: int) -> None:
    """``stop`` set on SIGTERM or SIGINT, and when ``parent`` dies, by a thread of its own.

    A signal handler runs between two bytecodes of the main thread, perhaps inside
    ``stop.set()`` itself: the terminal's SIGINT and the SIGTERM of the main process dying
    come together, and a handler calling ``stop.set()`` there waited for the Event's lock,
    held by the frame it interrupted, for good (a helper hung after Ctrl-C). The handler only
    appends (no lock); the thread sets ``stop``."""
    signalled: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        signalled.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    _die_with_parent(parent)

    def watch() -> None:  # a signal, or the parent gone where there is no parent-death signal
        while not stop.wait(0.05):
            if signalled or os.getppid() != parent:
                stop.set()

    threading.Thread(target=watch, daemon=True, name="exam-stop").start()


def main() -> int:
    """Run this process's share of the run's missing cells, then exit (``shard`` statuses)."""

    config = pickle.load(sys.stdin.buffer)  # from the main process only (a pipe of its own)
    stop = threading.Event()
    stopped_by_signals(stop, config["parent"])
    out = sys.stdout

    def arrived(_run_id: int, cell) -> None:
        try:
            out.write(f"{cell.run_status}\n")
            out.flush()
        except (BrokenPipeError, ValueError):
            # the main process is gone (kill -9): nobody reads this pipe any more. Stop as at
            # its death, store what is in flight, and write nothing more there (a traceback
            # into a closed pipe, or the flush at exit, would end this process mid-store)
            stop.set()
            _to_nowhere()

    store = Store(config["db"], checked=True)
    try:
        store.share_lease(config["run_id"], config["token"], config["lease_s"])
        job = config["job"]  # the main process's: one reading of the bank for both
        # this process renews the lease too: once the main process is gone (kill -9), the
        # replies this one still waits for (up to the agent's timeout_s, which may be longer
        # than a lease) keep the run held, so no takeover sends those cells a second time
        with renewed(store, [config["run_id"]], beat_every(config["lease_s"])):
            final = execute(store, [job], arrived, stop, shard=(1, 2))
    except LeaseLost as exc:  # taken over before this process stored anything
        print(f"{exc}", file=sys.stderr, flush=True)
        return TAKEN
    except StoreUnavailable as exc:  # away at the start: the run is resumable, not failed
        print(f"{exc}", file=sys.stderr, flush=True)
        return STORE_LOST
    except ExamError as exc:
        print(f"{exc}", file=sys.stderr, flush=True)
        return FAILED
    finally:
        store.close()
    status = final.get(config["run_id"])
    return {TAKEN_OVER: TAKEN, "lost": STORE_LOST, RunState.FAILED: FAILED}.get(status, OK)


if __name__ == "__main__":
    sys.exit(main())
