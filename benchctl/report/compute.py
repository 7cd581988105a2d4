"""Compute curves: held-out score against rollout compute, fitted per arm with the ScaleRL sigmoid.

ScaleRL (Khatri et al. 2025, arXiv 2510.13786, Eq. 1) compares RL methods by the saturating curve

    R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)

of held-out score R against compute C: `A` the asymptote (the best score the method reaches), `B` the efficiency
exponent (how sharply it gets there), `C_mid` the compute at which half of the gain A - R0 is reached. Here C is
rollout tokens generated (`rollout/tokens_total`, every sampled token, dropped groups included), R a held-out
pass@k, and R0 the score of the starting model (the step-0 evaluation) [our choice: fixed, as in ScaleRL, so that
A, B and C_mid describe the training alone; each seed's fit takes that seed's own step-0 score, so that the
evaluation noise of R0 varies across seeds as the rest does and the interval over seeds sees it (one R0 shared by
the seeds left B's and C_mid's intervals at 88-91% coverage); the arm's step-0 mean, else R0 fitted on the pooled
points, for a seed not evaluated at step 0].

Estimate [our choice]: the training run is the unit.  Each seed's points get their own least-squares fit
(`fit_curve`: A in [0, 1], B in [0.2, 10], C_mid within e^-2 .. e^3 of the data's compute range); the arm's A is the
mean of its seeds' A, its B and C_mid the geometric means (both are scale parameters), each with a t interval over
seeds (df = seeds - 1; B and C_mid on the log scale).  A percentile bootstrap over 5 seeds covered A 83-85%, B
79-82%, C_mid 74-87%; the per-seed t interval covers 93-97% at 3, 5 and 10 seeds
(benchmarks/report_compute_coverage.py, docs/report.md).  A jackknife over seeds of the pooled fit covered as well
but called a still-rising curve identified 14-20% of the time (the per-seed fits: 0-6%).  An arm with one seed gets
the fit of its points (`pooled`, also the source of R0 and rmse) and no interval.

Identification: the asymptote is *identified* only when the fitted C_mid and the upper end of its interval lie
within the largest compute the arm was evaluated at (`max_tokens`: half the gain was seen), and neither A, any
seed's A nor A's interval touches the clip [0, 1] (a fit pinned to the bound says "at least", not "this").  An
unidentified asymptote is printed as ">= its lower limit", never as a point (for a rising curve the lower limit is
the larger of A's and that of the seeds' scores at their largest compute: the curve got there at least, so
`asymptote_low` then holds it), and no arm is compared on it
(`asymptote not resolved at this budget`).  Comparison with the baseline, both identified: Welch's t on the seeds'
A (the asymptote difference and its CI) and on their log C_mid (the midpoint ratio and its CI); an arm is better
when the asymptote's difference CI is above 0, and at equal asymptote (the CI contains 0) when the midpoint's ratio
CI is below 1 (it gets there with less compute).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

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
    "asymptote_identified",
    "efficiency",
    "efficiency_low",
    "efficiency_high",
    "midpoint",
    "midpoint_low",
    "midpoint_high",
    "max_tokens",
    "r0",
    "seeds",
    "points",
    "rmse",
)
NOT_RESOLVED = "asymptote not resolved at this budget"
CLIP = 1e-6  # an A within this of 0 or 1 sits on the fit's bound


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


@dataclass(frozen=True)
class ArmFit:
    """One (arm, task): the pooled fit (R0, rmse; the estimate itself when one seed), the seeds' fits (S, 3) of
    (A, B, C_mid), the largest compute evaluated, and each seed's score at its own largest compute (`reached`)."""

    pooled: Fit
    seeds: np.ndarray
    max_tokens: float
    reached: np.ndarray = field(default_factory=lambda: np.empty(0))


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
    refined by Nelder-Mead on (log B, log C_mid) [our choice: a few ms a fit, so per-seed fits are cheap]."""
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


def fit_arm(points: pd.DataFrame) -> ArmFit:
    """Points of one (arm, task) (columns seed, tokens, score) -> its ArmFit: the pooled fit, then one fit per seed
    with R0 fixed at the seed's own step-0 score (else the arm's step-0 mean, else the pooled fit's R0: a shared R0
    would put its evaluation noise into every seed alike, where no interval over seeds sees it); seeds whose fit
    failed are left out."""
    start = points[points["tokens"] <= 0]
    r0 = float(start["score"].mean()) if len(start) else None
    pooled = fit_curve(points["tokens"].to_numpy(), points["score"].to_numpy(), r0)
    r0 = pooled.r0 if r0 is None and pooled.ok else r0
    per_seed = []
    if pooled.ok and points["seed"].nunique() > 1:
        for _, own in points.groupby("seed"):
            first = own.loc[own["tokens"] <= 0, "score"]  # the seed's own step-0 score: its noise stays in the seed
            fit = fit_curve(
                own["tokens"].to_numpy(), own["score"].to_numpy(), float(first.mean()) if len(first) else r0
            )
            if fit.ok:
                per_seed.append((fit.a, fit.b, fit.c_mid))
    last = points.sort_values("tokens", kind="stable").groupby("seed")["score"].last()
    seeds = np.array(per_seed, dtype=float).reshape(-1, 3)
    return ArmFit(pooled, seeds, float(points["tokens"].max()), last.to_numpy(dtype=float))


def t_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(mean, low, high) of `values` with the t interval over them (df = n - 1); NaN limits under 2 values or
    when they are all equal."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean()) if len(values) else np.nan
    if len(values) < 2 or np.ptp(values) == 0:
        return mean, np.nan, np.nan
    low, high = stats.t.interval(confidence, len(values) - 1, loc=mean, scale=stats.sem(values))
    return mean, float(low), float(high)


def estimates(arm: ArmFit, confidence: float) -> dict[str, float]:
    """The fits-table numbers of one arm: A, B, C_mid with their intervals (means over seeds; the pooled fit
    when fewer than 2 seeds were fitted), and whether the asymptote is identified."""
    out = {}
    names = (("asymptote", False), ("efficiency", True), ("midpoint", True))
    if len(arm.seeds) >= 2:
        for j, (name, log) in enumerate(names):
            mean, low, high = t_interval(np.log(arm.seeds[:, j]) if log else arm.seeds[:, j], confidence)
            out.update(
                dict(
                    zip((name, f"{name}_low", f"{name}_high"), np.exp([mean, low, high]) if log else (mean, low, high))
                )
            )
    else:
        p = arm.pooled
        for name, value in zip(("asymptote", "efficiency", "midpoint"), (p.a, p.b, p.c_mid)):
            out.update({name: value, f"{name}_low": np.nan, f"{name}_high": np.nan})
    out["asymptote_identified"] = identified(out, arm)
    if not out["asymptote_identified"] and arm.pooled.a > arm.pooled.r0 and len(arm.reached) >= 2:
        # a rising curve is at least where it got: the lower limit of the seeds' last scores
        out["asymptote_low"] = float(np.nanmax([out["asymptote_low"], t_interval(arm.reached, confidence)[1]]))
    return out


def identified(row: dict, arm: ArmFit) -> bool:
    """The asymptote rule of the module docstring: C_mid (and its interval's upper end) within the largest
    compute evaluated, and A, each seed's A and A's interval off the clip [0, 1]."""
    a = [row["asymptote"], row["asymptote_low"], row["asymptote_high"], *arm.seeds[:, 0]]
    a = np.array([v for v in a if np.isfinite(v)])
    if not np.isfinite(row["asymptote"]) or (a <= CLIP).any() or (a >= 1 - CLIP).any():
        return False
    mid = [row["midpoint"], row["midpoint_high"], arm.pooled.c_mid, *arm.seeds[:, 2]]
    return bool(np.nanmax(mid) <= arm.max_tokens) and arm.pooled.ok and CLIP < arm.pooled.a < 1 - CLIP


def compute_fits(curves: pd.DataFrame, confidence: float = 0.95) -> tuple[pd.DataFrame, dict]:
    """`curves` (arm, eval_task, seed, tokens, score) -> (the `compute_fits.parquet` table,
    {(arm, task): the seeds' fits (S, 3) of (A, B, C_mid)})."""
    rows, per_seed = [], {}
    for (arm, task), points in curves.groupby(["arm", "eval_task"], sort=True):
        fit = fit_arm(points)
        per_seed[(arm, task)] = fit.seeds
        row = {"arm": arm, "eval_task": task, "r0": fit.pooled.r0, "rmse": fit.pooled.rmse}
        row.update(estimates(fit, confidence))
        row["max_tokens"] = fit.max_tokens
        row["seeds"] = int(points["seed"].nunique())
        row["points"] = int((points["tokens"] > 0).sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS)), per_seed


def welch(mine: np.ndarray, theirs: np.ndarray, confidence: float) -> tuple[float, float]:
    """Welch's t interval of mean(mine) - mean(theirs); NaN when either side has under 2 values or no spread."""
    if len(mine) < 2 or len(theirs) < 2 or (np.ptp(mine) == 0 and np.ptp(theirs) == 0):
        return np.nan, np.nan
    ci = stats.ttest_ind(mine, theirs, equal_var=False).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


def compare_fits(
    fits: pd.DataFrame, per_seed: dict, pairs: list[tuple[str, str]], confidence: float = 0.95
) -> pd.DataFrame:
    """Each (arm, baseline) of `pairs` per task: asymptote difference (CI), midpoint ratio (CI) and the verdict
    (`higher asymptote`, `lower asymptote`, `same asymptote, sooner`, `same asymptote, later`, `indistinguishable`,
    NOT_RESOLVED when either asymptote is not identified, or `no CI` when either arm has fewer than 2 seeds)."""
    rows, base_of = [], dict(pairs)
    for fit in fits.itertuples():
        baseline = base_of.get(fit.arm)
        if baseline is None or (baseline, fit.eval_task) not in per_seed:
            continue
        base = fits[(fits["arm"] == baseline) & (fits["eval_task"] == fit.eval_task)].iloc[0]
        mine, theirs = per_seed[(fit.arm, fit.eval_task)], per_seed[(baseline, fit.eval_task)]
        row = {
            "arm": fit.arm,
            "baseline": baseline,
            "eval_task": fit.eval_task,
            "asymptote_diff": fit.asymptote - base["asymptote"],
            "midpoint_ratio": fit.midpoint / base["midpoint"],
        }
        row["asymptote_diff_low"], row["asymptote_diff_high"] = welch(mine[:, 0], theirs[:, 0], confidence)
        low, high = welch(np.log(mine[:, 2]), np.log(theirs[:, 2]), confidence)
        row["midpoint_ratio_low"], row["midpoint_ratio_high"] = np.exp(low), np.exp(high)
        if not (bool(fit.asymptote_identified) and bool(base["asymptote_identified"])):
            row["verdict"] = NOT_RESOLVED
        elif np.isnan(row["asymptote_diff_low"]):
            row["verdict"] = "no CI"
        else:
            row["verdict"] = _verdict(row)
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
