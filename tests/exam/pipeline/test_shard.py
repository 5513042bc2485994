"""A large run split with a second process (exam/pipeline/shard.py), on PostgreSQL.

Real processes throughout: the helper is `python -m exam.pipeline.shard`, the agent a real
HTTP server on 127.0.0.1, the store a throwaway PostgreSQL database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from exam.pipeline import shard as sharding
from exam.pipeline.runner import create_run, execute, job_for
from exam.store import Store
from tests.backends import migrated_template, postgres_database
from tests.exam.helpers import (
    agent_for,
    registry_env,
    sigint_reaches_children,
    wait_for,
    write_bank,
)
from tests.fakes.agent import FakeAgent


@pytest.fixture
def pg_url():
    """A database with today's schema (a copy of the session's migrated one, as every
    PostgreSQL store of the tests: tests/backends.py), dropped on the dropper's thread: a
    DROP DATABASE here waited 1–15 s for a checkpoint after each test."""
    with postgres_database(template=migrated_template(), drop="later") as url:
        yield url


def _count(url: str, run_id: int = 1) -> int:
    """Cells stored so far by another process (0 before it made the schema)."""
    from exam.errors import StoreError

    store = Store(url, checked=True)
    try:
        return store.count_cells(run_id)
    except StoreError:
        return 0
    finally:
        store.close()


def _every_request_stored(fake: FakeAgent, url: str, since: float = 0.0) -> None:
    """Every request the agent received is an attempt in the store (none sent and lost), and
    an attempt it never received is one the connection refused or reset before it arrived (a
    busy machine's listen queue), stored with its error and retried: answered attempts ≤
    requests received ≤ attempts stored (those started ``since``)."""
    from sqlalchemy import text

    store = Store(url, checked=True)
    try:
        with store.tx() as db:
            rows = db.execute(text("SELECT http_status, error FROM attempts "
                                   "WHERE started_at >= :since"), {"since": since}).all()
    finally:
        store.close()
    answered = sum(1 for status, _ in rows if status is not None)
    assert answered <= len(fake.requests) <= len(rows), (answered, len(fake.requests), len(rows))
    assert all(error for status, error in rows if status is None)  # each says why: no answer


def _distinct(store: Store, run_id: int) -> tuple[int, int]:
    cells = store.cells([run_id])
    return len(cells), len({(c.case_no, c.repeat) for c in cells})


def test_a_large_run_is_split_with_a_second_process_and_every_cell_runs_once(
        pg_url, tmp_path, monkeypatch):
    monkeypatch.setenv(sharding.ENV, "2")
    monkeypatch.setattr(sharding, "MIN_CELLS", 50)
    store = Store(pg_url)
    try:
        with FakeAgent() as fake:
            agent = agent_for(fake.url, write_bank(tmp_path, ["ok"] * 30), concurrency=16)
            run_id = create_run(store, agent, "v1", repeats=4)  # 120 cells
            store.hold_run(run_id)  # as `exam run` does: split only under a lease
            seen: list = []
            final = execute(store, [job_for(store, run_id, agent)],
                            progress=lambda _rid, cell: seen.append(cell))
        assert final == {run_id: "done"}
        assert _distinct(store, run_id) == (120, 120)
        _every_request_stored(fake, pg_url)  # none lost (and _distinct: no cell twice)
        assert fake.max_in_flight <= 16  # the two processes share the agent's concurrency
        helper = [c for c in seen if isinstance(c, sharding._Arrived)]
        assert 0 < len(helper) < 120 and len(seen) == 120  # both ran cells, all counted
        mine = {(c.case_no, c.repeat) for c in seen if not isinstance(c, sharding._Arrived)}
        assert all(sharding.shard_of(c, r, 2) == 0 for c, r in mine)
        assert store.get_run(run_id).status == "done"
    finally:
        store.close()


@pytest.mark.parametrize(("change", "env", "backend", "cells", "expected"), [
    ({}, "2", "postgresql", 10_000, 2),
    ({}, None, "postgresql", 10_000, 1),  # off unless asked for
    ({}, "2", "sqlite", 10_000, 1),  # one writer at a time: no faster
    ({}, "1", "postgresql", 10_000, 1),
    ({"min_interval_s": 0.1}, "2", "postgresql", 10_000, 1),  # paced: one clock
    ({"concurrency": 8}, "2", "postgresql", 10_000, 1),
    ({}, "2", "postgresql", 100, 1),  # not worth a second start
    ({"blocked": "no token"}, "2", "postgresql", 10_000, 1),
])
def test_which_runs_are_split(monkeypatch, change, env, backend, cells, expected):
    if env is None:
        monkeypatch.delenv(sharding.ENV, raising=False)
    else:
        monkeypatch.setenv(sharding.ENV, env)
    agent = replace(agent_for("http://127.0.0.1:9/x", Path("b.json"), concurrency=64), **change)
    assert sharding.processes_for(agent, cells, True, backend) == expected
    assert sharding.processes_for(agent, cells, False, backend) == 1  # no lease: never


def test_the_cells_are_split_evenly_and_each_has_one_process():
    cells = [(f"Q-{q:03d}", r) for q in range(100) for r in range(1, 101)]
    zero = sum(sharding.shard_of(c, r, 2) == 0 for c, r in cells)
    assert 4_800 < zero < 5_200
    assert {sharding.shard_of("Q-001", 3, 2) for _ in range(5)} in ({0}, {1})


def _exam_run(tmp_path, url: str, fake: FakeAgent, *args: str) -> subprocess.Popen:
    env = {**os.environ, **registry_env(tmp_path, fake.url, tmp_path / "T.json",
                                         concurrency=16, timeout_s=120, retries=2),
           "EXAM_DB": url, sharding.ENV: "2", "NO_COLOR": "1"}
    with sigint_reaches_children():  # the Ctrl-C tests' SIGINT, under `make test &` too
        return subprocess.Popen([sys.executable, "-m", "exam", *args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)


@contextmanager
def _exam(tmp_path, url: str, fake: FakeAgent, *args: str) -> Iterator[subprocess.Popen]:
    """`exam ARGS` running in its own process group (a terminal's Ctrl-C reaches it and its
    helper alike), killed with its group if the test ends before it does."""
    proc = _exam_run(tmp_path, url, fake, *args)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _resume(tmp_path, url: str, fake: FakeAgent) -> None:
    """`exam resume 1` finishes the run: every one of its 500 cells once, the run done."""
    fake.hold_after = None
    resumed = _exam_run(tmp_path, url, fake, "resume", "1")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    store = Store(url, checked=True)
    try:
        assert _distinct(store, 1) == (500, 500)
        assert store.get_run(1).status == "done"
    finally:
        store.close()


def test_ctrl_c_stops_both_processes_and_the_run_resumes(pg_url, tmp_path):
    write_bank(tmp_path, ["ok"] * 50)  # 50 questions × 10 repeats: 500 cells
    with FakeAgent(hold_after=100) as fake:
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1", "--repeats", "10") as run:
            wait_for(lambda: _count(pg_url) >= 100, "the first 100 cells stored", 180)
            fake.wait_held(16)  # both processes have requests in flight
            os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
            fake.hold_after = None  # what is in flight comes back, and is stored (as is what
            fake.release()  # a thread sent before the stop reached it, on a busy machine)
            out, _ = run.communicate(timeout=120)
        assert run.returncode == 130, out
        assert "Traceback" not in out
        store = Store(pg_url, checked=True)
        try:
            done, distinct = _distinct(store, 1)
            assert done == distinct and 100 <= done < 500
            assert store.get_run(1).status == "interrupted"
        finally:
            store.close()
        _resume(tmp_path, pg_url, fake)
        # every request sent was stored as an attempt: none sent and lost (and _distinct: none
        # sent again for a cell already stored; a retried connection reset is an attempt too)
        _every_request_stored(fake, pg_url)


def test_a_helper_killed_leaves_its_cells_to_resume(pg_url, tmp_path):
    write_bank(tmp_path, ["ok"] * 50)
    with FakeAgent(hold_after=100) as fake:
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1", "--repeats", "10") as run:
            wait_for(lambda: _count(pg_url) >= 100, "the first 100 cells stored", 180)
            fake.wait_held(16)
            children = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True,
                                      text=True, check=True).stdout.split()
            assert len(children) == 1, children  # the run's one helper
            os.kill(int(children[0]), signal.SIGKILL)
            fake.hold_after = None
            fake.release()
            out, _ = run.communicate(timeout=300)
        assert run.returncode == 3, out  # some replies never arrived: not a verdict
        assert "Traceback" not in out
        store = Store(pg_url, checked=True)
        try:
            done, distinct = _distinct(store, 1)
            assert done == distinct and done < 500
            run_row = store.get_run(1)
            assert run_row.status == "interrupted" and "not run" in (run_row.error or "")
        finally:
            store.close()
        # what the killed helper had sent and not stored is sent again: resume's requests are
        # exactly its attempts
        resumed_at = time.time()
        fake.requests.clear()
        _resume(tmp_path, pg_url, fake)
        _every_request_stored(fake, pg_url, since=resumed_at)


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for init counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _kill_main(run: subprocess.Popen, url: str, fake: FakeAgent) -> int:
    """Once 100 cells are stored and both processes wait on the agent, kill -9 the main
    process (`exam run`); its helper's pid."""
    wait_for(lambda: _count(url) >= 100, "the first 100 cells stored", 180)
    fake.wait_held(16)
    (helper,) = map(int, subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True,
                                        text=True, check=True).stdout.split())
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    return helper


