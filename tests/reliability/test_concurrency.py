"""Several runs at once on one database, from the CLI and the API: none lost, none locked."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import yaml

from exam.web.app import create_app
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent

TOKEN = "concurrency-token"


def test_cli_and_api_runs_at_once(tmp_path, table):
    with FakeAgent(delay_s=0.02) as fake:
        agents = {}
        for name in ("A", "B", "C"):
            bank = write_bank(tmp_path, ["ok"] * 8, name=name)
            agents[name] = {"url": fake.url, "bank": str(bank), "concurrency": 4, "timeout_s": 10}
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": agents}))
        db = tmp_path / "exam.db"
        env = {**os.environ, "EXAM_DB": str(db), "EXAM_AGENTS": str(registry)}
        client = create_app({"API_TOKEN": TOKEN, "DB": str(db), "AGENTS": str(registry)}
                            ).test_client()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        api_runs = [client.post("/api/runs", json={"agent": a, "version": "api", "repeats": 3},
                                headers=auth).json["run_id"] for a in ("A", "B")]
        exam = [sys.executable, "-m", "exam"]
        procs = [subprocess.Popen([*exam, "run", a, "--version", f"cli-{a}", "--repeats", "3",
                                   "--format", "json"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for a in ("A", "B", "C")]
        procs += [subprocess.Popen([*exam, "worker", "--once"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                  for _ in range(2)]
        errors = []
        for p in procs:
            _, err = p.communicate(timeout=120)
            errors.append(err)
            assert p.returncode in (0,), err
    assert not any("locked" in e.lower() or "Traceback" in e for e in errors)
    with sqlite3.connect(db) as con:
        runs = con.execute("SELECT id, status, repeats FROM runs ORDER BY id").fetchall()
        counts = dict(con.execute("SELECT run_id, COUNT(*) FROM cells GROUP BY run_id"))
    assert len(runs) == 5 and {s for _, s, _ in runs} == {"done"}
    assert all(counts[rid] == 8 * 3 for rid, _, _ in runs)
    assert set(api_runs) <= set(counts)
    table("concurrency", "3 `exam run` processes and 2 API-queued runs (2 workers) on one "
                         "SQLite file at once", 5,
          f"all 5 runs done, {sum(counts.values())} of 120 cells stored, no 'database is "
          "locked', no traceback")
