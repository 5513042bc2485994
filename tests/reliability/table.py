"""The rows of the reliability table (docs/reliability.md) the tests add as they run, written to
tests/artifacts/reliability.json and .md when the session ends. Under pytest-xdist each worker
hands its rows to the controller, which writes them all (tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

ROWS: list[dict] = []


def record(area: str, tried: str, times: int, happened: str, lost: str = "nothing") -> None:
    ROWS.append({"area": area, "tried": tried, "times": times, "happened": happened,
                 "lost": lost})


def write(rows: list[dict], out: Path) -> None:
    """The table as JSON and as Markdown in ``out``, ordered by area (workers finish in any
    order)."""
    rows = sorted(rows, key=lambda r: r["area"])  # stable: an area's rows keep their order
    out.mkdir(parents=True, exist_ok=True)
    (out / "reliability.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2))
    lines = ["| area | what was tried | times | what happened | lost |", "|---|---|---|---|---|"]
    lines += [f"| {r['area']} | {r['tried']} | {r['times']} | {r['happened']} | {r['lost']} |"
              for r in rows]
    (out / "reliability.md").write_text("\n".join(lines) + "\n")
