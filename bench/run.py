"""`make bench`: the harness against the ideal, pacing, re-grading, start-up, the service.

Writes bench/results.json and the figures table in docs/performance.md. Every figure is a
ratio or a rate measured in one run; repeated measurements report the median. Traffic goes
to 127.0.0.1 only.

    python bench/run.py             # everything (a few minutes)
    python bench/run.py --quick     # fewer repetitions, no concurrency-1 runs at 200/500 ms
    python bench/run.py --only regrade startup
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
PY = sys.executable
EXAM = [PY, "-m", "exam"]
TARGETS = {
    "overhead_c8_50ms": 1.25, "overhead_c8_200ms": 1.10, "overhead_c8_500ms": 1.05,
    "cpu_s_180_calls": 1.0, "peak_mb": 80, "pacing_rate_error": 0.05, "regrade_per_s": 20_000,
    "discrimination_s": 5.0, "discrimination_cached_s": 1.0, "discrimination_mb": 300,
    "help_s": 0.3, "bank_check_s": 0.6,
}


def start_agent(latency_ms: int, arrivals: Path | None = None) -> tuple[subprocess.Popen, int]:
    env = {**os.environ}
    if arrivals:
        env["BENCH_ARRIVALS"] = str(arrivals)
    proc = subprocess.Popen([PY, str(BENCH / "agent.py"), str(latency_ms)], stdout=subprocess.PIPE,
                            text=True, env=env)
    port = int(proc.stdout.readline())
    return proc, port


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


def write_bank(path: Path, n: int = 60) -> None:
    qs = [{"case_no": f"B-{i + 1:02d}", "category": "bench",
           "input": {"task_id": f"B-{i + 1:02d}", "question": "查訂單 A10302 的狀態"},
           "expect_status": "ok", "expect_facts": ["備貨中"], "expect_forbidden": ["已出貨"]}
          for i in range(n)]
    path.write_text(json.dumps({"agent": "B", "questions": qs}, ensure_ascii=False), "utf-8")


def timed_child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one child process, measured from outside it.

    Bytecode caching is left on, as on any normal install (some sandboxes set
    PYTHONDONTWRITEBYTECODE, which makes every start recompile every module).
    """
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ.update(env)
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(cmd[0], cmd)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def overhead(quick: bool) -> dict:
    """60 questions × 3 repeats: wall time of `exam run` ÷ (calls × latency ÷ concurrency)."""
    out = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    write_bank(tmp / "B.json")
    calls = 60 * 3
    for latency in (50, 200, 500):
        agent, port = start_agent(latency)
        try:
            for conc in (1, 8, 32):
                if conc == 1 and quick and latency > 50:
                    continue
                reps = 1 if conc == 1 else (2 if quick else 3)
                walls, cpus, mems = [], [], []
                for rep in range(reps):
                    reg = tmp / "agents.yaml"
                    reg.write_text(json.dumps({"agents": {"B": {
                        "url": f"http://127.0.0.1:{port}/x", "bank": str(tmp / "B.json"),
                        "concurrency": conc, "timeout_s": 30}}}))
                    db = tmp / f"o-{latency}-{conc}-{rep}.db"
                    env = {"EXAM_DB": str(db), "EXAM_AGENTS": str(reg), "NO_COLOR": "1"}
                    wall, cpu, mem, code = timed_child(
                        [*EXAM, "run", "B", "--version", "v1", "--repeats", "3"], env)
                    assert code == 0, f"exam run exited {code}"
                    walls.append(wall)
                    cpus.append(cpu)
                    mems.append(mem)
                ideal = calls * latency / 1000 / conc
                key = f"c{conc}_{latency}ms"
                out[key] = {"ratio": round(statistics.median(walls) / ideal, 3),
                            "wall_s": round(statistics.median(walls), 3), "ideal_s": ideal,
                            "cpu_s": round(statistics.median(cpus), 3),
                            "peak_mb": round(max(mems), 1), "repetitions": reps}
                print(f"  overhead {key}: {out[key]}", flush=True)
        finally:
            stop(agent)
    return out


