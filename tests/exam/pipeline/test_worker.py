"""``exam worker`` over a store that changes under it."""

from __future__ import annotations

import logging
import time

from exam.pipeline.worker import start_in_thread
from exam.store import Store
from tests.backends import marked_newer


def test_a_worker_left_running_through_an_upgrade_claims_nothing_from_the_newer_store(tmp_path,
                                                                                     caplog):
    """A worker not stopped before ``exam store migrate`` (docs/deployment.md, section 8) stops
    before its next claim, as it would refuse that store when starting: it never runs with old
    code what a new instance queued."""
    db = str(tmp_path / "exam.db")
    store = Store(db)  # opened before the migration: it reads the schema no more
    try:
        with caplog.at_level(logging.INFO, logger="exam.pipeline.worker"):
            stop = start_in_thread(db, None)
            try:
                deadline = time.monotonic() + 30
                while "watching" not in caplog.text and time.monotonic() < deadline:
                    time.sleep(0.02)
                with marked_newer(db):
                    run_id = store.create_run(agent="A", version="v2", bank_path="A.json",
                                              bank_digest="d", repeats=1, plan=[("A-01", "q")],
                                              settings={}, status="queued")
                    while not any(w in caplog.text for w in ("worker stopped", "claimed")) \
                            and time.monotonic() < deadline:
                        time.sleep(0.02)
                    assert store.get_run(run_id).status == "queued"
            finally:
                stop.set()
        assert "newer than this agent-exam understands" in caplog.text
    finally:
        store.close()
