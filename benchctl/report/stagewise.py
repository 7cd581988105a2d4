"""The effect a group-sequential claim is reported with, adjusted for where it stopped: the median-unbiased
estimate of the stagewise ordering and the conditional bias-adjusted estimate (`report.sequential`; docs/report.md
"Seeds until decided").

A claim that stops early stops because its effect looked large: the look's mean is biased away from zero (decided
at look 1: +1.48 sd printed for a true 1 sd, issue 41).
* Median-unbiased (`median_unbiased`): the stagewise ordering of Armitage (1957) and Fairbanks & Madsen (1982), as
  in Jennison & Turnbull (2000, Group Sequential Methods, §8.4), puts an exit upward at an earlier look above every
  later outcome, an exit downward at an earlier look below, and outcomes at one look in the order of their mean:
  an outcome is (the look it stops at, its mean there), and a path that goes on past look k is a later outcome,
  below an upward exit at k and above a downward one, whatever its mean at k.  The estimate is the effect theta at
  which P_theta(outcome above the observed) = 1/2 (Whitehead 1997, The Design and Analysis of Sequential Clinical
  Trials, §5.3).  It is median-unbiased over all stops pooled, not given the look (a first-look stop stays
  inflated given that look, below).  With a known sd a first-look estimate is the look's mean; with an estimated
  one it is at least that (a larger mean that did not stop, its sd large, is a later outcome).  Before (issue 41
  item 9) every path reaching look k was placed by its mean there, whether it stopped or went on: no ordering of
  outcomes (a path going on with a large sd counted above an upward stop), and the estimate fell below the truth
  more often than above.  P(estimate > truth), 1,000 claims, design 4, 8, 2 at delta = sigma, the same claims
  before -> after (benchmarks/design_stagewise.py): with the true sd 47.2% -> 50.9% (MC se 1.6), exactly
  median-unbiased after; with the deciding look's sd, as reported, 45.9% -> 46.8%: the plug-in sd remains.
* Bias-adjusted (`bias_adjusted`): the conditional bias-reduced estimate of Troendle & Yu (1999, Statistics in
  Medicine; Fan, DeMets & Lan 2004, J. Biopharmaceutical Statistics), the theta at which E_theta[the look's mean |
  the claim stops at this look, the same way] equals the observed mean: it targets the bias given the deciding look.

Computation [our choice]: both by Monte Carlo on `PATHS` paths of i.i.d. normal seeds (the first `PATHS` of
`sequential.t_boundary`'s own paths, RNG seed 0, common to every theta), each path run through the design's looks
with the claim's own decision rule (`claims.verdict`'s, vectorised in `exits`: holds is an exit upward; does not
hold and paper's effect excluded are exits downward), the per-seed sd fixed at the deciding look's estimate (a
plug-in: sd = se * sqrt(seeds); a claim decided at an early look is decided partly because its sd came out small,
which the plug-in cannot undo: given a first-look stop at a true 1 sd the look's sd is about 0.3 of the true one,
the model then sees almost no selection, and the bias-adjusted estimate barely moves, where at the true sd its
model matches the simulated selection; benchmarks/design_stagewise.py, docs/report.md). The
scale is the claim's: the effect for an absolute claim, the log ratio for a relative one (its interval is symmetric
there), mirrored for `less` / `at_most`; se is the look's interval half-width over the design's t critical value
on seeds - 1 df (for pass@k under `--population problems` the crossed interval's df differ: an approximation).
Neither is computed for a claim with `requires` (its stop also depends on its premise's looks) nor for a claim not
decided yet before the last look (it has not stopped).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.optimize import brentq

PATHS = 50_000  # Monte Carlo paths of the p-function (MC se of a probability <= 0.0023)
STAGEWISE_COLUMNS = ("median_unbiased", "bias_adjusted")


@functools.lru_cache(maxsize=16)
def _moments(seeds: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(standardised mean, sd) of the first PATHS standard normal paths at each look of `seeds` seeds: (M, K) each."""
    x = np.random.default_rng(0).standard_normal((PATHS, max(seeds)))  # as sequential.t_boundary's first paths
    n = np.array(seeds)
    total, squares = np.cumsum(x, axis=1)[:, n - 1], np.cumsum(x * x, axis=1)[:, n - 1]
    mean = total / n
    return mean, np.sqrt(np.maximum(squares - n * mean**2, 0.0) / np.maximum(n - 1, 1))


