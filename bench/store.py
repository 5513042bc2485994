"""The store's own speed on each backend: cells stored per second through ``record_cell`` (one
transaction per cell, as a run stores them, with two attempts and a grade each) from one thread
and from a run's pool of threads, and cells read per second through ``cells()`` (what a report
reads).

    python bench/store.py [--cells 2000] [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

PostgreSQL is measured in a database made for the run (and dropped after). Numbers go to stdout
as JSON; they are this machine's, not a promise.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine, text  # noqa: E402

from exam.db import engine as db_engine  # noqa: E402
from exam.store import AttemptRow, CellRow, Store  # noqa: E402

BODY = json.dumps({"answer": "訂單 A10302 目前備貨中，預計三個工作天內出貨。" * 8}, ensure_ascii=False)


def record(store: Store, run_id: int, cells: range) -> None:
    for i in cells:
        cell = CellRow(run_id, f"Q-{i % 100:03d}", i // 100 + 1, "d", "ok", "", BODY, "ok",
                       False, None, 1, 2, 1000, 210.0, time.time())
        store.record_cell(cell, [AttemptRow(k, time.time(), 200, 100.0, "", "application/json",
                                            BODY, len(BODY), False) for k in (1, 2)],
                          ("1.0.0", "pass", [{"name": "fact[0]", "outcome": "pass"}]))


def measure(target: str, n: int, threads: int) -> dict[str, float]:
    """Cells/s from one thread, then from ``threads`` threads sharing the Store (as a run's
    pool does), then the read."""
    store = Store(target)
    try:
        plan = [(f"Q-{i:03d}", "d") for i in range(100)]
        runs = [store.create_run(agent="B", version=f"v{v}", bank_path="b.json", bank_digest="b",
                                 repeats=n // 100 + 1, plan=plan, settings={}) for v in (1, 2)]
        start = time.perf_counter()
        record(store, runs[0], range(n))
        serial = time.perf_counter() - start
        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda k: record(store, runs[1], range(k, n, threads)), range(threads)))
        parallel = time.perf_counter() - start
        start = time.perf_counter()
        got = len(store.cells([runs[0]]))
        read = time.perf_counter() - start
        assert got == n and store.count_cells(runs[1]) == n
        return {"record_cell_per_s": round(n / serial),
                f"record_cell_per_s_{threads}_threads": round(n / parallel),
                "cells_read_per_s": round(n / read)}
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = measure(str(Path(tmp) / "exam.db"), args.cells, args.threads)
    admin = create_engine(db_engine.url_of(args.postgres), isolation_level="AUTOCOMMIT")
    name = f"exam_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = db_engine.url_of(args.postgres).set(database=name).render_as_string(hide_password=False)
    url = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        out["postgresql"] = measure(url, args.cells, args.threads)
    finally:
        db_engine.dispose(url)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
