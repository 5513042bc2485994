"""The verdict's error rates, simulated through exam.reports.verdict.decide() with fixed seeds
(issue 32). Prints a markdown table per measure; docs/reports.md quotes these figures.

    PYTHONPATH=. python bench/verdict_errors.py false-holds|settle|ship [SIMS]
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


def settle_power(sims: int) -> None:
    """A true 90% → 50% drop on one of five questions; --settle's defaults (step 3, up to 40
    answered repeats, 300 calls)."""
    from exam.decide.settle import settle

    print("| scenario | hold of the dropped question | false hold (no drop) | calls, mean |")
    print("|---|---|---|---|")
    for label, old_n, both in (("OLD 3, NEW 3, both re-run (OLD reachable)", 3, True),
                               ("OLD 3, NEW 3, NEW only (OLD not reachable)", 3, False),
                               ("OLD 40, NEW 3, NEW only", 40, False)):
        held = false = calls = 0
        for seed in range(sims):
            for drop in (True, False):
                rng = random.Random(seed * 2 + drop + 7_000)
                rates_new = [0.5 if drop else 0.9] + [0.9] * 4

                def draw(p, k, rng=rng):
                    x = sum(rng.random() < p for _ in range(k))
                    return V.Tally(x, k - x)

                state = {f"Q{i}": (draw(0.9, old_n), draw(rates_new[i], 3)) for i in range(5)}

                def compare_at(levels, state=state):
                    qs = [V.Compared(c, "major", "c", n, o, o, ("v1",))
                          for c, (o, n) in state.items()]
                    return {"decision": V.decide(qs, V.Settings(), levels or None)}

                def run_more(cases, k, state=state, both=both, draw=draw, rates=rates_new):
                    for c in cases:
                        o, n = state[c]
                        state[c] = (o + draw(0.9, k) if both else o,
                                    n + draw(rates[int(c[1:])], k))
                    return len(cases) * k * (2 if both else 1)

                out = settle(compare_at, run_more, V.Settings(), bank_size=5,
                             sides=2 if both else 1)
                d = out.report["decision"]
                if drop:
                    held += any(h["case_no"] == "Q0" for h in d["hold"])
                    calls += out.spent
                else:
                    false += d["word"] == "hold"
        print(f"| {label} | {ci(held, sims)} | {ci(false, sims)} | {calls / sims:.0f} |",
              flush=True)


def _non_inferior(qs: list[V.Compared], delta: float = 0.1, z: float = 1.6448536269514722
                  ) -> bool:
    """Version-level non-inferiority: the one-sided 95% lower bound of the mean per-question
    difference (NEW − OLD, Agresti–Caffo per question) above −delta."""
    diffs, var = [], 0.0
    for q in qs:
        b, n = q.baseline, q.new
        pb, pn = (b.passes + 1) / (b.answered + 2), (n.passes + 1) / (n.answered + 2)
        diffs.append(n.passes / n.answered - b.passes / b.answered)
        var += pb * (1 - pb) / (b.answered + 2) + pn * (1 - pn) / (n.answered + 2)
    mean = sum(diffs) / len(diffs)
    return mean - z * var ** 0.5 / len(diffs) > -delta


def ship_errors(sims: int) -> None:
    """P(ship) under no change and under true drops, 20 questions, with the rule as it is and
    with a version-level non-inferiority requirement added (delta 10 points)."""
    scenarios = (("no change, every question 100%", [1.0] * 20, [1.0] * 20),
                 ("no change, every question 90%", [0.9] * 20, [0.9] * 20),
                 ("one question 100% → 60%, 19 at 100%", [1.0] * 20, [0.6] + [1.0] * 19),
                 ("one question 100% → 40%, 19 at 100%", [1.0] * 20, [0.4] + [1.0] * 19),
                 ("every question 100% → 95%", [1.0] * 20, [0.95] * 20),
                 ("every question 100% → 90%", [1.0] * 20, [0.9] * 20))
    print("| scenario | repeats | ship | ship with version-level non-inferiority (δ 10 points) |")
    print("|---|---|---|---|")
    for label, old, new in scenarios:
        for repeats in (3, 10):
            rng = random.Random(sum(map(ord, label)) * 100 + repeats)
            ship = ship_ni = 0
            for _ in range(sims):
                qs = []
                for i, (po, pn) in enumerate(zip(old, new, strict=True)):
                    o = sum(rng.random() < po for _ in range(repeats))
                    n = sum(rng.random() < pn for _ in range(repeats))
                    b = V.Tally(o, repeats - o)
                    qs.append(V.Compared(f"Q-{i:02d}", "major", "c",
                                         V.Tally(n, repeats - n), b, b, ("v1",)))
                word = V.decide(qs, figures=False)["word"]
                ship += word == "ship"
                ship_ni += word == "ship" and _non_inferior(qs)
            print(f"| {label} | {repeats} | {ci(ship, sims)} | {ci(ship_ni, sims)} |",
                  flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    {"false-holds": false_holds, "settle": settle_power, "ship": ship_errors}[what](n)
