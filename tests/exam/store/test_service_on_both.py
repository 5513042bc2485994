"""The service and the worker on each backend: a queued run is executed by a worker, a dead
worker's run is taken over and only its missing cells are asked again, /healthz reads the store."""

from __future__ import annotations

import pytest
import yaml

from exam.db.schema import SCHEMA_VERSION
from exam.pipeline.gate import RequestGate
from exam.pipeline.registry import load_registry
from exam.pipeline.runner import job_for, run_cell
from exam.pipeline.worker import work_once
from exam.store import Store
from exam.web.app import create_app
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent

TOKEN = "test-token-5f3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def agent_and_app(tmp_path, store_target):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"])
        agents = tmp_path / "agents.yaml"
        agents.write_text(yaml.safe_dump({"agents": {"T": {"url": fake.url, "bank": str(bank),
                                                           "timeout_s": 30}}}))
        app = create_app({"API_TOKEN": TOKEN, "DB": store_target, "AGENTS": str(agents),
                          "TESTING": True})
        yield fake, app, str(agents)


def test_healthz_reads_the_store(agent_and_app):
    _, app, _ = agent_and_app
    resp = app.test_client().get("/healthz")
    assert resp.status_code == 200 and resp.json == {"ok": True, "schema": SCHEMA_VERSION}


def test_a_dead_workers_run_is_finished_by_a_worker_on_another_host(agent_and_app, store_target):
    fake, app, agents = agent_and_app
    client = app.test_client()
    run_id = client.post("/api/runs", json={"agent": "T", "version": "v1", "repeats": 2},
                         headers=AUTH).json["run_id"]
    dead, alive = Store(store_target), Store(store_target)
    try:
        # worker A claims the run (a lease that runs out at once), stores two cells, dies
        assert dead.claim_run("host-a:4242", 0.0).id == run_id
        job = job_for(dead, run_id, load_registry(agents).get("T"))
        run_cell(dead, job, "T-01", 1, RequestGate(1))
        run_cell(dead, job, "T-02", 1, RequestGate(1))
        before = len(fake.requests)
        assert work_once(alive, agents) == run_id  # worker B, on another host
        assert work_once(alive, agents) is None  # nothing left
    finally:
        dead.close()
        alive.close()
    assert len(fake.requests) - before == 4  # only the missing cells
    run = client.get(f"/api/runs/{run_id}", headers=AUTH).json
    assert run["status"] == "done" and run["progress"]["done"] == 6


def test_the_runs_list_reads_every_runs_counts_in_one_query(agent_and_app, store_target,
                                                           monkeypatch):
    """A list of runs read each run's counts with two queries (a list of 100 runs made 300);
    now one query for all of them gives the same counts, outcome and progress."""
    fake, app, agents = agent_and_app
    client = app.test_client()
    store = Store(store_target)
    try:
        for version in ("v1", "v2", "v3"):
            client.post("/api/runs", json={"agent": "T", "version": version, "repeats": 2},
                        headers=AUTH)
        assert work_once(store, agents) is not None  # v1 done, v2 and v3 queued
        assert work_once(store, agents) is not None  # v2 done, then excluded
        client.post("/api/runs/2/exclude", json={"reason": "the agent was down"}, headers=AUTH)
        one_by_one = [client.get(f"/api/runs/{i}", headers=AUTH).json for i in (3, 2, 1)]
        by_run = store.status_counts_of([1, 2, 3, 99])
        assert by_run == {i: store.status_counts(i) for i in (1, 2, 3, 99)}
        assert by_run[3] == by_run[99] == {}
    finally:
        store.close()

    def one_run_at_a_time(*_a, **_k):
        raise AssertionError("the list read a run's counts on its own")

    monkeypatch.setattr(Store, "status_counts", one_run_at_a_time)
    monkeypatch.setattr(Store, "count_cells", one_run_at_a_time)
    listed = client.get("/api/runs", headers=AUTH).json["runs"]
    assert listed == one_by_one
    assert [(r["outcome"], r["progress"]["done"]) for r in listed] == [
        ("queued", 0), ("excluded", 6), ("complete", 6)]
