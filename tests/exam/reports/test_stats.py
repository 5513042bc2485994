"""The statistics against independent values: scipy, and tables computed by hand.

scipy is imported in the tests that use it, all in the slow tier: imported here, it cost every
test worker ~2 s of collection, and in a test the fast tier's worker ~1.5 s."""

from __future__ import annotations

import math
import random

import pytest

from exam.reports.stats import (
    benjamini_hochberg,
    bootstrap_mean_interval,
    exact_2xk,
    pass_hat_k,
    pearson,
    percentile,
    repeats_to_settle,
    wilson,
)


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
@pytest.mark.parametrize("table", [(3, 0, 0, 3), (7, 3, 2, 7), (1, 4, 5, 0), (10, 0, 6, 4),
                                   (2, 1, 2, 1), (0, 5, 5, 0)])
def test_two_groups_is_fishers_exact_test(table):
    from scipy import stats as sp
    a, b, c, d = table
    ours = exact_2xk([a, c], [a + b, c + d])
    assert ours == pytest.approx(sp.fisher_exact([[a, b], [c, d]]).pvalue, rel=1e-9)


def test_freeman_halton_three_groups_by_hand():
    # passes 3/3, 0/3, 3/3: 6 passes among 9 trials. Tables with these margins:
    # P(a) = C(3,a1)C(3,a2)C(3,a3)/C(9,6). Observed (3,0,3): 1/84. Tables as extreme or more:
    # (3,3,0),(3,0,3),(0,3,3) each 1/84 -> p = 3/84.
    assert exact_2xk([3, 0, 3], [3, 3, 3]) == pytest.approx(3 / 84)


@pytest.mark.slow  # Monte Carlo draws (~1.5 s)
def test_monte_carlo_fallback_is_close_and_deterministic():
    passes, totals = [9, 2, 5, 7, 1, 3], [10] * 6
    exact = exact_2xk(passes, totals)
    approx = exact_2xk(passes, totals, max_tables=10, permutations=20_000)
    assert approx == exact_2xk(passes, totals, max_tables=10, permutations=20_000)
    assert approx == pytest.approx(exact, abs=0.01)


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_many_repeats_use_pearsons_chi_square():
    from scipy import stats as sp
    passes, totals = [150, 170, 120, 160], [200, 200, 200, 200]
    table = [passes, [t - a for a, t in zip(passes, totals, strict=True)]]
    expected = sp.chi2_contingency(table, correction=False).pvalue
    assert exact_2xk(passes, totals, max_tables=10) == pytest.approx(expected, rel=1e-6)


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
@pytest.mark.parametrize(("x", "df"), [(0.5, 1), (3.84, 1), (7.0, 3), (30.0, 7), (0.01, 5),
                                       (100.0, 2)])
def test_chi2_sf_matches_scipy(x, df):
    from scipy import stats as sp

    from exam.reports.stats import chi2_sf

    assert chi2_sf(x, df) == pytest.approx(sp.chi2.sf(x, df), rel=1e-8, abs=1e-300)


def freeman_halton(fails: list[int], totals: list[int]) -> float:
    """The exact p-value the slow way: every table with these margins, weighed by scipy."""
    import itertools

    from scipy import stats as sp

    m = sum(fails)
    dist = sp.multivariate_hypergeom(m=totals, n=m)
    observed = dist.pmf(fails)
    total = 0.0
    for cols in itertools.product(*(range(min(t, m) + 1) for t in totals)):
        if sum(cols) == m:
            p = dist.pmf(list(cols))
            if p <= observed * (1 + 1e-7):
                total += p
    return total


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_the_smaller_margin_is_enumerated():
    # 1660 of 1664 pass across 8 versions: 330 tables by the failing margin, so exact (by the
    # passing margin there would be millions, and the answer would be an estimate)
    passes, totals = [208, 208, 208, 207, 208, 208, 206, 207], [208] * 8
    fails = [t - a for a, t in zip(passes, totals, strict=True)]
    assert exact_2xk(passes, totals) == pytest.approx(freeman_halton(fails, totals), rel=1e-9)


