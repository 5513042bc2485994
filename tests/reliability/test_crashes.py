"""kill -9 at random points: after `exam resume` (or the next worker) nothing is lost or doubled."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import time

from exam.pipeline.registry import load_registry
from exam.pipeline.runner import queue_run
from exam.store import Store
from tests.exam.helpers import registry_env, stored_cells, wait_for, write_bank
from tests.fakes.agent import FakeAgent
from tests.reliability.conftest import LONG

# three kills: one at a random instant (start-up, run creation: trial 0, every fifth) and two
# at a random point of progress; EXAM_LONG_TESTS=1 kills at 20
TRIALS = 20 if LONG else 3
QUESTIONS, REPEATS = 10, 4


def exam(*args):
    return [sys.executable, "-m", "exam", *args]


def setup(tmp_path, url):
    # a held request must never time out into a stored cell
    return registry_env(tmp_path, url, write_bank(tmp_path, ["ok"] * QUESTIONS), concurrency=4,
                        timeout_s=120)


def check_db(db) -> tuple[int, int, str, list[str]]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT case_no, repeat, COUNT(*) FROM cells GROUP BY 1, 2").fetchall()
        dupes = sum(1 for *_, n in rows if n > 1)
        orphans = con.execute("SELECT COUNT(*) FROM attempts a LEFT JOIN cells c ON "
                              "a.run_id=c.run_id AND a.case_no=c.case_no AND a.repeat=c.repeat "
                              "WHERE c.case_no IS NULL").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        statuses = [r[0] for r in con.execute("SELECT status FROM runs")]
    return len(rows), dupes + orphans, integrity, statuses


def test_runner_killed_at_random_points_then_resumed(tmp_path, table):
    """Most kills land at a random point of progress (after k of the cells, k random); every
    fifth is purely time-based, early, to hit start-up and run creation too."""
    rng = random.Random(20261129)
    total = QUESTIONS * REPEATS
    outcomes = {"mid-run": 0, "before the run began": 0, "after it finished": 0}
    stored_at_kill = []
    for trial in range(TRIALS):
        work = tmp_path / f"t{trial}"
        work.mkdir()
        db = work / "exam.db"
        timed = trial % 5 == 0
        target = rng.randint(1, total - 1)
        # the agent answers `target` requests and holds the rest, so a progress-based kill
        # lands after exactly that many cells however slow the machine is
        with FakeAgent(delay_s=0.05, hold_after=None if timed else target) as fake:
            env = setup(work, fake.url)
            proc = subprocess.Popen(exam("run", "T", "--version", "v1", "--repeats",
                                         str(REPEATS)), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                if timed:
                    time.sleep(rng.uniform(0.05, 0.8))  # a random instant, start-up included
                else:
                    fake.wait_held(1)
                    wait_for(lambda: stored_cells(db) == target,  # noqa: B023 - used at once
                             f"{target} cells to be stored")
            finally:
                proc.kill()  # SIGKILL
                proc.wait()
            fake.release()
            cells_before = stored_cells(db)
            if not timed:
                assert cells_before == target
            runs = Store(db).list_runs() if db.exists() else []
            if not runs:
                outcomes["before the run began"] += 1
                continue
            outcomes["mid-run" if cells_before < total else "after it finished"] += 1
            stored_at_kill.append(cells_before)
            done = subprocess.run(exam("resume", str(runs[0].id), "--format", "json"), env=env,
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        cells, bad, integrity, statuses = check_db(db)
        assert (cells, bad, integrity, statuses) == (total, 0, "ok", ["done"])
    assert outcomes["mid-run"] >= TRIALS // 2
    table("crashes", f"`exam run` killed with kill -9 at a random point, then `exam resume` "
                     f"({QUESTIONS} questions × {REPEATS} repeats)", TRIALS,
          f"{outcomes['mid-run']} killed mid-run (with {min(stored_at_kill)}–"
          f"{max(stored_at_kill)} of {total} cells stored), {outcomes['before the run began']} "
          f"before the run began, {outcomes['after it finished']} after it finished; every run "
          "complete, no cell missing or duplicated, integrity_check ok")


def test_worker_killed_mid_run_is_resumed_by_the_next_worker(tmp_path, table):
    trials = 5 if LONG else 2
    for trial in range(trials):
        work = tmp_path / f"w{trial}"
        work.mkdir()
        with FakeAgent(hold_after=8) as fake:
            env = setup(work, fake.url)
            store = Store(work / "exam.db")
            agent = load_registry(env["EXAM_AGENTS"], env=env).get("T")
            run_id = queue_run(store, agent, "v1", repeats=REPEATS)
            first = subprocess.Popen(exam("worker"), env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            try:
                fake.wait_held(4)  # all four of its threads wait on a reply
                wait_for(lambda: store.count_cells(run_id) == 8,  # noqa: B023 - used at once
                         "8 cells to be stored")
            finally:
                first.kill()  # SIGKILL
                first.wait()
            fake.release()
            at_kill = store.count_cells(run_id)
            assert at_kill == 8
            # nobody renews the dead worker's lease: let its 30 s pass at once
            with sqlite3.connect(work / "exam.db") as con:
                con.execute("UPDATE runs SET lease_until=? WHERE id=?", (time.time() - 1, run_id))
            assert store.get_run(run_id).shown_status == "interrupted"
            second = subprocess.run(exam("worker", "--once"), env=env, capture_output=True,
                                    text=True, timeout=60)
            assert f"run {run_id} finished" in second.stdout, second.stderr
        cells, bad, integrity, statuses = check_db(work / "exam.db")
        assert (cells, bad, integrity, statuses) == (QUESTIONS * REPEATS, 0, "ok", ["done"])
    table("crashes", "`exam worker` killed with kill -9 mid-run; the next worker started", trials,
          "the next worker claimed the run once the dead one's lease ran out (expired by the "
          "test) and ran only the missing cells; integrity_check ok", "nothing")


def test_a_worker_told_to_stop_gives_its_run_back_at_once(tmp_path):
    """SIGTERM (systemd's stop, a deploy) is not a crash: the run goes back to the queue, so the
    next worker takes it without waiting out the lease, and nothing is lost or doubled."""
    import signal

    with FakeAgent(hold_after=8) as fake:
        env = setup(tmp_path, fake.url)
        store = Store(tmp_path / "exam.db")
        agent = load_registry(env["EXAM_AGENTS"], env=env).get("T")
        run_id = queue_run(store, agent, "v1", repeats=REPEATS)
        first = subprocess.Popen(exam("worker"), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            fake.wait_held(4)
            wait_for(lambda: store.count_cells(run_id) == 8, "8 cells to be stored")
            first.send_signal(signal.SIGTERM)
            fake.release()  # the held requests answer; the stopping worker stores what it may
            _, err = first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 0, err
        assert f"run {run_id}: given back to the queue" in err
        run = store.get_run(run_id)
        assert (run.status, run.owner, run.lease_until) == ("queued", None, None)
        # the lease was not left to run out: a worker claims the run at once
        second = subprocess.run(exam("worker", "--once"), env=env, capture_output=True,
                                text=True, timeout=60)
        assert f"run {run_id} finished" in second.stdout, second.stderr
    cells, bad, integrity, statuses = check_db(tmp_path / "exam.db")
    assert (cells, bad, integrity, statuses) == (QUESTIONS * REPEATS, 0, "ok", ["done"])


def test_an_idle_worker_told_to_stop_does_not_claim_to_give_back_a_run(tmp_path):
    """An idle worker stopped by a deploy says it stopped, not that a run went back to the queue
    (operators read the line while checking which runs a deploy interrupted)."""
    import signal

    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url)
        Store(tmp_path / "exam.db")  # an empty store: nothing to claim
        idle = subprocess.Popen(exam("worker"), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            line = idle.stderr.readline()  # "worker HOST:PID watching ..." once it is in its loop
            assert "watching" in line, line
            idle.send_signal(signal.SIGTERM)
            _, err = idle.communicate(timeout=60)
        finally:
            if idle.poll() is None:
                idle.kill()
                idle.wait()
    assert idle.returncode == 0, err
    assert "worker stopped" in err
    assert "queue" not in err, err
