"""What the dashboard's list pages cost at a year of history: first view and warm, per page.

A store of N replies is built with bench/data.py (3 agents × 8 versions × 20 questions), then
each page is asked for through Flask's test client, logged in: once cold (nothing kept: the
replies graded, the runs and walks kept) and three times warm. Each view's CPU (this process's
user + system time) and wall time are printed and written to bench/pages.json; CPU is the
figure to compare on a shared machine. ``--profile`` writes a cProfile of the second view of
each page beside it.

    python bench/pages.py                      # 100,000 replies, /, /runs, /review
    python bench/pages.py --replies 10000 --paths / /runs /review /discrimination
    python bench/pages.py --db postgresql://postgres@127.0.0.1:5432/bench_pages

A store already built in ``--dir`` is used again (its first views are then warm).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TOKEN = "bench-token-3d91"


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
    resp = client.get(path)
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    return {"status": resp.status_code, "kb": round(len(resp.data) / 1024, 1),
            "cpu_s": round(cpu() - c0, 3), "wall_s": round(time.perf_counter() - t0, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=100_000)
    parser.add_argument("--paths", nargs="*", default=["/", "/runs", "/review"])
    parser.add_argument("--dir", type=Path, default=None, help="where the store is built")
    parser.add_argument("--db", default=None, help="a postgresql:// URL to copy the store to")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    from data import build_store

    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-pages-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "regrade.db"
    if not db.exists():
        c0 = cpu()
        build_store(folder, replies=args.replies)
        print(f"built {args.replies} replies in {folder} ({cpu() - c0:.1f} s CPU)")
    target = str(db)
    if args.db:
        from exam.store.copy import copy_store

        copy_store(str(db), args.db, replace=True)  # a bench database: emptied first
        target = args.db
    registry = folder / "agents.yaml"
    registry.write_text("agents: {}\n", encoding="utf-8")
    client = logged_in(target, registry)
    out = {"replies": args.replies, "backend": "postgresql" if args.db else "sqlite",
           "load": os.getloadavg()[0], "pages": {}}
    for path in args.paths:
        name = path.strip("/").replace("/", "_").replace("?", "_") or "overview"
        first = view(client, path)
        warm = [view(client, path, folder / f"{name}.prof" if args.profile and i == 0
                     else None) for i in range(3)]
        out["pages"][path] = {"first": first, "warm": warm,
                              "warm_cpu_median_s": statistics.median(w["cpu_s"] for w in warm)}
        print(f"{path:16} {first['status']}  {first['kb']:7.1f} KB  first {first['cpu_s']:6.2f} s "
              f"CPU ({first['wall_s']:6.2f} s wall)  warm {out['pages'][path]['warm_cpu_median_s']:6.2f}"
              f" s CPU (median of 3)", flush=True)
    (ROOT / "bench" / "pages.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