def test_no_variation_is_p_one():
    assert exact_2xk([3, 3], [3, 3]) == 1.0
    assert exact_2xk([0, 0], [3, 3]) == 1.0


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_benjamini_hochberg_matches_scipy():
    from scipy import stats as sp
    p = [0.001, 0.2, 0.03, 0.04, 0.5, 0.01, 0.049]
    assert benjamini_hochberg(p) == pytest.approx(list(sp.false_discovery_control(p)))


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 3), (7, 10), (1, 20)])
def test_wilson_matches_scipy(k, n):
    from scipy import stats as sp
    ci = sp.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_pass_hat_k_by_hand():
    # 2 of 3 repeats passed: the chance that 3 drawn from 3 all pass is 0; 2 drawn: 1/3
    assert pass_hat_k(2, 3, 3) == 0
    assert pass_hat_k(2, 3, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 3, 3) == 1


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_pearson_matches_scipy():
    from scipy import stats as sp
    xs, ys = [1, 0, 1, 1, 0], [0.9, 0.2, 0.8, 0.6, 0.5]
    assert pearson(xs, ys) == pytest.approx(sp.pearsonr(xs, ys).statistic)
    assert pearson([1, 1, 1], [0.1, 0.2, 0.3]) is None


def test_percentile_matches_numpy_default():
    import numpy as np

    values = [120, 80, 300, 95, 101, 250]
    for q in (50, 95):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_repeats_to_settle():
    from scipy import stats as sp
    assert repeats_to_settle(0.0, 1.0) == 4  # 4/4 vs 0/4: Fisher p = 0.029
    assert sp.fisher_exact([[4, 0], [0, 4]]).pvalue < 0.05 < sp.fisher_exact([[3, 0], [0, 3]]).pvalue
    assert math.isclose(exact_2xk([4, 0], [4, 4]), 2 / 70)


def _walked_2x2(passes, totals, tolerance=1e-7):
    """Fisher's test as the general walk sums it (the reference for the two-group loop)."""
    from exam.reports.stats import _log_comb

    total_pass, n = sum(passes), sum(totals)
    if total_pass > n - total_pass:
        passes = [t - a for a, t in zip(passes, totals, strict=True)]
        total_pass = n - total_pass
    log_denom = _log_comb(n, total_pass)
    observed = sum(_log_comb(t, a) for t, a in zip(totals, passes, strict=True)) - log_denom
    acc = 0.0
    for a in range(max(0, total_pass - totals[1]), min(totals[0], total_pass) + 1):
        lp = 0.0 + _log_comb(totals[0], a) + _log_comb(totals[1], total_pass - a) - log_denom
        if lp <= observed + tolerance:
            acc += math.exp(lp)
    return min(1.0, acc)


def test_two_groups_give_the_walks_p_value_to_the_last_bit():
    rng = random.Random(11)
    for _ in range(3000):
        totals = [rng.randint(1, 300), rng.randint(1, 300)]
        passes = [rng.randint(0, t) for t in totals]
        if sum(passes) in (0, sum(totals)):
            continue
        assert exact_2xk(passes, totals) == _walked_2x2(passes, totals), (passes, totals)


def test_the_bootstrap_draws_what_choices_would_draw():
    rng = random.Random(5)
    for size in (2, 3, 7, 20, 61):
        data = [rng.random() for _ in range(size)]
        for seed in (0, 1, 42):
            draws = random.Random(seed)
            means = sorted(sum(draws.choices(data, k=size)) / size for _ in range(500))
            tail = (1 - 0.95) / 2
            assert bootstrap_mean_interval(data, resamples=500, seed=seed) == \
                (percentile(means, 100 * tail), percentile(means, 100 * (1 - tail)))


def test_a_versions_headline_rate_weighs_each_question_once_and_sits_in_its_interval():
    """Issue 32: after --settle, 27 extra repeats of one failing question made the version's
    rate 66% beside an interval of 85–100%. Every surface's headline rate (overview, scorecard,
    compare, notifications) is the mean over questions, inside its own interval."""
    from types import SimpleNamespace as Cell

    from exam.reports.overview import figures
    from exam.reports.stats import rate_of_cells

    same = dict(run_id=1, changed=False, run_status="ok", model_calls=None, tokens=None,
                latency_ms=None, attempts=1)
    cells = [Cell(case_no=f"Q{i}", verdict="pass", **same) for i in range(19) for _ in range(3)]
    cells += [Cell(case_no="Q19", verdict="pass" if r < 10 else "fail", **same)
              for r in range(30)]  # a settled question: 10 of 30
    rate = rate_of_cells(cells)
    assert rate["rate"] == (19 + 10 / 30) / 20  # not 67/87, the pooled cells
    shown = figures(cells, len(cells))
    lo, hi = shown["wilson"]
    assert shown["pass_rate"] == rate["rate"] and lo <= shown["pass_rate"] <= hi and lo < hi
    one = rate_of_cells([Cell(case_no="Q", verdict="pass", run_status="ok")] * 2)
    assert one["interval"][0] < one["interval"][1] == 1.0  # never a point from one question