def test_the_helper_stops_when_its_main_process_is_killed(pg_url, tmp_path):
    """kill -9 of `exam run`: its helper stops too (nothing keeps sending for a run nobody
    holds), and the run resumes with every cell once."""
    write_bank(tmp_path, ["ok"] * 50)
    with FakeAgent(hold_after=100) as fake:
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1", "--repeats", "10") as run:
            helper = _kill_main(run, pg_url, fake)
            # what it sent comes back, and is stored (as is anything it sent before its
            # SIGTERM was handled: a busy machine may run its threads first)
            fake.hold_after = None
            fake.release()
            wait_for(lambda: _gone(helper), "the helper to stop", 120)
        sent = len(fake.requests)
        assert sent < 500
        store = Store(pg_url, checked=True)
        try:
            done, distinct = _distinct(store, 1)
            assert done == distinct and done <= sent
            # the lease a dead process held runs out (30 s): here, at once
            with store.tx() as db:
                from sqlalchemy import text

                db.execute(text("UPDATE runs SET lease_until = 0"))
        finally:
            store.close()
        _resume(tmp_path, pg_url, fake)


def _lease_until(url: str) -> float:
    store = Store(url, checked=True)
    try:
        return store.get_run(1).lease_until
    finally:
        store.close()


def test_a_helper_keeps_the_run_held_while_it_waits_for_its_replies(pg_url, tmp_path):
    """kill -9 of `exam run` while its helper waits for replies (an agent's timeout_s may be
    longer than a lease): the helper renews the lease until it has stored them, so no
    takeover meanwhile sends those cells to the agent a second time."""
    write_bank(tmp_path, ["ok"] * 50)
    with FakeAgent(hold_after=100) as fake:
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1", "--repeats", "10") as run:
            helper = _kill_main(run, pg_url, fake)
            held = _lease_until(pg_url)  # the dead main process renews nothing more
            wait_for(lambda: _lease_until(pg_url) > held, "the helper to renew the lease", 60)
            assert not _gone(helper)  # still waiting for its replies, the run held for it
            fake.hold_after = None
            fake.release()
            wait_for(lambda: _gone(helper), "the helper to stop", 120)
        store = Store(pg_url, checked=True)
        try:
            done, distinct = _distinct(store, 1)
            assert done == distinct and done <= len(fake.requests)
        finally:
            store.close()


