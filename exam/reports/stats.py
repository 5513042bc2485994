"""Small statistics shared by the reports (no numpy: the figures are few)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method); None for no values."""
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def wilson(successes: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a pass rate (95% by default); an effective (fractional) count
    of cells is fine."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


_LOG_FACT = tuple(math.lgamma(i + 1) for i in range(4097))  # log(i!), the same floats lgamma gives


def _log_comb(n: int, k: int) -> float:
    if n < 4097:  # exact tests call this hundreds of thousands of times: a lookup, not 3 lgammas
        return _LOG_FACT[n] - _LOG_FACT[k] - _LOG_FACT[n - k]
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution (regularised upper gamma Q(df/2, x/2))."""
    if x <= 0:
        return 1.0
    a, z = df / 2, x / 2
    gln = math.lgamma(a)
    if z < a + 1:  # series for P, then Q = 1 - P
        term = total = 1.0 / a
        ap = a
        for _ in range(1000):
            ap += 1
            term *= z / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-z + a * math.log(z) - gln))
    b = z + 1 - a  # continued fraction for Q (Lentz)
    c, d = 1e300, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(-z + a * math.log(z) - gln) * h)


def pearson_2xk(passes: Sequence[int], totals: Sequence[int]) -> float:
    """Pearson's chi-square test of a 2 × k table (``scipy.stats.chi2_contingency``, no
    continuity correction)."""
    n, p = sum(totals), sum(passes)
    stat = 0.0
    for a, t in zip(passes, totals, strict=True):
        for observed, margin in ((a, p), (t - a, n - p)):
            expected = t * margin / n
            stat += (observed - expected) ** 2 / expected
    return chi2_sf(stat, len(totals) - 1)


def exact_2xk(passes: Sequence[int], totals: Sequence[int], *, max_tables: int = 200_000,
              permutations: int = 2_000, seed: int = 0) -> float:
    """Two-sided p-value that pass rates differ across k groups.

    Freeman–Halton's exact test (for two groups exactly Fisher's, as
    ``scipy.stats.fisher_exact``) whenever the tables with these margins number at most
    ``max_tables``. Larger tables, which come with many repeats, use Pearson's chi-square
    when every expected count is at least 5 (where it is accurate), else a seeded Monte
    Carlo estimate of the exact test.
    """
    k = len(totals)
    total_pass, n = sum(passes), sum(totals)
    if k < 2 or n == 0 or total_pass in (0, n):
        return 1.0
    if total_pass > n - total_pass:  # the test is symmetric: enumerate the smaller margin
        passes = [t - a for a, t in zip(passes, totals, strict=True)]
        total_pass = n - total_pass
    log_denom = _log_comb(n, total_pass)

    def log_p(cols: Sequence[int]) -> float:
        return sum(_log_comb(t, a) for t, a in zip(totals, cols, strict=True)) - log_denom

    observed = log_p(passes)
    tolerance = 1e-7
    if k == 2 and max(totals) < len(_LOG_FACT):
        # Fisher's test, the pairs of every question: walk()'s sums in walk()'s order, as a loop
        f, (t0, t1) = _LOG_FACT, totals
        acc = 0.0
        for a in range(max(0, total_pass - t1), min(t0, total_pass) + 1):
            b = total_pass - a
            lp = (f[t0] - f[a] - f[t0 - a]) + (f[t1] - f[b] - f[t1 - b]) - log_denom
            if lp <= observed + tolerance:
                acc += math.exp(lp)
        return min(1.0, acc)
    if math.comb(total_pass + k - 1, k - 1) <= max_tables:
        acc = 0.0
        suffix = [0] * (k + 1)
        for i in range(k - 1, -1, -1):
            suffix[i] = suffix[i + 1] + totals[i]

        def walk(i: int, left: int, partial: float) -> None:
            nonlocal acc
            if i == k - 1:
                if 0 <= left <= totals[i]:
                    lp = partial + _log_comb(totals[i], left) - log_denom
                    if lp <= observed + tolerance:
                        acc += math.exp(lp)
                return
            lo = max(0, left - suffix[i + 1])
            hi = min(totals[i], left)
            for a in range(lo, hi + 1):
                walk(i + 1, left - a, partial + _log_comb(totals[i], a))

        walk(0, total_pass, 0.0)
        return min(1.0, acc)
    if all(t * m / n >= 5 for t in totals for m in (total_pass, n - total_pass)):
        return pearson_2xk(passes, totals)
    import random

    rng = random.Random(seed)
    pool = [1] * total_pass + [0] * (n - total_pass)
    hits = 0
    for _ in range(permutations):
        rng.shuffle(pool)
        cols, start = [], 0
        for t in totals:
            cols.append(sum(pool[start:start + t]))
            start += t
        if log_p(cols) <= observed + tolerance:
            hits += 1
    return (hits + 1) / (permutations + 1)


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """BH-adjusted q-values, in the input order (scipy's ``false_discovery_control``)."""
    m = len(pvalues)
    if m == 0:
        return []
    order = sorted(range(m), key=lambda i: pvalues[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = min(1.0, running)
    return q


def pass_hat_k(successes: int, n: int, k: int) -> float | None:
    """tau-bench's pass^k: the chance that k repeats drawn from n all pass."""
    if n < k or k < 1:
        return None
    return math.comb(successes, k) / math.comb(n, k)


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx < 1e-12 or syy < 1e-12:  # a constant series has no correlation, not zero
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


def repeats_to_settle(p_low: float, p_high: float, alpha: float = 0.05, limit: int = 50) -> int | None:
    """Repeats per version at which a difference of this size would reach ``alpha``."""
    if p_high <= p_low:
        return None
    for n in range(2, limit + 1):
        a, b = round(p_high * n), round(p_low * n)
        if a > b and exact_2xk([a, b], [n, n]) < alpha:
            return n
    return None


# -- one-sided tests of "the new version is worse", and what they need ---------------------

def fisher_worse(old_pass: int, old_n: int, new_pass: int, new_n: int) -> float:
    """One-sided Fisher exact p-value that the new pass rate is lower than the old.

    Conditional on the margins, the old version's passes are hypergeometric; the p-value is
    P(X ≥ old_pass) (``scipy.stats.fisher_exact([[old_pass, old_n - old_pass],
    [new_pass, new_n - new_pass]], alternative="greater")``).
    """
    if old_n == 0 or new_n == 0:
        return 1.0
    total, n = old_pass + new_pass, old_n + new_n
    hi = min(old_n, total)
    log_denom = _log_comb(n, total)
    acc = 0.0
    for x in range(old_pass, hi + 1):
        acc += math.exp(_log_comb(old_n, x) + _log_comb(new_n, total - x) - log_denom)
    return min(1.0, acc)


def fisher_worse_min(old_pass: int, old_n: int, new_pass: int, new_n: int) -> float:
    """The smallest p-value ``fisher_worse`` can give with these margins (the screen's bound)."""
    if old_n == 0 or new_n == 0:
        return 1.0
    total, n = old_pass + new_pass, old_n + new_n
    x = min(old_n, total)
    return min(1.0, math.exp(_log_comb(old_n, x) + _log_comb(new_n, total - x)
                             - _log_comb(n, total)))


def discrete_bh(pvalues: Sequence[float], min_pvalues: Sequence[float],
                alpha: float | Sequence[float] = 0.05) -> tuple[list[float | None], int]:
    """Benjamini–Hochberg over only the hypotheses that can reach significance.

    A hypothesis whose smallest attainable p-value (given its margins) is above its alpha
    can never be rejected, whatever the others show; it is left out so that it does not
    inflate every q (a saturated 3/3 → 3/3). The screen reads each hypothesis's own margins
    only, never the p-values: conditional on the margins the null p-values stay valid, so BH
    over the kept ones controls the FDR (Gilbert 2005, whose proof needs only that the set is
    chosen from the margins). Unlike Tarone's smallest K, this screen is monotone: a fifth
    question dropping 3/3 → 0/3 cannot screen the other four out (Tarone's K = 2 left none).
    ``alpha``: one level, or one per hypothesis. Returns (q-values, None for an untestable
    hypothesis; the number testable).
    """
    m = len(pvalues)
    alphas = [alpha] * m if isinstance(alpha, int | float) else list(alpha)
    chosen = [i for i in range(m) if min_pvalues[i] <= alphas[i] * (1 + 1e-9)]
    q_sub = benjamini_hochberg([pvalues[i] for i in chosen])
    out: list[float | None] = [None] * m
    for i, qv in zip(chosen, q_sub, strict=True):
        out[i] = qv
    return out, len(chosen)


def _binom_pmf(n: int, p: float) -> list[float]:
    if p <= 0:
        return [1.0] + [0.0] * n
    if p >= 1:
        return [0.0] * n + [1.0]
    lp, lq = math.log(p), math.log1p(-p)
    return [math.exp(_log_comb(n, x) + x * lp + (n - x) * lq) for x in range(n + 1)]


def power_worse(old_pass: int, old_n: int, p_new: float, new_n: int, level: float) -> float:
    """Chance that ``new_n`` answered repeats of a question whose true pass rate is ``p_new``
    give ``fisher_worse(old_pass, old_n, ·, new_n) ≤ level`` (the old counts held as observed)."""
    pmf = _binom_pmf(new_n, p_new)
    total = 0.0
    for x, w in enumerate(pmf):  # fewer new passes, smaller p: stop at the first miss
        # exact p-values are rationals: one on the level reads as on it, whatever the float
        # rounding of its sum (the verdict reads p ≤ level the same way)
        if fisher_worse(old_pass, old_n, x, new_n) > level * (1 + 1e-9):
            break
        total += w
    return total


@functools.lru_cache(maxsize=8192)  # pure, and reports ask it the same few questions many times
def repeats_for_power(old_pass: int, old_n: int, p_new: float, level: float,
                      power: float = 0.8, limit: int = 200) -> int | None:
    """Fewest answered new repeats with at least ``power`` at ``level``; None beyond ``limit``.

    With the old counts held as observed, power levels off as new repeats grow (a few old
    repeats can only ever be so convincing), so ``limit`` is tried first: when even that falls
    short, no search is made (the common case for small differences, and the costly one)."""
    if old_n == 0 or p_new >= old_pass / old_n:
        return None
    if power_worse(old_pass, old_n, p_new, limit, level) < power - 1e-12:
        return None
    for n in range(1, limit + 1):
        if power_worse(old_pass, old_n, p_new, n, level) >= power - 1e-12:
            return n
    return None


def pass_at_k(successes: int, n: int, k: int) -> float | None:
    """Unbiased pass^k at a fixed k: C(c, k) / C(n, k); None with fewer than k repeats."""
    return pass_hat_k(successes, n, k)


def bootstrap_mean_interval(values: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                            level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a mean, resampling the units (questions), seeded."""
    data = tuple(values)
    if not data:
        return None
    if len(data) == 1:
        return (data[0], data[0])
    return _bootstrap(data, resamples, seed, level)


@functools.lru_cache(maxsize=4096)
def _bootstrap(data: tuple[float, ...], resamples: int, seed: int, level: float
               ) -> tuple[float, float]:
    """``bootstrap_mean_interval`` of two values or more, kept per process: seeded, so the
    same rates give the same interval, and the overview and runs page draw one per version
    and per run on every view (2,000 resamples each: most of a warm runs page's CPU)."""
    import random
    from itertools import islice, repeat, starmap

    rng = random.Random(seed)
    n = len(data)
    # rng.choices(data, k=n) draws data[floor(random() * n)] n times: the same draws, in the
    # same order, made and looked up in C (itertools) rather than in a Python loop
    scale = float(n)
    picks = map(data.__getitem__, map(int, map(scale.__rmul__,
                                                starmap(rng.random, repeat((), n * resamples)))))
    means = sorted(sum(islice(picks, n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return (percentile(means, 100 * tail), percentile(means, 100 * (1 - tail)))


def version_rate(counts: Sequence[tuple[int, int]], *, seed: int = 0,
                 level: float = 0.95) -> dict[str, float | int | list[float]] | None:
    """A version's pass rate: the mean of its questions' rates, so that a question asked 30
    times (a `--settle` round) weighs what a question asked 3 times does; with its interval.

    The interval is the percentile bootstrap over questions, widened to at least a Wilson
    interval on the effective number of cells of a mean of rates (n_eff = Q² / Σ 1/n_i, the
    binomial variance of that mean): the bootstrap alone collapses to a point with one
    question, or with every question at the same rate ("67%–67%"), and the Wilson interval
    never does, and always holds the rate. ``counts``: (passes, graded) per question."""
    graded = [(p, n) for p, n in counts if n]
    if not graded:
        return None
    rates = [p / n for p, n in graded]
    mean = sum(rates) / len(rates)
    n_eff = len(rates) ** 2 / sum(1 / n for _, n in graded)
    z = _normal_quantile(0.5 + level / 2)
    lo, hi = wilson(mean * n_eff, n_eff, z)
    boot = bootstrap_mean_interval(rates, seed=seed, level=level) if len(rates) >= 2 else None
    if boot is not None:
        lo, hi = min(lo, boot[0]), max(hi, boot[1])
    return {"rate": mean, "interval": [lo, hi], "questions": len(rates),
            "cells": sum(n for _, n in graded), "effective_cells": n_eff}


def rate_of_cells(cells: Sequence[Any]) -> dict[str, Any] | None:
    """``version_rate`` of graded cells (anything with ``case_no`` and ``verdict``): the one
    headline pass rate every surface shows for a version, repeats weighing nothing extra."""
    per: dict[str, list[int]] = {}
    for c in cells:
        if c.verdict in ("pass", "fail", "needs_human"):
            got = per.setdefault(c.case_no, [0, 0])
            got[0] += c.verdict == "pass"
            got[1] += 1
    return version_rate([(p, n) for p, n in per.values()])


def _normal_quantile(p: float) -> float:
    """The standard normal quantile (bisection on erf: a few figures, no scipy)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
