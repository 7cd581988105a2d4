"""Interval helpers for the lab: Student-t quantile (scipy), mean with its t interval, ratio estimator SE."""

from __future__ import annotations

import math

import numpy as np


def t_quantile(q: float, df: int) -> float:
    """Upper quantile of Student t (e.g. q = 0.975 for a two-sided 95% interval): `scipy.stats.t.ppf`."""
    from scipy.stats import t

    return float(t.ppf(q, df))


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