def _to_effect(u, relative: bool, sign: int):
    """The mirrored effect (in the claim's direction) of a mirrored value u on the claim's scale."""
    if not relative:
        return u
    return np.expm1(u) if sign > 0 else -np.expm1(-u)


def exits(direction: str, margin: float, stated: float | None, low, high) -> np.ndarray:
    """+1 (holds), -1 (does not hold, paper's effect excluded) or 0 (inconclusive) of intervals [low, high] in the
    claim's units, exactly as `claims.verdict` with enough seeds (vectorised)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    if direction in ("less", "at_most"):
        low, high = -high, -low
    bar = 0.0 if direction in ("greater", "less") else -margin
    down = high <= bar if direction in ("greater", "less") else high < bar
    if stated is not None and np.isfinite(stated):
        down = down | (high < stated)
    return np.where(down, -1, np.where(low > bar, 1, 0))


def p_function(mu: float, sd: float, observed: tuple[int, float, int], design_looks, claim) -> float:
    """P_mu(outcome >= observed) in the stagewise ordering (module docstring): the share of paths that exit upward
    (holds) before look k, stop at look k with a mean above m*, or (the observed a downward exit) go on past look
    k; observed = (look index k, mirrored mean m*, its exit: +1 upward, -1 downward, 0 the last look reached
    undecided), `design_looks` = (seeds, critical values) of the design, mu the mirrored effect on the claim's
    scale.  Every path reaching the last look stops there."""
    seeds, crit = design_looks
    k, u_star, way_k = observed
    sign = -1 if claim.direction in ("less", "at_most") else 1
    zbar, zsd = _moments(tuple(seeds[: k + 1]))
    n = np.array(seeds[: k + 1])
    u = mu + sd * zbar  # (M, k + 1) mirrored means
    half = np.asarray(crit[: k + 1])[None, :] * sd * zsd / np.sqrt(n)  # inf where a look spends nothing
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = _to_effect(u - half, claim.relative, sign), _to_effect(u + half, claim.relative, sign)
        if sign < 0:  # exits() mirrors `less` claims itself: hand it the claim's own units
            lo, hi = -hi, -lo
        e = exits(claim.direction, claim.margin, claim.stated_effect, lo, hi)  # (M, k + 1)
    e[:, n < 3] = 0
    if k == len(seeds) - 1:
        e[:, k] = 2  # the last look: every path stops there
    first = np.where((e != 0).any(axis=1), (e != 0).argmax(axis=1), k + 1)  # (M,) the first exit; k + 1: goes on
    way = e[np.arange(len(first)), np.minimum(first, k)]
    above = ((first < k) & (way == 1)) | ((first == k) & (u[:, k] > u_star)) | ((first > k) & (way_k < 0))
    return float(above.mean())


def conditional_mean(mu: float, sd: float, observed: tuple[int, int], design_looks, claim) -> float:
    """E_mu[mirrored mean at look k | the claim stops at look k the way it did] (observed = (look index k, exit
    way: +1 holds, -1 does not hold or excluded, 0 the last look reached undecided)); NaN under 50 such paths."""
    seeds, crit = design_looks
    k, way_k = observed
    sign = -1 if claim.direction in ("less", "at_most") else 1
    zbar, zsd = _moments(tuple(seeds[: k + 1]))
    n = np.array(seeds[: k + 1])
    u = mu + sd * zbar  # (M, k + 1)
    half = np.asarray(crit[: k + 1])[None, :] * sd * zsd / np.sqrt(n)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = _to_effect(u - half, claim.relative, sign), _to_effect(u + half, claim.relative, sign)
        if sign < 0:
            lo, hi = -hi, -lo
        e = exits(claim.direction, claim.margin, claim.stated_effect, lo, hi)  # (M, k + 1)
    e[:, n < 3] = 0
    going = (e[:, :k] == 0).all(axis=1)  # (M,) no exit before look k
    event = going if k == len(seeds) - 1 else going & (e[:, k] == way_k)
    return float(u[event, k].mean()) if event.sum() >= 50 else np.nan


def stagewise_estimate(row: dict, claim, seeds: tuple[int, ...], crit: tuple[float, ...], alpha: float):
    """(median-unbiased estimate of the stagewise ordering, conditional bias-adjusted estimate) of a claim's
    effect in its units (module docstring); NaNs when it is not adjusted (a premise, not stopped, no interval)."""
    nan = (np.nan, np.nan)
    k = int(row["look"]) - 1
    low, high, effect = (float(row[c]) for c in ("low", "high", "effect"))
    if claim.requires is not None or not np.isfinite(low) or not np.isfinite(high) or not np.isfinite(crit[k]):
        return nan
    way = int(exits(claim.direction, claim.margin, claim.stated_effect, low, high))
    if way == 0 and k < len(seeds) - 1:
        return nan  # not stopped yet
    if claim.relative and min(low, high, effect) <= -1:
        return nan
    sign = -1 if claim.direction in ("less", "at_most") else 1
    scale = np.log1p if claim.relative else (lambda v: v)
    se = (scale(high) - scale(low)) / (2.0 * crit[k])  # crit[k]: the look's t quantile on seeds - 1 df
    if not se > 0:
        return nan
    sd, u_star = se * np.sqrt(seeds[k]), sign * float(scale(effect))
    looks = (seeds, crit)
    median = _solve_increasing(lambda mu: p_function(mu, sd, (k, u_star, way), looks, claim) - 0.5, u_star, se)
    adjusted = _solve(lambda mu: conditional_mean(mu, sd, (k, way), looks, claim) - u_star, u_star, se)
    back = [sign * v for v in (median, adjusted)]
    return tuple(float(np.expm1(v)) if claim.relative else float(v) for v in back)


def _solve_increasing(g, u_star: float, se: float) -> float:
    """The mu within 8 se of u* where g, non-decreasing in mu and defined everywhere (the p-function: on common paths
    each path's event only grows with mu), crosses 0, by bisection from the two ends; NaN when it does not cross
    there.  The same root as `_solve`'s grid, in about 12 evaluations of g instead of 81 [our choice: speed]."""
    low, high = u_star - 8.0 * se, u_star + 8.0 * se
    if not g(low) < 0 <= g(high):
        return np.nan
    return float(brentq(g, low, high, xtol=1e-3 * se))


def _solve(g, u_star: float, se: float, points: int = 81) -> float:
    """The mu within 8 se of u* where g (increasing; NaN where undefined) crosses 0: the first sign change on a grid,
    refined by bisection; NaN when there is none."""
    grid = u_star + se * np.linspace(-8.0, 8.0, points)
    values = np.array([g(mu) for mu in grid])
    ok = np.isfinite(values)
    change = np.flatnonzero(ok[:-1] & ok[1:] & (values[:-1] < 0) & (values[1:] >= 0))
    if not len(change):
        return np.nan
    i = int(change[0])
    return float(brentq(lambda mu: np.nan_to_num(g(mu), nan=0.0), grid[i], grid[i + 1], xtol=1e-3 * se))


def stagewise_note(row: dict, claim) -> str:
    """'bias-adjusted +0.6 pts, median-unbiased +0.8 pts': the adjusted effects beside the look's, in the claims
    table's units (percent for a relative effect, points for pass@k), with a caveat for a stop at the first look
    (measured: neither estimate, nor the conditional MLE, moves it much; docs/report.md); '' when not adjusted."""
    scale, unit = (100.0, "%") if claim.relative else (100.0, " pts") if claim.metric == "pass@k" else (1.0, "")
    parts = [
        f"{name} {row[col] * scale:+.1f}{unit}"
        for name, col in (("bias-adjusted", "bias_adjusted"), ("median-unbiased", "median_unbiased"))
        if np.isfinite(row.get(col, np.nan))
    ]
    if not parts:
        return ""
    first = int(row.get("look", 0)) == 1 and exits(claim.direction, claim.margin, claim.stated_effect, row["low"],
                                                  row["high"]) != 0  # fmt: skip
    caveat = (
        "; a first-look stop: given this look the effect and both estimates are inflated (the stop selected a small "
        "seed sd, which these seeds cannot undo); median-unbiased holds over all looks pooled"
        if first
        else ""
    )
    return f"effect adjusted for stopping: {', '.join(parts)}{caveat}"
