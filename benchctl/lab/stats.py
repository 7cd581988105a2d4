"""Small statistics helpers for the lab (no scipy): Student-t quantile, mean with CI, ratio estimator SE."""

from __future__ import annotations

import math

import numpy as np


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student t with df degrees of freedom, t >= 0: Simpson integration of the density."""
    n = 4000  # even; error << 1e-9 for t <= 20 and df >= 1
    x = np.linspace(0.0, t, n + 1)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    pdf = np.exp(log_norm - (df + 1) / 2 * np.log1p(x * x / df))
    weights = np.ones(n + 1)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return 0.5 + float((weights * pdf).sum() * (t / n) / 3.0)


def t_quantile(q: float, df: int) -> float:
    """Upper quantile of Student t (e.g. q = 0.975 for a two-sided 95% interval); bisection on the CDF."""
    if df >= 200:
        from statistics import NormalDist

        return NormalDist().inv_cdf(q)
    lo, hi = 0.0, 700.0 if df == 1 else 30.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _t_cdf(mid, df) < q else (lo, mid)
    return 0.5 * (lo + hi)


def mean_ci(values, axis: int = 0, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Mean over `axis` and the half-width of its t confidence interval (0 when only one value)."""
    arr = np.asarray(values, dtype=float)
    n = arr.shape[axis]
    mean = arr.mean(axis=axis)
    if n < 2:
        return mean, np.zeros_like(mean)
    sem = arr.std(axis=axis, ddof=1) / math.sqrt(n)
    return mean, t_quantile(0.5 + level / 2, n - 1) * sem


def ratio_mean_se(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """R = sum(num) / sum(den) over independent units, with its delta-method standard error.

    Used for conditional means such as E[A | S, correct] = sum of advantages of correct rollouts over
    the number of correct rollouts, with independent batches as units. NaN when the denominator is 0.
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    total = den.sum()
    if total <= 0:
        return math.nan, math.nan
    ratio = num.sum() / total
    n = len(num)
    if n < 2:
        return float(ratio), math.nan
    resid = num - ratio * den
    se = math.sqrt(n / (n - 1) * float((resid**2).sum())) / total
    return float(ratio), se
