"""Grading time of every demo question on hostile replies (issue 31): one unbroken sentence
of the question's own hits, digit runs, mark floods (tests/graders/hostile.py), at each size
given. CPU seconds per grade with the scope model's caches emptied first; prints the worst.

    PYTHONPATH=. .venv/bin/python bench/hostile.py 1000 20000 200000
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graders import Reply, grade, negation  # noqa: E402
from tests.graders.hostile import demo_questions, replies  # noqa: E402


def _forget() -> None:
    for name in ("_read_view", "_tokens", "_present", "_emoji_breaks"):
        cached = getattr(negation, name, None)  # _read_view is 2.3.0's
        if cached is not None:
            cached.cache_clear()


def measure(size: int, shapes: set[str] | None = None) -> list[tuple[float, str, str, str]]:
    qs = demo_questions()
    for q in qs:
        grade(q, Reply(text="您好，暖身。", status="ok"))
    out = []
    for q in qs:
        for shape, text in replies(q, size):
            if shapes and shape not in shapes:
                continue
            r = Reply(text=text, status="ok")
            _forget()
            t0 = time.process_time()
            g = grade(q, r)
            out.append((time.process_time() - t0, q.case_no, shape, str(g.verdict)))
    return sorted(out, reverse=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a.isdigit()]
    shapes = {a for a in sys.argv[1:] if not a.isdigit()} or None
    for size in map(int, args or ["20000"]):
        times = measure(size, shapes)
        worst = times[0]
        median = statistics.median(t[0] for t in times)
        print(f"{size} chars: {len(times)} grades, median {median * 1e3:.1f} ms, "
              f"worst {worst[0] * 1e3:.1f} ms ({worst[1]} {worst[2]}: {worst[3]})", flush=True)
