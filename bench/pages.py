"""What the dashboard's pages and the API's routes cost as history grows: first view and warm.

For each size, a store of N replies is built with bench/data.py (3 agents × 8 versions ×
20 questions), then each run is finished as the worker finishes one (exam/reports/kept.py:
its graded cells and its agent's walk kept; the time this takes per run is printed). A fresh
process then asks for each page through Flask's test client, logged in: the first view, and
``--views`` warm views whose p50 and p95 are printed with the page's weight. CPU (this
process's user + system time) is the figure to compare on a shared machine; wall is printed
beside it. Results go to bench/pages.json; ``--profile`` writes a cProfile of the first warm
view of each page.

    python bench/pages.py                          # 10,000 and 100,000 replies, SQLite
    python bench/pages.py --replies 1000000        # a decade of history (minutes to build)
    python bench/pages.py --db postgresql://postgres@127.0.0.1:5432/postgres  # bench_pages_N

A store already built in ``--dir`` is used again.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TOKEN = "bench-token-3d91"
TARGETS = {"warm_p95_s": 0.2, "first_s": 1.0, "kb": 300}


def paths(last_run: int) -> list[str]:
    """Every dashboard page and API route that reads history (B1's last version is v8)."""
    return ["/", "/runs", "/review", "/discrimination", "/compare?agent=B1&old=v7&new=v8",
            "/scorecard/B1/v8", "/question/B1/B1-001", f"/reply/{last_run}/B1-001/1",
            "/api/runs", f"/api/runs/{last_run}", f"/api/runs/{last_run}/scorecard",
            "/api/compare?agent=B1&old=v7&new=v8", "/api/discrimination",
            "/api/agents/B1/shipped"]


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def logged_in(db: str, registry: Path):
    from exam.web.app import create_app

    app = create_app({"API_TOKEN": TOKEN, "DB": db, "TESTING": True, "AGENTS": str(registry)})
    client = app.test_client()
    form = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    if csrf is None:
        raise SystemExit("bench/pages.py: the login form carries no CSRF token")
    resp = client.post("/login", data={"token": TOKEN, "csrf_token": csrf.group(1)})
    if resp.status_code != 302:
        raise SystemExit(f"bench/pages.py: login refused ({resp.status_code})")
    return client


def view(client, path: str, profile: Path | None = None) -> dict:
    prof = cProfile.Profile() if profile else None
    c0, t0 = cpu(), time.perf_counter()
    if prof:
        prof.enable()
    resp = client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}
                      if path.startswith("/api/") else {})
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    return {"status": resp.status_code, "kb": round(len(resp.data) / 1024, 1),
            "cpu_s": cpu() - c0, "wall_s": time.perf_counter() - t0}


def p95(values: list[float]) -> float:
    data = sorted(values)
    return data[min(len(data) - 1, round(0.95 * (len(data) - 1)))]


def views(db: str, folder: Path, n: int, profile: bool) -> dict:
    """In this (fresh) process: each page's first view, then ``n`` warm ones."""
    from exam.store import Store

    store = Store.open(db)
    last = max(r.id for r in store.list_runs("B1"))
    store.close()
    client = logged_in(db, folder / "agents.yaml")
    out = {}
    for path in paths(last):
        name = re.sub(r"\W+", "_", path).strip("_") or "overview"
        first = view(client, path)
        warm = [view(client, path, folder / f"{name}.prof" if profile and i == 0 else None)
                for i in range(n)]
        out[path] = {"status": first["status"], "kb": first["kb"],
                     "first_cpu_s": round(first["cpu_s"], 3),
                     "first_wall_s": round(first["wall_s"], 3),
                     "warm_cpu_p50_s": round(statistics.median(w["cpu_s"] for w in warm), 3),
                     "warm_cpu_p95_s": round(p95([w["cpu_s"] for w in warm]), 3),
                     "warm_wall_p95_s": round(p95([w["wall_s"] for w in warm]), 3)}
    return out


def prepared(replies: int, folder: Path, db_url: str | None) -> tuple[str, dict]:
    """The store of ``replies`` replies (built once per folder), every run finished as the
    worker finishes one; and what that cost."""
    from data import build_store

    from exam.reports.kept import keep_finished
    from exam.store import Store

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yaml").write_text("agents: {}\n", encoding="utf-8")
    db = folder / "regrade.db"
    built = None
    if not db.exists():
        c0 = cpu()
        build_store(folder, replies=replies)
        built = round(cpu() - c0, 1)
    target = str(db)
    if db_url:  # a database of its own on that server, made afresh (as bench/run.py does)
        from run import Stores

        from exam.store.copy import copy_store

        target = Stores(db_url)._database(f"pages_{replies}")
        copy_store(str(db), target)
    store = Store.open(target)
    c0 = cpu()
    runs = sorted(store.list_runs(), key=lambda r: r.id)
    for r in runs:  # as the worker does at each run's end (the grade cache filled already)
        keep_finished(store, r.id)
    kept = cpu() - c0
    store.close()
    return target, {"built_cpu_s": built, "kept_cpu_s_per_run": round(kept / len(runs), 2)}


def _commit() -> str:
    """The commit measured (a size's figures stay in pages.json until it is measured again)."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--views", type=int, default=20, help="warm views per page")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores are built")
    parser.add_argument("--db", default=None, help="a PostgreSQL server's URL: each store is "
                        "copied to a database of its own there (bench_pages_N, made afresh)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("DB", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # the views, in a process of their own: nothing warm from the build
        print(json.dumps(views(args.child[0], Path(args.child[1]), args.views, args.profile)))
        return
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-pages-"))
    out = {"backend": "postgresql" if args.db else "sqlite", "targets": TARGETS, "sizes": {}}
    for n in args.replies:
        folder = base / str(n)
        target, cost = prepared(n, folder, args.db)
        child = [sys.executable, __file__, "--views", str(args.views), "--child", target,
                 str(folder)] + (["--profile"] if args.profile else [])
        pages = json.loads(subprocess.run(child, check=True, capture_output=True,
                                          text=True).stdout)
        out["sizes"][n] = {**cost, "load": round(os.getloadavg()[0], 1),
                           "measured": time.strftime("%Y-%m-%d"), "commit": _commit(),
                           "pages": pages}
        print(f"\n{n:,} replies ({out['backend']}): each run kept at its end in "
              f"{cost['kept_cpu_s_per_run']} s CPU; load {out['sizes'][n]['load']}")
        print(f"{'page':44} {'KB':>7} {'first':>7} {'warm p50':>9} {'warm p95':>9}  (CPU s)")
        for path, p in pages.items():
            miss = (p["kb"] > TARGETS["kb"] or p["first_cpu_s"] > TARGETS["first_s"]
                    or p["warm_cpu_p95_s"] > TARGETS["warm_p95_s"] or p["status"] != 200)
            status = "" if p["status"] == 200 else f" (HTTP {p['status']})"
            print(f"{path[:44]:44} {p['kb']:7.1f} {p['first_cpu_s']:7.3f} "
                  f"{p['warm_cpu_p50_s']:9.3f} {p['warm_cpu_p95_s']:9.3f}"
                  f"{'  ✗' if miss else ''}{status}", flush=True)
    # each size measured replaces its own figures; the other sizes' stay (a 1M store takes
    # minutes to build, so the curve is measured a size at a time)
    path = ROOT / "bench" / ("pages.json" if not args.db else "pages-postgresql.json")
    before = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    out["sizes"] = {**before.get("sizes", {}), **{str(n): v for n, v in out["sizes"].items()}}
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
