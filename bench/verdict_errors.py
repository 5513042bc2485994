"""The verdict's error rates, simulated through exam.reports.verdict.decide() with fixed seeds
(issue 32). Prints a markdown table per measure; docs/reports.md quotes these figures.

    PYTHONPATH=. python bench/verdict_errors.py false-holds [SIMS]
"""

from __future__ import annotations

import random
import sys

from exam.reports import verdict as V
from exam.reports.stats import wilson


class Cell:
    __slots__ = ("verdict", "run_status")

    def __init__(self, verdict: str) -> None:
        self.verdict, self.run_status = verdict, "ok"


def draw(rng: random.Random, rate: float, repeats: int) -> list[Cell]:
    passes = sum(rng.random() < rate for _ in range(repeats))
    return [Cell("pass")] * passes + [Cell("fail")] * (repeats - passes)


def identical(rng, versions, rate, repeats, questions=20):
    names = [f"v{i + 1}" for i in range(versions)]
    cells = {f"Q-{i:02d}": {v: draw(rng, rate, repeats) for v in names}
             for i in range(questions)}
    return V.questions_from(cells, {}, dict.fromkeys(cells, ("major", "c")), names[-2],
                            names[-1])


def ci(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:.1%} ({lo:.1%}–{hi:.1%})"


def false_holds(sims: int) -> None:
    print("| versions | pass rate | repeats | false hold (95% Wilson CI) | ship |")
    print("|---|---|---|---|---|")
    for versions in (3, 4, 6):
        for rate in (0.9, 0.7):
            for repeats in (3, 10):
                rng = random.Random(32_000 + versions * 100 + repeats + int(rate * 10))
                words = [V.decide(identical(rng, versions, rate, repeats), figures=False)["word"]
                         for _ in range(sims)]
                print(f"| {versions} | {rate:.0%} | {repeats} | {ci(words.count('hold'), sims)} "
                      f"| {ci(words.count('ship'), sims)} |", flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    {"false-holds": false_holds}[what](n)
