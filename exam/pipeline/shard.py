"""A second process for a large run: half its cells, under the same lease (issue 19).

One interpreter runs a cell's HTTP, classification, grading and storing under one GIL: at
concurrency 64 against a fast agent, a 10,000-cell run was bound by that one process (a
core busy, a third of a two-core machine idle). ``execute`` (exam/pipeline/runner.py) then
starts a helper process (``python -m exam.pipeline.shard_helper``) for the run and both run their
own share of the missing cells:

- the cells are split by a digest of (question, repeat), so each process knows its own share
  without asking the other, and a cell belongs to exactly one of them;
- the agent's concurrency is split between them (32 + 32 for 64), so together they never
  have more requests in flight than the registry allows; a run with ``min_interval_s``
  (paced) or a concurrency under ``MIN_CONCURRENCY`` is never split;
- the helper writes under the lease the main process holds and renews (``Store.share_lease``):
  its cells are fenced by the same token, so a run taken over by another worker is refused to
  both; only the main process sets the run's status. The helper renews the lease too, so after
  a kill -9 of the main process the replies it still waits for keep the run held (no takeover
  sends those cells again) until it has stored them and exits;
- the helper stops (what it sent is stored first) on SIGTERM or SIGINT (Ctrl-C reaches both),
  and when the main process dies (Linux's parent-death signal; elsewhere it notices its
  parent is gone): a run left by both is resumable like any other;
- each cell the helper finishes is one line on its stdout, its run status: the main process
  counts it in its progress. Its stderr is its last words when it fails.

``EXAM_RUN_PROCESSES``: ``1`` (the default: never split) or ``2`` (split a run that
qualifies). Off by default because it trades memory for speed: two interpreters hold about
1.8× the memory of one (a 10,000-cell run: ~90 MB and ~75 MB), and it pays only where the
harness itself is the bottleneck, an agent answering in tens of milliseconds at high
concurrency; against agents that take seconds a reply one process keeps up. Only on
PostgreSQL: a SQLite file has one writer at a time.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from exam.pipeline.registry import Agent

ENV = "EXAM_RUN_PROCESSES"
MIN_CONCURRENCY = 16  # below it one process keeps up with the agent
MIN_CELLS = 500  # below it a second interpreter's start (~0.5 s) costs more than it saves
# how long the main process waits for a stopped helper to store and exit, beyond the agent's
# timeout_s (its requests in flight end within that)
STOP_WAIT_S = 60.0
# a helper's exit status: what became of its share
OK, FAILED, STORE_LOST, TAKEN = 0, 1, 3, 4


def shard_of(case_no: str, repeat: int, count: int) -> int:
    """Which of ``count`` processes runs a cell: the same answer in every process."""
    return zlib.crc32(f"{case_no}\x00{repeat}".encode()) % count


def processes_for(agent: Agent, cells: int, leased: bool, backend: str) -> int:
    """How many processes run ``cells`` missing cells of a run of ``agent`` (1 or 2), on a
    store of ``backend``: PostgreSQL only (a SQLite file has one writer at a time, so a
    second process measured no faster: 10,000 cells, 1.36× either way)."""
    setting = os.environ.get("EXAM_RUN_PROCESSES", "1").strip()  # ENV
    if setting != "2" or not leased or agent.blocked or backend != "postgresql":
        return 1
    if agent.min_interval_s or agent.concurrency < MIN_CONCURRENCY or cells < MIN_CELLS:
        return 1  # paced runs keep one clock; small ones are not worth a second start
    return 2


def helper_concurrency(concurrency: int) -> int:
    """The helper's share of the agent's concurrency (the main process keeps the rest)."""
    return concurrency // 2


@dataclass(frozen=True, slots=True)
class _Arrived:
    """What the progress display reads of a cell the helper stored."""

    run_status: str


class Helper:
    """The second process of one run, seen from the main one."""

    def __init__(self, db: str, job: Any, token: int, lease_s: float,
                 on_cell: Callable[[int, _Arrived], None] | None) -> None:
        """``job``: the runner's Job (its run, agent and questions): the helper works from
        this process's reading of the bank, never a second one (the file may change)."""
        agent = job.agent
        self.run_id = job.run.id
        self.concurrency = helper_concurrency(agent.concurrency)  # its share; the rest is ours
        self.stderr = b""
        self.stopped = False
        self.timeout_s = agent.timeout_s
        config = {"db": db, "run_id": job.run.id, "job": replace(job, agent=replace(
            agent, concurrency=self.concurrency)), "token": token, "lease_s": lease_s,
            "parent": os.getpid()}
        # the store's URL and the agent's headers go through a pipe, never the command line
        self.proc = subprocess.Popen([sys.executable, "-m", "exam.pipeline.shard_helper"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        assert self.proc.stdin is not None
        self.proc.stdin.write(pickle.dumps(config))
        self.proc.stdin.close()
        self._readers = [threading.Thread(target=self._cells, args=(on_cell,), daemon=True),
                         threading.Thread(target=self._errors, daemon=True)]
        for t in self._readers:
            t.start()

    def _cells(self, on_cell: Callable[[int, _Arrived], None] | None) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            status = line.decode(errors="replace").strip()
            if status and on_cell is not None:
                on_cell(self.run_id, _Arrived(status))

    def _errors(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()[-4000:]

    def stop(self) -> None:
        """Tell it to stop: it sends nothing more and exits once what it sent is stored."""
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        """Its exit status, once it has exited and its output is read."""
        try:
            code = self.proc.wait(timeout=self.timeout_s + STOP_WAIT_S if self.stopped else None)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for t in self._readers:
            t.join(timeout=5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return code

    def last_words(self) -> str:
        lines = self.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exited with status {self.proc.returncode}"
