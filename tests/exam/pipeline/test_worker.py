"""``exam worker`` over a store that changes under it."""

from __future__ import annotations

import logging
import time

import pytest

from exam.pipeline.worker import start_in_thread
from exam.store import Store
from tests.backends import marked_newer


def test_a_worker_left_running_through_an_upgrade_claims_nothing_from_the_newer_store(
        tmp_path, caplog, monkeypatch):
    """A worker not stopped before ``exam store migrate`` (docs/deployment.md, section 8) stops
    before its next claim, as it would refuse that store when starting: it never runs with old
    code what a new instance queued."""
    import threading

    import exam.pipeline.worker as worker

    # the migration lands while the worker is between two looks at the queue (held there
    # until it has), as `exam store migrate` run beside an idle worker; one landing between
    # its check of the schema and its claim is refused by the claim itself
    # (tests/exam/store/test_backends.py, test_a_claim_reads_the_schema_it_claims_under)
    looked, migrated = threading.Event(), threading.Event()
    work_once = worker.work_once

    def held_after_looking(*args, **kwargs):
        did = work_once(*args, **kwargs)
        looked.set()
        migrated.wait(60)
        return did

    monkeypatch.setattr(worker, "work_once", held_after_looking)
    # `exam serve`'s worker as start_in_thread starts it, looking at the queue every 10 ms
    # rather than every second: its next look, the one that must refuse, comes at once
    work_forever = worker.work_forever
    monkeypatch.setattr(worker, "work_forever", lambda db, agents, _poll_s, stop, **kw:
                        work_forever(db, agents, 0.01, stop, **kw))
    db = str(tmp_path / "exam.db")
    store = Store(db)  # opened before the migration: it reads the schema no more
    try:
        with caplog.at_level(logging.INFO, logger="exam.pipeline.worker"):
            stop = start_in_thread(db, None)
            try:
                deadline = time.monotonic() + 30
                assert looked.wait(30), "the worker never looked at the queue"
                with marked_newer(db):
                    run_id = store.create_run(agent="A", version="v2", bank_path="A.json",
                                              bank_digest="d", repeats=1, plan=[("A-01", "q")],
                                              settings={}, status="queued")
                    migrated.set()
                    while not any(w in caplog.text for w in ("worker stopped", "claimed")) \
                            and time.monotonic() < deadline:
                        time.sleep(0.02)
                    assert store.get_run(run_id).status == "queued"
            finally:
                migrated.set()
                stop.set()
        assert "newer than this agent-exam understands" in caplog.text
    finally:
        store.close()


@pytest.mark.parametrize("outage", [
    ["cannot open the store: connection refused"] * 3,  # the same trouble three times
    # PostgreSQL stopping and starting again answers a different error at each try
    ["the database system is starting up", "cannot open the store: connection refused",
     "connection failed: connection refused"],
], ids=["same message", "changing message"])
def test_a_worker_that_loses_the_store_tries_again_and_goes_on(tmp_path, caplog, monkeypatch,
                                                               outage):
    """PostgreSQL restarting under a worker: it waits and tries again, with one log line while
    the store cannot be used and one when it is back (one outage, one line, as deployment.md
    says), rather than stop for good: an `exam serve`'s worker thread would be gone, and
    systemd gives up on a unit that fails 5 times in 10 s."""
    import threading

    from exam.errors import StoreError
    from exam.pipeline import worker

    db = str(tmp_path / "exam.db")
    Store(db).close()
    real_check = Store.check_schema
    back = threading.Event()

    def check_schema(self):
        if outage:
            raise StoreError(f"{db}: {outage.pop()}")
        return real_check(self)

    def work_once(store, agents_path, stale_after_s, after=None):
        back.set()
        return None

    monkeypatch.setattr(Store, "check_schema", check_schema)
    monkeypatch.setattr(worker, "work_once", work_once)
    monkeypatch.setattr(worker, "RETRY_S", 0.01)
    stop = threading.Event()
    with caplog.at_level(logging.INFO, logger="exam.pipeline.worker"):
        thread = threading.Thread(target=worker.work_forever, args=(db, None, 0.01, stop))
        thread.start()
        try:
            assert back.wait(30)
        finally:
            stop.set()
            thread.join(30)
    assert not thread.is_alive() and outage == []
    assert caplog.text.count("the store cannot be used: ") == 1
    assert caplog.text.count("the store can be used again") == 1


