"""A run killed with kill -9 mid-way is finished by `exam resume`: nothing lost, nothing twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.exam.helpers import (
    registry_env,
    run_status,
    sigint_reaches_children,
    stored_cells,
    wait_for,
    write_bank,
)
from tests.fakes.agent import FakeAgent

pytestmark = pytest.mark.slow  # `exam run` processes killed with -9 and SIGINT, then resumed


def exam_cmd(*args):
    return [sys.executable, "-m", "exam", *args]


@contextmanager
def running(*args, **kw) -> Iterator[subprocess.Popen]:
    """`exam` in a child process that Ctrl-C reaches, killed if the test fails mid-way."""
    with sigint_reaches_children():
        proc = subprocess.Popen(exam_cmd(*args), **kw)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_kill_9_then_resume_completes_without_duplicates(tmp_path):
    db = tmp_path / "exam.db"
    bank = write_bank(tmp_path, ["ok"] * 10)
    # the agent answers 8 requests and holds the rest: the kill lands mid-run, every time
    with FakeAgent(hold_after=8) as fake:
        env = registry_env(tmp_path, fake.url, bank, concurrency=2, timeout_s=120)
        with running("run", "T", "--version", "v1", "--repeats", "3", env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            fake.wait_held(2)  # both workers are waiting on a reply
            wait_for(lambda: stored_cells(db) == 8, "the 8 answered cells to be stored")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        stored = stored_cells(db)
        fake.release()

        listing = subprocess.run(exam_cmd("runs", "--format", "json"), env=env,
                                 capture_output=True, text=True, check=True)
        assert '"status": "interrupted"' in listing.stdout

        before = len(fake.requests)
        done = subprocess.run(exam_cmd("resume", "1", "--format", "json"), env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        sent_on_resume = len(fake.requests) - before

    with sqlite3.connect(db) as con:
        cells = con.execute("SELECT case_no, repeat, COUNT(*) FROM cells GROUP BY 1, 2").fetchall()
        status = con.execute("SELECT status FROM runs WHERE id=1").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    assert stored == 8
    assert len(cells) == 30 and all(n == 1 for *_, n in cells)
    assert status == "done" and integrity == "ok"
    # exactly what was missing went out again: the two held requests were never stored
    assert sent_on_resume == 30 - stored


def test_ctrl_c_stops_cleanly_keeps_what_arrived_and_says_how_to_resume(tmp_path):
    db = tmp_path / "exam.db"
    bank = write_bank(tmp_path, ["ok"] * 10)
    with FakeAgent(hold_after=4) as fake:
        env = registry_env(tmp_path, fake.url, bank, concurrency=2, timeout_s=120)
        with running("run", "T", "--version", "v1", "--repeats", "2", env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            fake.wait_held(2)
            wait_for(lambda: stored_cells(db) == 4, "the 4 answered cells to be stored")
            proc.send_signal(signal.SIGINT)
            # the held replies arrive only once the run has taken the Ctrl-C in
            wait_for(lambda: run_status(db) == "interrupted", "the run to be marked interrupted")
            fake.release()
            out, err = proc.communicate(timeout=60)
            sent = len(fake.requests)
    assert proc.returncode == 130, err  # Ctrl-C, never 1 (a failed verdict)
    assert "interrupted: every reply that arrived is stored; finish with: exam resume 1" in err
    assert "Traceback" not in err
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
        status = con.execute("SELECT status FROM runs").fetchone()[0]
    assert status == "interrupted"
    # the two replies in flight at Ctrl-C were waited for and kept; nothing more was sent
    assert (sent, stored) == (6, 6)


def lease_of(db) -> tuple[str | None, float | None, float | None, str]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT owner, heartbeat_at, lease_until, status FROM runs "
                           "WHERE id=1").fetchone()


def test_a_run_killed_on_another_host_is_held_until_its_lease_runs_out_then_resumed_there(tmp_path):
    """`exam run` renews a lease while it works; killed on one host (a laptop on a shared
    store), the run reads running elsewhere only until its lease runs out, and `exam resume` on
    another host then finishes it. Before, it read running on every other host for ever and
    `exam resume` there refused it for ever."""
    db = tmp_path / "exam.db"
    bank = write_bank(tmp_path, ["ok"] * 6)
    with FakeAgent(hold_after=4) as fake:
        env = registry_env(tmp_path, fake.url, bank, concurrency=2, timeout_s=120)
        laptop, server = {**env, "EXAM_HOST_ID": "laptop"}, {**env, "EXAM_HOST_ID": "server"}
        with running("run", "T", "--version", "v1", "--repeats", "2", env=laptop,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            fake.wait_held(2)
            wait_for(lambda: stored_cells(db) == 4, "the 4 answered cells to be stored")
            first = lease_of(db)
            assert first[0] == f"laptop:{proc.pid}" and first[2] is not None
            # the lease is renewed while the run works (its replies are held meanwhile)
            wait_for(lambda: lease_of(db)[2] > first[2], "the lease to be renewed", timeout=90)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        fake.release()

        def exam(*args):
            return subprocess.run(exam_cmd(*args), env=server, capture_output=True, text=True)

        listing = exam("runs", "--format", "json")
        assert '"status": "running"' in listing.stdout  # its lease has not run out yet
        refused = exam("resume", "1")
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert "run 1 is still running in process laptop:" in refused.stderr
        assert "the lease runs out within" in refused.stderr
        before = len(fake.requests)
        assert before == 6 and stored_cells(db) == 4  # nothing sent, nothing stored

        with sqlite3.connect(db) as con:  # the lease's 30 s pass
            con.execute("UPDATE runs SET lease_until = lease_until - 3600 WHERE id=1")
        assert '"status": "interrupted"' in exam("runs", "--format", "json").stdout
        done = exam("resume", "1", "--format", "json")
        assert done.returncode == 0, done.stderr
        sent_on_resume = len(fake.requests) - before

    with sqlite3.connect(db) as con:
        cells = con.execute("SELECT case_no, repeat, COUNT(*) FROM cells GROUP BY 1, 2").fetchall()
    owner, _, lease_until, status = lease_of(db)
    assert len(cells) == 12 and all(n == 1 for *_, n in cells)
    assert (status, lease_until, owner.startswith("server:")) == ("done", None, True)
    assert sent_on_resume == 12 - 4
