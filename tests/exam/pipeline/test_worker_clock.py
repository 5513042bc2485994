"""`exam worker` on a host whose clock is two minutes off: it takes no live run over early and
leaves no expired one waiting, because leases are judged by the store's clock
(docs/store.md, "One clock"). Workers are real processes; the skewed one's ``time.time`` is set
off by a ``sitecustomize`` on its PYTHONPATH, as a wrong system clock would be for it."""

from __future__ import annotations

import os

import pytest
import yaml

from exam.pipeline.runner import queue_run
from exam.store import Store
from tests.exam.helpers import agent_for, wait_for, write_bank
from tests.fakes.agent import FakeAgent
from tests.processes import exam_env, worker


def skewed(env: dict[str, str], folder, seconds: float) -> dict[str, str]:
    """``env`` for a process whose clock reads ``seconds`` off."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import time\n"
        "_real = time.time\n"
        f"time.time = lambda: _real() + {seconds!r}\n")
    path = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": path}


@pytest.mark.parametrize("off_s", [120.0, -120.0], ids=["ahead", "behind"])
def test_a_worker_with_a_skewed_clock_takes_the_expired_run_not_the_live_one(
        tmp_path, store_url, off_s):
    with FakeAgent(hold_after=0) as fake:  # every request held until released
        bank = write_bank(tmp_path, ["ok"])
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"T": {
            "url": fake.url, "bank": str(bank), "timeout_s": 120}}}))
        env = exam_env(store_url, registry)
        agent = agent_for(fake.url, bank)
        store = Store(store_url)
        right = worker(env, "host-a", tmp_path / "host-a.log")
        off = worker(skewed(env, tmp_path / "clock", off_s), "host-b", tmp_path / "host-b.log")
        try:
            live = queue_run(store, agent, "v1")
            right.start()  # claims it and renews its lease while its request is held
            fake.wait_held(1)
            assert store.get_run(live).owner == f"host-a:{right.pid}"
            expired = queue_run(store, agent, "v1")
            assert store.claim_run("host-c:1", 0.0).id == expired  # its worker died at once
            queued = queue_run(store, agent, "v1")
            off.start()

            def taken() -> list[int]:
                return [r.id for r in store.list_runs() if (r.owner or "").startswith("host-b:")]

            wait_for(taken, "the worker on host-b to claim a run")
            # its first claim: the run whose lease ran out, not the live one (clock ahead) nor
            # the queued one behind it (clock behind)
            assert taken() == [expired]
            run = store.get_run(live)
            assert (run.owner, run.lease_token, run.shown_status) == (
                f"host-a:{right.pid}", 1, "running")
            fake.release()
            wait_for(lambda: all(store.get_run(r).status == "done"
                                 for r in (live, expired, queued)),
                     "every run done", timeout=120)
            assert store.get_run(live).lease_token == 1  # never taken over
            assert len(fake.requests) == 3  # each run's one cell asked once: no traffic twice
        finally:
            fake.release()
            right.stop()
            off.stop()
            store.close()