def pacing(quick: bool) -> dict:
    """min_interval_s 0.1, concurrency 8: achieved start rate, and the closest two starts."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    write_bank(tmp / "B.json", 40)
    rates, gaps, client_gaps = [], [], []
    for rep in range(1 if quick else 3):
        arrivals = tmp / f"arrivals-{rep}.txt"
        agent, port = start_agent(200, arrivals)
        try:
            reg = tmp / "agents.yaml"
            reg.write_text(json.dumps({"agents": {"B": {
                "url": f"http://127.0.0.1:{port}/x", "bank": str(tmp / "B.json"),
                "concurrency": 8, "min_interval_s": 0.1, "timeout_s": 30}}}))
            env = {"EXAM_DB": str(tmp / f"p{rep}.db"), "EXAM_AGENTS": str(reg)}
            timed_child([*EXAM, "run", "B", "--version", "v1"], env)
        finally:
            stop(agent)
        t = sorted(float(x) for x in arrivals.read_text().split())
        rates.append((len(t) - 1) / (t[-1] - t[0]))
        gaps.append(min(b - a for a, b in zip(t, t[1:], strict=False)))
        import sqlite3

        with sqlite3.connect(tmp / f"p{rep}.db") as con:
            c = sorted(r[0] for r in con.execute("SELECT started_at FROM attempts"))
        client_gaps.append(min(b - a for a, b in zip(c, c[1:], strict=False)))
    rate = statistics.median(rates)
    return {"target_rate": 10.0, "achieved_rate": round(rate, 3),
            "rate_error": round(abs(rate - 10) / 10, 4),
            "min_gap_s": round(min(client_gaps), 4), "min_arrival_gap_s": round(min(gaps), 4),
            "requests": 40, "repetitions": len(rates)}


def regrade(quick: bool) -> dict:
    """Grading throughput on one core, and the discrimination report over 100,000 replies."""
    import random

    from data import bank, build_store, reply

    from exam.bank import parse_bank
    from graders import Reply, grade

    rng = random.Random(3)
    b, _ = parse_bank(bank(rng, "G", 20), "G.json")
    texts = [reply(rng) for _ in range(20_000)]
    checks = sum(len(i.question.facts) + len(i.question.forbidden) + 1 for i in b.items) / 20
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        for i, text in enumerate(texts):
            grade(b.items[i % 20].question, Reply(text=text, status="ok"))
        rates.append(len(texts) / (time.perf_counter() - t0))
    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    n = 20_000 if quick else 100_000
    build_store(tmp, replies=n)
    walls, mems, cached = [], [], []
    for _ in range(1 if quick else 3):
        # cold: a copy of the store whose grade cache is empty; then the same report again,
        # reading the grades the first one cached
        db = tmp / "cold.db"
        shutil.copyfile(tmp / "regrade.db", db)
        for times in (walls, cached):
            wall, _, mem, code = timed_child(
                [*EXAM, "report", "discrimination", "--format", "json", "--db", str(db)],
                {"PYTHONPATH": str(ROOT)})
            assert code == 0
            times.append(wall)
            mems.append(mem)
        for path in tmp.glob("cold.db*"):
            path.unlink()
    return {"replies_per_s": round(statistics.median(rates)), "checks_per_reply": round(checks, 1),
            "stored_replies": n, "discrimination_s": round(statistics.median(walls), 2),
            "discrimination_cached_s": round(statistics.median(cached), 2),
            "discrimination_peak_mb": round(max(mems), 1)}


def startup(quick: bool) -> dict:
    out = {}
    for name, cmd in (("help_s", [*EXAM, "--help"]),
                      ("bank_check_s", [*EXAM, "bank", "check", str(ROOT / "bank")])):
        walls = [timed_child(cmd, {})[0] for _ in range(5 if quick else 11)]
        out[name] = round(statistics.median(walls), 3)
    return out


def service(quick: bool) -> dict:
    from loadgen import run_load

    from exam.demo.main import run_demo

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    db = tmp / "demo.db"
    run_demo(str(db), repeats=3, bank_dir=ROOT / "bank", echo=lambda *_: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gunicorn = str(Path(PY).parent / "gunicorn")
    env = {**os.environ, "EXAM_API_TOKEN": "bench", "EXAM_DB": str(db)}
    server = subprocess.Popen([gunicorn, "--bind", f"127.0.0.1:{port}", "--workers", "2",
                               "--threads", "4", "exam.app:create_app()"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import requests

    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            requests.get(f"{base}/healthz", timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.1)
    out = {}
    try:
        pages = {"api_runs": "/api/runs", "api_scorecard": "/api/runs/1/scorecard",
                 "api_discrimination": "/api/discrimination?agent=W2",
                 "dashboard_runs": "/runs", "dashboard_overview": "/",
                 "dashboard_heatmap": "/discrimination?agent=W2"}
        for name, path in pages.items():
            r = run_load([base + path], {"Authorization": "Bearer bench"},
                         total=100 if quick else 300, concurrency=8)
            out[name] = {"req_per_s": round(r.rate, 1), "p99_ms": round(r.p99_ms, 1),
                         "errors": r.errors, "requests": r.requests}
            print(f"  service {name}: {out[name]}", flush=True)
    finally:
        stop(server)
    return out


SECTIONS = {"overhead": overhead, "pacing": pacing, "regrade": regrade, "startup": startup,
            "service": service}


def machine() -> dict:
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "date": time.strftime("%Y-%m-%d")}


def main() -> None:
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # also for gunicorn and the agent
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "exam"), str(ROOT / "graders")],
                   check=False)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(SECTIONS))
    args = parser.parse_args()
    path = BENCH / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results["machine"] = machine()
    results["quick"] = args.quick
    for name in args.only or SECTIONS:
        print(f"{name} …", flush=True)
        t0 = time.perf_counter()
        results[name] = SECTIONS[name](args.quick)
        print(f"{name}: {json.dumps(results[name])} ({time.perf_counter() - t0:.0f} s)", flush=True)
    results["targets"] = TARGETS
    path.write_text(json.dumps(results, indent=2) + "\n")
    from report import write_performance_md

    write_performance_md(results)
    print(f"wrote {path} and docs/performance.md")


if __name__ == "__main__":
    main()
