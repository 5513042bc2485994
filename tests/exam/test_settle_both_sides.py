"""`--settle` re-runs both versions when OLD can still be asked (issue 32), simulated through
exam.decide.settle.settle() and the verdict's own decide() with fixed seeds."""

from __future__ import annotations

import random

import pytest

from exam.decide.settle import settle
from exam.reports import verdict as V
from exam.reports.stats import wilson

pytestmark = pytest.mark.slow  # 300 simulated settles a test (~3 s each)


def simulate(seed, *, drop=True, both=True, questions=5, old_n=3, new_n=3, budget=300):
    """Q0 falls from 90% to 50% (or not); the other questions pass 90% in both versions."""
    rng = random.Random(seed)
    old_rate = [0.9] * questions
    new_rate = [0.5 if drop else 0.9] + [0.9] * (questions - 1)

    def draw(p, k):
        x = sum(rng.random() < p for _ in range(k))
        return V.Tally(x, k - x)

    state = {f"Q{i}": (draw(old_rate[i], old_n), draw(new_rate[i], new_n))
             for i in range(questions)}

    def compare_at(levels):
        qs = [V.Compared(c, "major", "c", n, o, o, ("v1",)) for c, (o, n) in state.items()]
        return {"decision": V.decide(qs, V.Settings(), levels or None)}

    def run_more(cases, k):
        for c in cases:
            i = int(c[1:])
            o, n = state[c]
            state[c] = (o + draw(old_rate[i], k) if both else o, n + draw(new_rate[i], k))
        return len(cases) * k * (2 if both else 1)

    return settle(compare_at, run_more, V.Settings(), bank_size=questions, budget=budget,
                  step=3, max_repeats=40, sides=2 if both else 1)


def test_settle_with_old_reachable_holds_a_real_drop_from_three_repeats_each():
    """90% → 50% on one of five questions, OLD and NEW at 3 repeats, --settle re-running both:
    held in ≥ 80% of 300 simulations (the 95% Wilson lower bound is above 80%)."""
    sims = 300
    held = spent = 0
    for seed in range(sims):
        out = simulate(seed)
        held += any(h["case_no"] == "Q0" for h in out.report["decision"]["hold"])
        spent += out.spent
        assert out.spent <= 300 and out.report["settle"]["sides"] == 2
    assert wilson(held, sims)[0] >= 0.8, f"{held}/{sims}"


def test_settle_of_both_sides_keeps_false_holds_under_alpha():
    sims = 300
    false = sum(simulate(seed, drop=False).report["decision"]["word"] == "hold"
                for seed in range(1000, 1000 + sims))
    assert wilson(false, sims)[1] <= 0.05, f"{false}/{sims}"


def test_without_old_the_power_its_repeats_allow_is_stated_and_true():
    """OLD 3/3 on five questions, NEW to 40 repeats: the stated rate is where the last look
    (its level after the interim looks) holds with 80% power, checked with scipy."""
    import pytest
    from scipy import stats

    from exam.decide.settle import Design, old_power, power_line

    b = V.Tally(3, 0)
    qs = [V.Compared(f"Q{i}", "major", "c", V.Tally(2, 1), b, b, ("v1",)) for i in range(5)]
    report = {"decision": V.decide(qs)}
    figures = old_power(report, Design(5), [f"Q{i}" for i in range(5)], V.Settings(), 40)
    rate = figures[0]["detectable_rate"]
    level = 0.05 / 5 * (1 - 0.01 * (1 + 13))  # 37 more repeats in steps of 3: 13 looks more

    def power(p):
        return sum(stats.binom.pmf(x, 40, p) for x in range(41)
                   if stats.fisher_exact([[3, 0], [x, 40 - x]],
                                         alternative="greater").pvalue <= level)

    assert power(rate) == pytest.approx(0.8, abs=1e-3) and power(rate + 0.01) < 0.8
    line = power_line("v1", "v2", figures, 40)
    assert f"falls to about {rate:.0%} or lower" in line and "v1 cannot be asked again" in line