@pytest.mark.slow  # real parent and helper processes, the parent killed
def test_a_helper_is_told_to_stop_when_its_parent_dies(tmp_path):
    """The parent-death signal (Linux), or the watch for a changed parent: a kill -9 of the
    main process gives the helper its SIGTERM, which is its stop."""
    told = tmp_path / "told"
    child = (f"import os, signal, sys, time\n"
             f"from exam.pipeline.shard_helper import _die_with_parent\n"
             f"signal.signal(signal.SIGTERM, lambda *_: (open({str(told)!r}, 'w').close(), "
             f"sys.exit(0)))\n"
             f"_die_with_parent(int(sys.argv[1]))\n"
             f"print('ready', flush=True)\n"
             f"while True: time.sleep(1)\n")
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, os\n"
         f"c = subprocess.Popen([sys.executable, '-c', {child!r}, str(os.getpid())], "
         "stdout=subprocess.PIPE, text=True)\n"
         "print(c.pid, c.stdout.readline().strip(), flush=True)\n"
         "c.wait()\n"], stdout=subprocess.PIPE, text=True)
    pid, ready = parent.stdout.readline().split()
    assert ready == "ready"
    parent.kill()
    parent.communicate()
    wait_for(told.exists, "the helper's SIGTERM", 60)
    wait_for(lambda: _gone(int(pid)), "the helper to exit", 60)


