"""The rebalance report's shared wording: its rules line, its history notes and its category
table, read by the text and markdown renderings (formats.py) and the HTML one (html.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def rules(settings: dict[str, Any]) -> str:
    low, high = settings["band"]
    return (f"band {low:.0%}–{high:.0%} pass rate on the latest version · retire a guard only "
            f"after {settings['min_versions']} version(s) with ≥ {settings['min_repeats']} graded "
            f"repeats, never a critical one, keeping {settings['keep_guards']} per category · "
            f"want {settings['target_informative']} informative per category · item-rest from "
            f"{settings['min_runs_item_rest']} runs · FDR {settings['alpha']:g}")


def notes(a: dict[str, Any], bullet: str) -> list[str]:
    """The lines about history and omissions: the change since the last snapshot, item-rest,
    run stability."""
    out = []
    d = a.get("since_snapshot")
    if d:
        when = dt.datetime.fromtimestamp(d["previous_at"], dt.UTC).strftime("%Y-%m-%d")
        out.append(f"{bullet}{d['headline']} (snapshot of {when}, versions "
                   f"{', '.join(d['previous_versions'])})")
        for c in d["role_changes"]:
            out.append(f"{bullet}  {c['case_no']}: {c['before']} → {c['after']}")
        for m in d["difficulty_moves"]:
            out.append(f"{bullet}  {m['case_no']}: latest pass rate {pct(m['before'])} → "
                       f"{pct(m['after'])}")
        if d["added"]:
            out.append(f"{bullet}  added: {', '.join(d['added'])}")
        if d["removed"]:
            out.append(f"{bullet}  removed: {', '.join(d['removed'])}")
        for cat, counts in d["categories"].items():
            moved = [f"{k} {v['before']} → {v['after']}" for k, v in counts.items()
                     if v["before"] != v["after"]]
            if moved:
                out.append(f"{bullet}  {cat}: {', '.join(moved)}")
    else:
        out.append(f"{bullet}no earlier snapshot (save one with --save)")
    ir = a["item_rest"]
    out.append(f"{bullet}{ir['reason']}" if not ir["shown"] else f"{bullet}item-rest: {ir['reason']}")
    if a["stability"]["note"]:
        out.append(f"{bullet}{a['stability']['note']}")
    return out


def category_table(a: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    head = ["category", "questions", "informative", "guards kept", "retire", "too early", "add",
            "harden", "more repeats", "fix", "audit"]
    rows = [[p["category"], p["questions"], p["informative"], len(p["guards_kept"]),
             len(p["retire"]), len(p["too_early_to_retire"]), p["add"], len(p["harden"]),
             len(p["add_repeats"]), len(p["fix"]), len(p["audit"])] for p in a["categories"]]
    return head, rows
