"""Two `exam serve` instances and two `exam worker` processes on two host ids, one store:
runs are queued through both instances' APIs, one worker at a time is killed with kill -9
at a random point and started again. Every run completes, no cell is lost or stored twice,
and the agent was asked no more often than the kills explain.

The killed worker is restarted at once, except every fourth time: then it stays down until
the other host has taken its run over after the lease ran out. Everything is waited for on
the store's state, never on a fixed sleep.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass

import requests
import yaml

from exam.store import Store
from tests.exam.helpers import wait_for, write_bank
from tests.fakes.agent import FakeAgent
from tests.processes import Proc, Serve, exam_env, worker
from tests.reliability.conftest import LONG

TRIALS = 20 if LONG else 4
QUESTIONS, REPEATS, CONCURRENCY = 10, 4, 4
LEASE_S = 6.0  # short, so a takeover across hosts is quick; the heartbeat comes every 1.2 s
MAX_RUNS = 400  # agents in the registry: one per run, so the agent's log tells runs apart
UNFINISHED = 3  # runs kept waiting, so both workers are always busy
TOKEN = "multi-host-token-92d1"
HOSTS = ("host-a", "host-b")


@dataclass
class Worker:
    host: str
    proc: Proc

    def owns(self, run) -> bool:
        return run.status == "running" and run.owner == f"{self.host}:{self.proc.pid}"


def test_workers_on_two_hosts_killed_at_random_points(tmp_path, store_url, table):
    rng = random.Random(20261130)
    with FakeAgent(delay_s=0.2) as fake:
        base = fake.url.rsplit("/webhook/", 1)[0]
        agents = {}
        for i in range(MAX_RUNS):
            bank = write_bank(tmp_path, ["ok"] * QUESTIONS, name=f"R{i}")
            agents[f"R{i}"] = {"url": f"{base}/webhook/R{i}", "bank": str(bank),
                               "concurrency": CONCURRENCY, "timeout_s": 120}
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": agents}))
        env = exam_env(store_url, registry, EXAM_API_TOKEN=TOKEN)
        store = Store(store_url)
        instances = [Serve(env, tmp_path / f"serve-{n}.log") for n in "ab"]
        workers = [Worker(h, worker(env, h, tmp_path / f"{h}.log", LEASE_S)) for h in HOSTS]
        queued: list[int] = []

        def keep_busy() -> None:
            left = sum(1 for r in store.list_runs() if r.status in ("queued", "running"))
            for _ in range(UNFINISHED - left):
                assert len(queued) < MAX_RUNS, "the test ran out of agents: raise MAX_RUNS"
                api = instances[len(queued) % 2]  # both instances queue
                resp = requests.post(f"{api.url}/api/runs", json={
                    "agent": f"R{len(queued)}", "version": "v1", "repeats": REPEATS},
                    headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
                assert resp.status_code == 202, resp.text
                queued.append(resp.json()["run_id"])

        kills, kill_count, across, cells_at_kill = Counter(), 0, 0, []
        try:
            for s in instances:
                s.start()
            keep_busy()
            for w in workers:
                w.proc.start()
            for trial in range(TRIALS):
                keep_busy()
                victim = workers[rng.randrange(2)]
                other = workers[1 - workers.index(victim)]
                k = rng.randint(1, QUESTIONS * REPEATS - 2)  # cells into its run, then kill

                def far_enough(victim=victim, k=k) -> bool:
                    keep_busy()
                    runs = [r for r in store.list_runs() if victim.owns(r)]
                    return bool(runs) and store.count_cells(runs[0].id) >= k

                wait_for(far_enough, f"trial {trial}: {victim.host} to store {k} cells of a "
                         f"run (its log: {victim.proc.log})", timeout=180)
                victim.proc.kill()
                # what it held when it died (its run may have ended just before the kill)
                held = [r for r in store.list_runs() if victim.owns(r)]
                kill_count += 1
                for run in held:
                    kills[run.id] += 1
                    cells_at_kill.append(store.count_cells(run.id))
                if trial % 4 == 3 and held:  # stay down until the other host takes it over
                    run = held[0]
                    wait_for(lambda run=run, other=other: keep_busy() or other.owns(
                             store.get_run(run.id)) or store.get_run(run.id).status == "done",
                             f"{other.host} to take run {run.id} over after the lease",
                             timeout=180)
                    across += store.get_run(run.id).status != "done"
                victim.proc.start()
            wait_for(lambda: all(store.get_run(r).status == "done" for r in queued),
                     f"every run to be done (logs: {tmp_path})",
                     timeout=300)
        finally:
            for p in [w.proc for w in workers] + instances:
                p.stop()

        per_cell = Counter((c.run_id, c.case_no, c.repeat) for c in store.cells(queued))
        attempts: Counter[tuple[int, str]] = Counter()
        for run_id, case_no, repeat in per_cell:
            attempts[run_id, case_no] += len(store.attempts(run_id, case_no, repeat))
        asked: Counter[tuple[int, str]] = Counter()
        cut = 0  # a body the kill cut short: it reached the agent, its question is unknown
        for req in fake.requests:
            agent = req["path"].rsplit("/", 1)[1]
            try:
                asked[queued[int(agent[1:])], json.loads(req["raw"])["task_id"]] += 1
            except ValueError:
                cut += 1
        store.close()

    total = QUESTIONS * REPEATS
    assert {r: store_count(per_cell, r) for r in queued} == {r: total for r in queued}
    assert max(per_cell.values()) == 1  # the store holds each cell once
    assert all(asked[key] >= n for key, n in attempts.items())  # every attempt reached it
    extra = {key: asked[key] - attempts[key] for key in asked if asked[key] > attempts[key]}
    # a killed worker wastes at most the requests it had in flight: one per cell, at most
    # CONCURRENCY per kill, and only on runs it held when it was killed
    assert sum(extra.values()) + cut <= CONCURRENCY * kill_count, (extra, cut)
    for (run_id, case_no), n in extra.items():
        assert n <= kills[run_id] * min(REPEATS, CONCURRENCY), (run_id, case_no, n, kills)
    assert len(queued) > TRIALS // 2
    assert len(cells_at_kill) >= TRIALS // 2, "most kills must land while a run is held"
    table("multi-host", f"2 `exam serve` + 2 `exam worker` (host ids {', '.join(HOSTS)}) on "
                        f"one store ({'PostgreSQL' if '://' in store_url else 'SQLite'}); a "
                        f"worker killed with kill -9 at a random point, then restarted "
                        f"({QUESTIONS} questions × {REPEATS} repeats a run)", TRIALS,
          f"{len(queued)} runs queued through both instances, all done; killed with "
          f"{min(cells_at_kill)}–{max(cells_at_kill)} of {total} cells stored "
          f"({len(cells_at_kill)} of {TRIALS} kills while it held a run); {across} time(s) "
          f"the killed worker stayed down until the other host took its run over after the "
          f"{LEASE_S:g} s lease, otherwise it was restarted at once; {sum(extra.values()) + cut} "
          f"agent request(s) repeated for cells in flight at a kill ({cut} cut mid-body)",
          "nothing (no cell lost or stored twice)")


def store_count(per_cell: Counter, run_id: int) -> int:
    return sum(1 for (r, *_rest) in per_cell if r == run_id)