def test_a_run_whose_store_went_away_for_a_moment_is_given_back_not_failed(tmp_path, caplog,
                                                                           monkeypatch):
    """PostgreSQL restarting under a worker (3 s, found walking deployment.md section 5): the
    cells that could not be stored are run again by the next claim. The run was marked failed
    for good (no worker takes a failed run), or a reply was stored as a harness error."""
    from sqlalchemy.exc import OperationalError

    from exam.pipeline.runner import queue_run
    from exam.pipeline.worker import work_once
    from tests.exam.helpers import agent_for, registry_env, write_bank
    from tests.fakes.agent import FakeAgent

    store = Store(tmp_path / "exam.db")
    real_write = Store._write_cells
    down = [True]  # every write fails until the store is back

    def write_cells(self, batch):
        if down:
            raise OperationalError("INSERT INTO cells", {}, Exception(
                "connection failed: server closed the connection unexpectedly"))
        return real_write(self, batch)

    monkeypatch.setattr(Store, "_write_cells", write_cells)
    try:
        with FakeAgent() as fake:
            bank = write_bank(tmp_path, ["ok", "ok", "ok"])
            registry = registry_env(tmp_path, fake.url, bank, concurrency=1)["EXAM_AGENTS"]
            run_id = queue_run(store, agent_for(fake.url, bank), "v1")
            assert work_once(store, registry) == run_id
            assert store.get_run(run_id).status == "queued"  # given back, at once
            assert "the store could not be used: " in caplog.text  # and says why
            down.clear()
            assert work_once(store, registry) == run_id
        assert store.get_run(run_id).status == "done"
        assert sorted(c.run_status for c in store.cells([run_id])) == ["ok", "ok", "ok"]
    finally:
        store.close()


def test_a_run_given_back_is_not_claimed_again_at_once(tmp_path, caplog, monkeypatch):
    """A store that keeps failing writes (for a reason `unavailable` took for a moment) must not
    make the worker claim, send cells, give back and claim again in a tight loop: each claim
    sends cells to the agent. After a give-back it waits as for a lost store."""
    import threading

    from exam.pipeline import worker

    db = str(tmp_path / "exam.db")
    Store(db).close()
    claims: list[float] = []
    waits: list[float] = []

    def work_once(store, agents_path, stale_after_s, after=None):
        claims.append(time.monotonic())
        return 7

    class Given:
        status = "queued"

    monkeypatch.setattr(worker, "work_once", work_once)
    monkeypatch.setattr(Store, "get_run", lambda self, run_id: Given())
    stop = threading.Event()
    real_wait = stop.wait

    def wait(timeout=None):
        waits.append(timeout)
        if len(waits) >= 4:
            stop.set()
        return real_wait(0)

    monkeypatch.setattr(stop, "wait", wait)
    with caplog.at_level(logging.INFO, logger="exam.pipeline.worker"):
        worker.work_forever(db, None, 0.01, stop)
    assert len(claims) == 4
    assert waits == [5.0, 10.0, 20.0, 40.0]  # backing off, as for a store that cannot be used
    assert caplog.text.count("run 7 was given back to the queue") == 1


@pytest.mark.slow  # `exam worker` as a real process (tests/processes.py)
def test_the_worker_log_names_the_level_of_each_line(tmp_path):
    """An operator looks for a worker's trouble by level (journalctl, a log shipper), as in the
    service's gunicorn log: a failed run was an ERROR printed like every INFO line."""
    import subprocess
    import sys

    from tests.processes import ROOT, exam_env

    db = str(tmp_path / "exam.db")
    registry = tmp_path / "agents.yaml"
    registry.write_text("agents: {}\n")
    store = Store(db)
    try:
        run_id = store.create_run(agent="Gone", version="v2", bank_path="Gone.json",
                                  bank_digest="d", repeats=1, plan=[("G-01", "q")],
                                  settings={}, status="queued")
    finally:
        store.close()
    done = subprocess.run([sys.executable, "-m", "exam", "worker", "--once"],
                          env=exam_env(db, registry), cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    lines = done.stderr.splitlines()
    assert any(f" ERROR exam.pipeline.worker run {run_id} failed: " in line for line in lines), \
        done.stderr
    assert any(f" INFO exam.pipeline.worker run {run_id}: Gone v2 claimed" in line
               for line in lines), done.stderr
