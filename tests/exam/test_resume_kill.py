"""A run killed with kill -9 mid-way is finished by `exam resume`: nothing lost, nothing twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from tests.exam.helpers import registry_env, write_bank
from tests.fakes.agent import FakeAgent


def exam_cmd(*args):
    return [sys.executable, "-m", "exam.cli", *args]


def test_kill_9_then_resume_completes_without_duplicates(tmp_path):
    db = tmp_path / "exam.db"
    bank = write_bank(tmp_path, ["ok"] * 10)
    with FakeAgent(delay_s=0.1) as fake:
        env = registry_env(tmp_path, fake.url, bank, concurrency=2)
        proc = subprocess.Popen(exam_cmd("run", "T", "--version", "v1", "--repeats", "3"),
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        stored = 0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=5) as con:
                        stored = con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
                except sqlite3.OperationalError:
                    continue
                if stored >= 8:
                    break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert 8 <= stored < 30, "the run must be killed mid-way for this test to mean anything"

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
    assert len(cells) == 30 and all(n == 1 for *_, n in cells)
    assert status == "done" and integrity == "ok"
    # only what was missing went out again (plus the few that were in flight at the kill)
    assert sent_on_resume <= 30 - stored + 2


def test_ctrl_c_stops_cleanly_keeps_what_arrived_and_says_how_to_resume(tmp_path):
    db = tmp_path / "exam.db"
    bank = write_bank(tmp_path, ["ok"] * 10)
    with FakeAgent(delay_s=0.2) as fake:
        env = registry_env(tmp_path, fake.url, bank, concurrency=2)
        proc = subprocess.Popen(exam_cmd("run", "T", "--version", "v1", "--repeats", "2"),
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(fake.requests) < 4:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130  # Ctrl-C, never 1 (a failed verdict)
    assert "interrupted: every reply that arrived is stored; finish with: exam resume 1" in err
    assert "Traceback" not in err
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
        status = con.execute("SELECT status FROM runs").fetchone()[0]
        sent = len(fake.requests)
    assert status == "interrupted"
    assert 4 <= stored < 20 and stored == sent  # every request that went out was kept
