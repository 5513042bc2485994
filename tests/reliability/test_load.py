"""The API and dashboard under gunicorn with a bounded load generator on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

from exam.demo.main import run_demo
from tests.conftest import BANK_DIR, ROOT
from tests.exam.web.test_gunicorn import free_port, wait_up

sys.path.insert(0, str(ROOT / "bench"))
from loadgen import run_load  # noqa: E402

TOKEN = "load-token"


def test_service_under_load(tmp_path, table):
    db = tmp_path / "demo.db"
    run_demo(str(db), repeats=1, bank_dir=BANK_DIR, echo=lambda *_: None)
    port = free_port()
    env = {**os.environ, "EXAM_API_TOKEN": TOKEN, "EXAM_DB": str(db)}
    gunicorn = shutil.which("gunicorn", path=str(ROOT / ".venv" / "bin")) or "gunicorn"
    log = tmp_path / "g.log"
    server = subprocess.Popen([gunicorn, "--bind", f"127.0.0.1:{port}", "--workers", "2",
                               "--threads", "4", "--error-logfile", str(log),
                               "exam.app:create_app()"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{base}/healthz", server, log)
        urls = [f"{base}{p}" for p in (
            "/api/runs", "/api/runs/1", "/api/runs/4/scorecard", "/api/discrimination?agent=W1",
            "/api/compare?agent=W2&old=v1&new=v2", "/", "/scorecard/W3/v2",
            "/discrimination?agent=W2", "/healthz")]
        result = run_load(urls, {"Authorization": f"Bearer {TOKEN}"}, total=300, concurrency=8,
                          timeout_s=120)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert result.requests == 300 and result.errors == 0
    table("load", "API and dashboard pages under gunicorn (2 workers × 4 threads), 8 clients, "
                  "300 requests over 9 routes on the demo store", result.requests,
          f"{result.errors} errors, {result.rate:.0f} req/s, p50 {result.p50_ms:.0f} ms, "
          f"p99 {result.p99_ms:.0f} ms", "nothing")
