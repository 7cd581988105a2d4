"""Compute curves: held-out score against rollout compute, fitted per arm with the ScaleRL sigmoid.

ScaleRL (Khatri et al. 2025, arXiv 2510.13786, Eq. 1) compares RL methods by the saturating curve

    R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)

of held-out score R against compute C: `A` the asymptote (the best score the method reaches), `B` the efficiency
exponent (how sharply it gets there), `C_mid` the compute at which half of the gain A - R0 is reached. Here C is
rollout tokens generated (`rollout/tokens_total`, every sampled token, dropped groups included), R a held-out
pass@k, and R0 the score of the starting model (the step-0 evaluation, shared by all arms) [our choice: fixed, as in
ScaleRL, so that A, B and C_mid describe the training alone; fitted too when no run evaluated at step 0].

Estimate: one least-squares fit (`fit_curve`: A and R0 in [0, 1], B in [0.2, 10], C_mid within e^-2 .. e^3 of the
data's compute range) to the points of every seed of the arm. Uncertainty [our choice]: the training run is the
unit, so the CIs come from a percentile bootstrap over seeds: resample the arm's seeds with replacement, fit their
pooled points again; an arm with one seed has no CI. Comparison with the baseline: the differences of the bootstrap
replicates (resampled independently per arm); an arm is better when the asymptote's difference CI is above 0, and at
equal asymptote (the CI contains 0) when the midpoint's ratio CI is below 1 (it gets there with less compute).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

COMPARE_COLUMNS = [
    *("arm", "baseline", "eval_task", "asymptote_diff", "asymptote_diff_low", "asymptote_diff_high"),
    *("midpoint_ratio", "midpoint_ratio_low", "midpoint_ratio_high", "verdict"),
]
FIT_COLUMNS = (
    "arm",
    "eval_task",
    "asymptote",
    "asymptote_low",
    "asymptote_high",
    "efficiency",
    "efficiency_low",
    "efficiency_high",
    "midpoint",
    "midpoint_low",
    "midpoint_high",
    "r0",
    "seeds",
    "points",
    "rmse",
)


def scalerl_curve(c: np.ndarray, r0: float, a: float, b: float, c_mid: float) -> np.ndarray:
    """R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) (ScaleRL Eq. 1); R(0) = R0."""
    c = np.asarray(c, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        ratio = np.where(c > 0, (c_mid / np.where(c > 0, c, 1.0)) ** b, np.inf)
    return r0 + (a - r0) / (1.0 + ratio)


@dataclass(frozen=True)
class Fit:
    """One fitted curve: (A, B, C_mid), R0, and the root-mean-square error of the fit (NaN when it failed)."""

    a: float
    b: float
    c_mid: float
    r0: float
    rmse: float

    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.a))


FAILED = Fit(np.nan, np.nan, np.nan, np.nan, np.nan)


def _linear_part(s: np.ndarray, r: np.ndarray, r0: float | None) -> tuple[np.ndarray, np.ndarray]:
    """For shapes s = 1 / (1 + (C_mid / C)^B) (..., n): the least-squares (R0, A) of R = R0 (1 - s) + A s, both
    clipped to [0, 1] (R0 given: A alone), as arrays of the leading shape."""
    if r0 is not None:
        a = r0 + ((r - r0) * s).sum(-1) / np.maximum((s * s).sum(-1), 1e-12)
        return np.full(a.shape, r0), np.clip(a, 0.0, 1.0)
    u = 1.0 - s  # normal equations of the two features u, s
    suu, sss, sus = (u * u).sum(-1), (s * s).sum(-1), (u * s).sum(-1)
    sur, ssr = (u * r).sum(-1), (s * r).sum(-1)
    det = np.maximum(suu * sss - sus**2, 1e-12)
    return np.clip((sss * sur - sus * ssr) / det, 0.0, 1.0), np.clip((suu * ssr - sus * sur) / det, 0.0, 1.0)


def fit_curve(c: np.ndarray, r: np.ndarray, r0: float | None = None) -> Fit:
    """Least-squares ScaleRL fit of scores `r` at compute `c` (points with c > 0); `r0` fixed when given.

    R is linear in (R0, A) for fixed (B, C_mid), so those are solved in closed form (variable projection) on a grid
    of B in [0.2, 10] (log-spaced) x log C_mid over the data's range widened by e^-2 .. e^3, and the best point is
    refined by Nelder-Mead on (log B, log C_mid) [our choice: a few ms a fit, so the seed bootstrap is cheap]."""
    from scipy.optimize import minimize

    c, r = np.asarray(c, dtype=float), np.asarray(r, dtype=float)
    keep = (c > 0) & np.isfinite(r)
    c, r = c[keep], r[keep]
    if len(np.unique(c)) < (4 if r0 is None else 3):
        return FAILED
    log_c = np.log(c)

    def shape(log_b, log_mid):  # broadcasts over grids: (..., n)
        z = np.exp(np.asarray(log_b)[..., None]) * (np.asarray(log_mid)[..., None] - log_c)
        return 1.0 / (1.0 + np.exp(np.clip(z, -50, 50)))

    def sse(log_b, log_mid):
        sh = shape(log_b, log_mid)
        r0_, a = _linear_part(sh, r, r0)
        return (((r0_[..., None] * (1 - sh) + a[..., None] * sh) - r) ** 2).sum(-1), r0_, a

    grid_b, grid_m = np.meshgrid(
        np.log(np.geomspace(0.2, 10, 25)), np.linspace(log_c.min() - 2, log_c.max() + 3, 60), indexing="ij"
    )
    err, _, _ = sse(grid_b, grid_m)
    i = np.unravel_index(np.argmin(err), err.shape)
    start = np.array([grid_b[i], grid_m[i]])
    bounds = np.array([[np.log(0.2), np.log(10)], [log_c.min() - 2, log_c.max() + 3]])
    res = minimize(
        lambda x: float(sse(*np.clip(x, bounds[:, 0], bounds[:, 1]))[0]),
        start,
        method="Nelder-Mead",
        options={"xatol": 1e-4, "fatol": 1e-10, "maxiter": 400},
    )
    log_b, log_mid = np.clip(res.x, bounds[:, 0], bounds[:, 1])
    err, r0_, a = sse(log_b, log_mid)
    rmse = float(np.sqrt(err / len(c)))
    return Fit(float(a), float(np.exp(log_b)), float(np.exp(log_mid)), float(r0_), rmse)


def fit_arm(points: pd.DataFrame, resamples: int = 200, seed: int = 0):
    """Points of one (arm, task) (columns seed, tokens, score) -> (Fit of all seeds, bootstrap replicates (R, 3)
    of (A, B, C_mid) over seeds)."""
    start = points[points["tokens"] <= 0]
    r0 = float(start["score"].mean()) if len(start) else None
    by_seed = {s: g for s, g in points[points["tokens"] > 0].groupby("seed")}
    fit = fit_curve(points["tokens"].to_numpy(), points["score"].to_numpy(), r0)
    seeds = list(by_seed)
    if len(seeds) < 2 or not fit.ok:
        return fit, np.empty((0, 3))
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(resamples):
        pick = pd.concat([by_seed[s] for s in rng.choice(seeds, size=len(seeds), replace=True)])
        rep = fit_curve(pick["tokens"].to_numpy(), pick["score"].to_numpy(), r0)
        if rep.ok:
            reps.append((rep.a, rep.b, rep.c_mid))
    return fit, np.array(reps).reshape(-1, 3)


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    if len(values) < 10:
        return np.nan, np.nan
    tail = 100 * (1 - confidence) / 2
    return float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))


def compute_fits(
    curves: pd.DataFrame, resamples: int = 200, seed: int = 0, confidence: float = 0.95
) -> tuple[pd.DataFrame, dict]:
    """`curves` (arm, eval_task, seed, tokens, score) -> (the `compute_fits.parquet` table,
    {(arm, task): bootstrap replicates})."""
    rows, replicates = [], {}
    for (arm, task), points in curves.groupby(["arm", "eval_task"], sort=True):
        fit, reps = fit_arm(points, resamples, seed)
        replicates[(arm, task)] = reps
        row = {"arm": arm, "eval_task": task, "r0": fit.r0, "rmse": fit.rmse}
        for j, (name, value) in enumerate((("asymptote", fit.a), ("efficiency", fit.b), ("midpoint", fit.c_mid))):
            low, high = _interval(reps[:, j], confidence) if len(reps) else (np.nan, np.nan)
            row.update({name: value, f"{name}_low": low, f"{name}_high": high})
        row["seeds"] = int(points["seed"].nunique())
        row["points"] = int((points["tokens"] > 0).sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS)), replicates


def compare_fits(
    fits: pd.DataFrame, replicates: dict, pairs: list[tuple[str, str]], confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Each (arm, baseline) of `pairs` per task: asymptote difference (CI), midpoint ratio (CI) and the verdict
    (`higher asymptote`, `lower asymptote`, `same asymptote, sooner`, `same asymptote, later`, `indistinguishable`,
    or `no CI` when either arm has fewer than 2 seeds)."""
    rows = []
    rng = np.random.default_rng(seed)
    base_of = dict(pairs)
    for fit in fits.itertuples():
        baseline = base_of.get(fit.arm)
        if baseline is None or (baseline, fit.eval_task) not in replicates:
            continue
        base = fits[(fits["arm"] == baseline) & (fits["eval_task"] == fit.eval_task)].iloc[0]
        mine, theirs = replicates[(fit.arm, fit.eval_task)], replicates[(baseline, fit.eval_task)]
        row = {
            "arm": fit.arm,
            "baseline": baseline,
            "eval_task": fit.eval_task,
            "asymptote_diff": fit.asymptote - base["asymptote"],
            "midpoint_ratio": fit.midpoint / base["midpoint"],
        }
        if len(mine) >= 10 and len(theirs) >= 10:
            n = min(len(mine), len(theirs))
            a, b = mine[rng.permutation(len(mine))[:n]], theirs[rng.permutation(len(theirs))[:n]]
            row["asymptote_diff_low"], row["asymptote_diff_high"] = _interval(a[:, 0] - b[:, 0], confidence)
            row["midpoint_ratio_low"], row["midpoint_ratio_high"] = _interval(a[:, 2] / b[:, 2], confidence)
            row["verdict"] = _verdict(row)
        else:
            row.update(asymptote_diff_low=np.nan, asymptote_diff_high=np.nan)
            row.update(midpoint_ratio_low=np.nan, midpoint_ratio_high=np.nan, verdict="no CI")
        rows.append(row)
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def curve_points(eval_curve: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The report's eval_curve (run_id, step, tokens, eval_task, pass@1) -> (arm, eval_task, seed, tokens, score)
    of the runs evaluated at 3 or more compute points after step 0 (fewer cannot pin three parameters)."""
    if eval_curve.empty or "tokens" not in eval_curve:
        return pd.DataFrame(columns=["arm", "eval_task", "seed", "tokens", "score"])
    frame = eval_curve[eval_curve["step"] >= 0].merge(runs[["run_id", "arm", "seed"]], on="run_id")
    frame = frame.dropna(subset=["tokens"])
    later = frame[frame["tokens"] > 0].groupby(["run_id", "eval_task"])["tokens"].nunique()
    keep = later[later >= 3].reset_index()[["run_id", "eval_task"]]
    frame = frame.merge(keep, on=["run_id", "eval_task"])
    frame = frame.rename(columns={"pass@1": "score"})
    return frame[["arm", "eval_task", "seed", "tokens", "score"]].reset_index(drop=True)


def _verdict(row: dict) -> str:
    if row["asymptote_diff_low"] > 0:
        return "higher asymptote"
    if row["asymptote_diff_high"] < 0:
        return "lower asymptote"
    if row["midpoint_ratio_high"] < 1:
        return "same asymptote, sooner"
    if row["midpoint_ratio_low"] > 1:
        return "same asymptote, later"
    return "indistinguishable"