def test_signals_arriving_inside_stop_set_still_stop_the_helper():
    """The terminal's SIGINT and the SIGTERM of its main process dying reach a helper
    together; a handler that called ``stop.set()`` could run while the main thread was inside
    ``stop.set()`` and wait for the lock that frame held, for good (a helper hung after
    Ctrl-C). Both signals are sent here while the main thread holds that very lock."""
    script = ("import os, signal, sys, threading\n"
              "from exam.pipeline.shard_helper import stopped_by_signals\n"
              "stop = threading.Event()\n"
              "stopped_by_signals(stop, os.getppid())\n"
              "with stop._cond:  # as inside stop.set() when the signals come\n"
              "    os.kill(os.getpid(), signal.SIGINT)\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "    sum(range(100_000))  # bytecodes: the handlers run here\n"
              "sys.exit(0 if stop.wait(30) else 3)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_ctrl_c_while_the_main_process_waits_for_its_helper_interrupts_the_run(pg_url, tmp_path):
    """The main process has run its share and waits for the helper's: Ctrl-C there is an
    interruption like any other (the run reads interrupted at once, resumable), not a run
    left `running` until its lease runs out."""
    names = [f"T-{i + 1:02d}" for i in range(500)]
    # the helper's questions answer slowly, the main process's at once
    write_bank(tmp_path, ["slow" if sharding.shard_of(c, 1, 2) else "ok" for c in names])
    mine = {c for c in names if sharding.shard_of(c, 1, 2) == 0}

    def main_share_stored() -> bool:
        store = Store(pg_url, checked=True)
        try:
            return mine <= {c.case_no for c in store.cells([1])}
        except Exception:
            return False
        finally:
            store.close()

    with FakeAgent() as fake:
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1") as run:
            wait_for(main_share_stored, "the main process's share stored", 180)
            os.killpg(run.pid, signal.SIGINT)
            out, _ = run.communicate(timeout=120)
        assert run.returncode == 130, out
        assert "exam resume 1" in out
        store = Store(pg_url, checked=True)
        try:
            done, distinct = _distinct(store, 1)
            assert done == distinct and len(mine) <= done < 500
            assert store.get_run(1).status == "interrupted"
        finally:
            store.close()


def test_a_stopped_helper_is_given_the_agent_s_timeout_to_store_what_it_sent(
        pg_url, tmp_path, monkeypatch):
    """Told to stop, the helper's requests in flight may take up to the agent's timeout_s:
    it is waited for that long (and the usual margin), not killed with replies on the way."""
    monkeypatch.setattr(sharding, "STOP_WAIT_S", 0.5)  # the margin, far under a reply's 3 s
    store = Store(pg_url)
    try:
        with FakeAgent() as fake:
            agent = agent_for(fake.url, write_bank(tmp_path, ["slow"] * 60), concurrency=16)
            run_id = create_run(store, agent, "v1")
            store.hold_run(run_id)
            helper = sharding.Helper(store.target, job_for(store, run_id, agent),
                                     *store.lease_of(run_id), None)
            wait_for(lambda: len(fake.requests) >= 8, "the helper's requests", 120)
            helper.stop()
            assert helper.wait() == sharding.OK, helper.last_words()
        _every_request_stored(fake, pg_url)  # every request sent was stored
        done, distinct = _distinct(store, run_id)
        assert done == distinct == len(fake.requests) < 60
    finally:
        store.close()


@pytest.mark.slow  # `exam run` and its helper as real processes
def test_a_helper_that_cannot_reach_the_store_says_so_and_the_run_stays_resumable(tmp_path):
    """The store away when the helper starts (PostgreSQL restarting, out of connections) is a
    lost store (the run reads interrupted, a worker gives it back), not a failed run; and the
    password in its URL is never in what the helper says."""
    from exam.pipeline.runner import Job
    from exam.store import Run

    agent = agent_for("http://127.0.0.1:9/x", write_bank(tmp_path, ["ok"]),
                      headers={"Authorization": "Bearer s3cret-header"})
    run = Run(id=1, agent="T", version="v1", bank_path=agent.bank, bank_digest="b" * 64,
              repeats=1, plan=(("T-01", "test"),), settings={}, status="running",
              created_at=0.0, started_at=None, finished_at=None, owner=None,
              heartbeat_at=None, error=None, source="cli")
    helper = sharding.Helper("postgresql://exam:s3cret-pw@127.0.0.1:1/exam",
                             Job(run, agent, {}), 1, 30.0, None)
    assert helper.wait() == sharding.STORE_LOST
    assert "s3cret" not in helper.last_words()


def test_the_helper_works_from_the_main_process_s_reading_of_the_bank(pg_url, tmp_path,
                                                                      monkeypatch):
    """The bank file edited once the run has started: both processes grade with the bank as
    the main process read it (one question digest per question, whoever ran the cell)."""
    import json

    monkeypatch.setenv(sharding.ENV, "2")
    monkeypatch.setattr(sharding, "MIN_CELLS", 50)
    store = Store(pg_url)
    try:
        with FakeAgent() as fake:
            bank = write_bank(tmp_path, ["ok"] * 30)
            agent = agent_for(fake.url, bank, concurrency=16)
            run_id = create_run(store, agent, "v1", repeats=4)
            store.hold_run(run_id)
            job = job_for(store, run_id, agent)
            data = json.loads(bank.read_text(encoding="utf-8"))
            for q in data["questions"]:
                q["expect_facts"] = ["改過的"]  # another rubric: other question digests
            bank.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            seen: list = []
            assert execute(store, [job], progress=lambda _r, c: seen.append(c)) == {
                run_id: "done"}
        assert any(isinstance(c, sharding._Arrived) for c in seen)  # the helper ran cells
        digests = {c.case_no: set() for c in store.cells([run_id])}
        for c in store.cells([run_id]):
            digests[c.case_no].add(c.question_digest)
        assert all(d == {job.items[q].digest} for q, d in digests.items())
    finally:
        store.close()


def test_a_helper_failing_at_start_fails_the_run_at_once(pg_url, tmp_path, monkeypatch):
    """A helper that dies at start (a broken install: it exits 1 before running anything)
    fails the run as soon as the main process sees it exit, not after the main process has
    run its own half: the main process sends nothing more once it has noticed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if 'exam.pipeline.shard_helper' in sys.orig_argv:\n"
        "    sys.stderr.write('ImportError: a broken install\\n')\n"
        "    sys.stderr.flush()\n"
        "    os._exit(1)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    write_bank(tmp_path, ["ok"] * 50)  # 500 cells: about 250 of them the main process's
    with FakeAgent(hold_after=0) as fake:  # every request held until released
        with _exam(tmp_path, pg_url, fake, "run", "T", "--version", "v1", "--repeats",
                   "10") as run:
            fake.wait_held(8, timeout=180)  # the main process's 8 slots
            # the helper has exited and the main process has reaped it (it looks at its
            # helper while it waits on its own cells): no child left
            wait_for(lambda: not subprocess.run(
                ["pgrep", "-P", str(run.pid)], capture_output=True).stdout.strip(),
                "the main process to notice its helper's exit", 120)
            fake.hold_after = None
            fake.release()
            out, _ = run.communicate(timeout=300)
    assert run.returncode == 3, out
    assert "Traceback" not in out
    # the 8 held, and at most a slot's worth more: never its ~250
    assert len(fake.requests) <= 8 + 16
    store = Store(pg_url, checked=True)
    try:
        row = store.get_run(1)
        assert row.status == "failed"
        assert "the run's second process failed: ImportError: a broken install" in row.error
    finally:
        store.close()
