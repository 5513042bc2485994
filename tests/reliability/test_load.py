"""The API and dashboard under gunicorn with a bounded load generator on 127.0.0.1."""

from __future__ import annotations

import os
import sys

from tests.conftest import ROOT
from tests.exam.helpers import demo_copy
from tests.processes import gunicorn

sys.path.insert(0, str(ROOT / "bench"))
from loadgen import run_load  # noqa: E402

TOKEN = "load-token"


def test_service_under_load(tmp_path, table):
    db = demo_copy(tmp_path)
    env = {**os.environ, "EXAM_API_TOKEN": TOKEN, "EXAM_DB": db}
    with gunicorn(env, tmp_path / "g.log", workers=2, threads=4, stop_timeout=60) as base:
        urls = [f"{base}{p}" for p in (
            "/api/runs", "/api/runs/1", "/api/runs/4/scorecard", "/api/discrimination?agent=W1",
            "/api/compare?agent=W2&old=v1&new=v2", "/", "/scorecard/W3/v2",
            "/discrimination?agent=W2", "/healthz")]
        result = run_load(urls, {"Authorization": f"Bearer {TOKEN}"}, total=300, concurrency=8,
                          timeout_s=120)
    assert result.requests == 300 and result.errors == 0
    table("load", "API and dashboard pages under gunicorn (2 workers × 4 threads), 8 clients, "
                  "300 requests over 9 routes on the demo store", result.requests,
          f"{result.errors} errors, {result.rate:.0f} req/s, p50 {result.p50_ms:.0f} ms, "
          f"p99 {result.p99_ms:.0f} ms", "nothing")
