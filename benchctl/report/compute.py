"""Compute curves: held-out score against rollout compute, fitted per arm with the ScaleRL sigmoid.

ScaleRL (Khatri et al. 2025, arXiv 2510.13786, Eq. 1) compares RL methods by the saturating curve

    R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)

of held-out score R against compute C: `A` the asymptote (the best score the method reaches), `B` the efficiency
exponent (how sharply it gets there), `C_mid` the compute at which half of the gain A - R0 is reached. Here C is
rollout tokens generated (`rollout/tokens_total`, every sampled token, dropped groups included), R a held-out
pass@k, and R0 the score of the starting model (the step-0 evaluation) [our choice: fixed, as in ScaleRL, so that
A, B and C_mid describe the training alone; the mean step-0 score of the seeds in the fit, fitted when none was
evaluated at step 0].

Estimate [our choice]: the training run is the unit, the arm's curve the least-squares fit of all its seeds' points
(`fit_curve`: A in [0, 1], B in `B_RANGE`, C_mid within e^-2 .. e^3 of the data's compute range), and its intervals
the delete-one-seed jackknife (`jackknife`; Quenouille 1956, Tukey 1958): the fit is repeated without each seed in
turn and A, log B, log C_mid get the t interval theta +- t(S - 1) SE_jack over the seeds' pseudo-values; two ends
reach further where the profile likelihood of the pooled fit allows (`midpoint_profile`; Bates & Watts 1988,
Sec. 6.1; Venzon & Moolgavkar 1988): C_mid's lower end (`profile_midpoint_low`) and both ends of A's, over the curves
whose C_mid is within C_mid's upper limit (`profile_asymptote`).  When every evaluation lies past C_mid (5
evaluations every 32k tokens for a C_mid of 20k) the points barely bound C_mid from below, the pooled fit's C_mid is
biased upward with 3 seeds, and the jackknife's interval, symmetric around it on the log scale, missed the truth
from above: it covered C_mid 90.8-91.0% and A 93.0-93.9% (800 replications); the profile says how far C_mid and A
can move while the curve still fits the points.  C_mid's upper end stays the jackknife's (the profile's reaches past
the budget in most such fits and would leave no arm identified), and comparisons use the jackknife replicates.  A
seed evaluated on a linear cadence (every N tokens) has few points on the rise, and its own fit is often pinned to a
bound or far past the budget; the pooled fit uses every seed's points, and a seed whose curve rises late moves the
arm's C_mid and widens its interval instead of vetoing the arm.  Means over per-seed fits with a t interval covered
A 78-97% and C_mid 51-97% on linear cadences (5-8 evaluations), and identified fewer arms at 10 seeds than at 3 or 5
(benchmarks/report_compute_coverage.py; the jackknife's figures: docs/report.md).  An arm with one seed gets the fit
of its points and no interval.

Identification: the asymptote is *identified* only when the fitted C_mid and the upper end of its interval lie
within the largest compute the arm was evaluated at (`max_tokens`: half the gain was seen), neither A nor its
interval touches the clip [0, 1] (a fit pinned to the bound says "at least", not "this"), and neither B nor its
interval reaches an end of `B_RANGE` (a step-like fit, the shape a still-rising noisy curve can take, does not
resolve where the curve bends).  An unidentified asymptote is printed as ">= its lower limit", never as a point
(for a rising curve the lower limit is the larger of A's and that of the seeds' scores at their largest compute: the
curve got there at least, so `asymptote_low` then holds it), and no arm is compared on it
(`asymptote not resolved at this budget`).  Comparison with the baseline, both identified: Welch's t on the two
arms' jackknife replicates of A (the asymptote difference and its CI) and of log C_mid (the midpoint ratio and its
CI); an arm is better when the asymptote's difference CI is above 0, and at equal asymptote (the CI contains 0)
when the midpoint's ratio CI is below 1 (it gets there with less compute).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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
B_RANGE = (0.2, 10.0)  # the efficiency B the fit searches; a B at (or an interval past) either end is not resolved
CLIP_LOG_B = 1e-3  # a log B within this of either end of B_RANGE sits on the fit's bound


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
class Profile:
    """The least-squares fit on a grid of (B, C_mid) (`midpoint_profile`): the C_mid of its columns (C,), and per
    cell (B, C) the residual sum of squares, the best A and the SSE's curvature in A; the residual degrees of
    freedom n - p and the fit's minimum SSE."""

    c_mid: np.ndarray
    sse: np.ndarray
    a: np.ndarray
    curvature: np.ndarray
    dof: int
    sse_min: float


@dataclass(frozen=True)
class ArmFit:
    """One (arm, task): the fit of the arm's pooled points (the estimate), the seeds' jackknife replicates (S, 3) of
    (A, B, C_mid) (`jackknife`; empty with one seed), the largest compute evaluated, each seed's score at its own
    largest compute (`reached`), and the profile of the residual sum of squares over C_mid (`midpoint_profile`;
    empty with one seed)."""

    pooled: Fit
    replicates: np.ndarray
    max_tokens: float
    reached: np.ndarray = field(default_factory=lambda: np.empty(0))
    profile: Profile | None = None


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
        np.log(np.geomspace(*B_RANGE, 25)), np.linspace(log_c.min() - 2, log_c.max() + 3, 60), indexing="ij"
    )
    err, _, _ = sse(grid_b, grid_m)
    i = np.unravel_index(np.argmin(err), err.shape)
    start = np.array([grid_b[i], grid_m[i]])
    bounds = np.array([np.log(B_RANGE), [log_c.min() - 2, log_c.max() + 3]])
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
    """Points of one (arm, task) (columns seed, tokens, score) -> its ArmFit: the fit of all its points (`fit_curve`,
    R0 fixed at the arm's step-0 mean) and, with two or more seeds, the seeds' `jackknife` replicates."""
    seed = points["seed"].to_numpy()
    c, r = points["tokens"].to_numpy(dtype=float), points["score"].to_numpy(dtype=float)
    pooled = _fit_points(c, r)
    replicates = np.empty((0, 3))
    if pooled.ok and len(np.unique(seed)) > 1:
        replicates = jackknife(pooled, [_fit_points(c[seed != s], r[seed != s]) for s in np.unique(seed)])
    last = points.sort_values("tokens", kind="stable").groupby("seed")["score"].last()
    arm = ArmFit(pooled, replicates, float(c.max()), last.to_numpy(dtype=float))
    if len(replicates):
        start = r[(c <= 0) & np.isfinite(r)]
        arm = replace(arm, profile=midpoint_profile(c, r, float(start.mean()) if len(start) else None, pooled))
    return arm


def midpoint_profile(c: np.ndarray, r: np.ndarray, r0: float | None, fit: Fit) -> Profile:
    """The least-squares fit profiled on a grid (Bates & Watts 1988, Sec. 6.1): at each (B, C_mid) of 61 log B in
    `B_RANGE` x 241 log C_mid over `fit_curve`'s range, the best A (and R0 when `r0` is None) in closed form
    (`_linear_part`), the residual sum of squares SSE of the points with c > 0, and its curvature in A, d2 SSE / dA2
    / 2 (sum s^2; with R0 fitted, the same after R0 is profiled out); n - p residual degrees of freedom (p = 3 with
    `r0` fixed, 4 without), SSE_min the smaller of the grid's and that of `fit`, the least-squares fit."""
    c, r = np.asarray(c, dtype=float), np.asarray(r, dtype=float)
    keep = (c > 0) & np.isfinite(r)
    c, r = c[keep], r[keep]
    log_c = np.log(c)
    log_b = np.linspace(*np.log(B_RANGE), 61)[:, None, None]  # (B, 1, 1)
    log_mid = np.linspace(log_c.min() - 2, log_c.max() + 3, 241)[None, :, None]  # (1, C_mid, 1)
    s = 1.0 / (1.0 + np.exp(np.clip(np.exp(log_b) * (log_mid - log_c), -50, 50)))  # (B, C_mid, n)
    r0_, a = _linear_part(s, r, r0)
    sse = ((r0_[..., None] * (1 - s) + a[..., None] * s - r) ** 2).sum(-1)  # (B, C_mid)
    curvature = (s * s).sum(-1)
    if r0 is None:  # the Schur complement of the (R0, A) normal equations
        curvature = curvature - ((1 - s) * s).sum(-1) ** 2 / np.maximum(((1 - s) ** 2).sum(-1), 1e-12)
    dof = len(c) - (3 if r0 is not None else 4)
    return Profile(np.exp(log_mid[0, :, 0]), sse, a, curvature, dof, float(min(sse.min(), fit.rmse**2 * len(c))))


def _inside(profile: Profile, confidence: float) -> tuple[np.ndarray, float]:
    """(the grid cells (B, C_mid) inside the profile-likelihood region of one parameter, the SSE threshold):
    SSE <= SSE_min (1 + t(n - p)^2 / (n - p)), the F(1, n - p) likelihood-ratio test of one parameter of a
    Gaussian least-squares fit (Bates & Watts 1988, Sec. 6.1; Venzon & Moolgavkar 1988)."""
    t = stats.t.ppf(0.5 + confidence / 2, profile.dof)
    threshold = profile.sse_min * (1 + t * t / profile.dof)
    return profile.sse <= threshold, threshold


def profile_midpoint_low(profile: Profile | None, confidence: float) -> float:
    """The lower end of the profile-likelihood interval of C_mid (`_inside`): the smallest C_mid at which some B
    fits the points within the threshold.  NaN without a profile or residual degrees of freedom."""
    if profile is None or profile.dof < 1:
        return np.nan
    return float(profile.c_mid[_inside(profile, confidence)[0].any(0)].min())


def profile_asymptote(profile: Profile | None, confidence: float, c_mid_high: float) -> tuple[float, float]:
    """The profile-likelihood interval of A (`_inside`) over the curves whose C_mid is at most `c_mid_high` (C_mid's
    upper limit: the asymptote is read only where the curve is seen to bend; cf. Berger & Boos 1994, a nuisance
    parameter restricted to its confidence set): SSE is quadratic in A at each (B, C_mid), SSE(A) = SSE +
    curvature (A - A_hat)^2, so the interval is the union of A_hat +- sqrt((threshold - SSE) / curvature) over the
    cells, clipped to [0, 1].  NaN without a profile, residual degrees of freedom or such a curve."""
    if profile is None or profile.dof < 1 or not np.isfinite(c_mid_high):
        return np.nan, np.nan
    inside, threshold = _inside(profile, confidence)
    inside &= profile.c_mid[None, :] <= c_mid_high
    if not inside.any():
        return np.nan, np.nan
    half = np.sqrt((threshold - profile.sse[inside]) / np.maximum(profile.curvature[inside], 1e-12))
    a = profile.a[inside]
    return float(np.clip((a - half).min(), 0, 1)), float(np.clip((a + half).max(), 0, 1))


def _fit_points(c: np.ndarray, r: np.ndarray) -> Fit:
    """`fit_curve` with R0 fixed at the mean step-0 score (c = 0) of the points, fitted when none was evaluated."""
    start = r[(c <= 0) & np.isfinite(r)]
    return fit_curve(c, r, float(start.mean()) if len(start) else None)


def jackknife(full: Fit, leave_one_out: list[Fit]) -> np.ndarray:
    """The delete-one-seed jackknife (Quenouille 1956; Tukey 1958; Efron & Stein 1981) of the pooled fit: the
    pseudo-values S theta - (S - 1) theta_(-i) of theta = (A, log B, log C_mid), centred on the full fit's theta,
    i.e. theta + (S - 1) (mean_j theta_(-j) - theta_(-i)), returned as (A, B, C_mid) (S, 3).  Their mean is the
    full fit and their variance / S the jackknife variance (S - 1) / S sum_i (theta_(-i) - mean)^2, so the t
    interval over them (df = S - 1) is theta +- t SE_jack, and Welch's t on two arms' replicates compares the fits.
    Empty when a leave-one-out fit failed."""
    if not all(f.ok for f in leave_one_out):
        return np.empty((0, 3))
    theta = np.array([[f.a, np.log(f.b), np.log(f.c_mid)] for f in (full, *leave_one_out)])
    loo = theta[1:]  # (S, 3)
    pseudo = theta[0] + (len(loo) - 1) * (loo.mean(0) - loo)
    return np.column_stack([pseudo[:, 0], np.exp(pseudo[:, 1:])])


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
    """The fits-table numbers of one arm: A, B, C_mid of the pooled fit with the t interval over the seeds'
    jackknife replicates (B and C_mid on the log scale; no interval under 2 seeds), C_mid's lower end moved down to
    the profile likelihood's where that is lower (`profile_midpoint_low`), A's widened to the profile likelihood's
    over the curves within C_mid's upper limit (`profile_asymptote`), and whether the asymptote is identified."""
    out = {}
    p = arm.pooled
    for j, (name, value, log) in enumerate(
        (("asymptote", p.a, False), ("efficiency", p.b, True), ("midpoint", p.c_mid, True))
    ):
        values = arm.replicates[:, j]
        _, low, high = t_interval(np.log(values) if log else values, confidence)
        out.update(
            {name: value, f"{name}_low": np.exp(low) if log else low, f"{name}_high": np.exp(high) if log else high}
        )
    if np.isfinite(out["midpoint_low"]):  # the jackknife's ends, or further out as the profile allows
        out["midpoint_low"] = np.nanmin([out["midpoint_low"], profile_midpoint_low(arm.profile, confidence)])
        low, high = profile_asymptote(arm.profile, confidence, out["midpoint_high"])
        out["asymptote_low"] = np.nanmin([out["asymptote_low"], low])
        out["asymptote_high"] = np.nanmax([out["asymptote_high"], high])
    out["asymptote_identified"] = identified(out, arm)
    if not out["asymptote_identified"] and p.a > p.r0 and len(arm.reached) >= 2:
        # a rising curve is at least where it got: the lower limit of the seeds' last scores
        out["asymptote_low"] = float(np.nanmax([out["asymptote_low"], t_interval(arm.reached, confidence)[1]]))
    return out


def identified(row: dict, arm: ArmFit) -> bool:
    """The asymptote rule of the module docstring, read off the arm's fit and intervals: C_mid and its interval's
    upper end within the largest compute evaluated, A and its interval off the clip [0, 1], B and its interval
    inside `B_RANGE` (a shape pinned to the search's end is not resolved)."""
    if not arm.pooled.ok:
        return False
    a = np.array([row["asymptote"], row["asymptote_low"], row["asymptote_high"]])
    b = np.log([row["efficiency"], row["efficiency_low"], row["efficiency_high"]])
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    a_inside = ((a > CLIP) & (a < 1 - CLIP)).all()
    b_inside = ((b > np.log(B_RANGE[0]) + CLIP_LOG_B) & (b < np.log(B_RANGE[1]) - CLIP_LOG_B)).all()
    mid = np.nanmax([row["midpoint"], row["midpoint_high"]])
    return bool(a_inside and b_inside and mid <= arm.max_tokens)


def compute_fits(curves: pd.DataFrame, confidence: float = 0.95) -> tuple[pd.DataFrame, dict]:
    """`curves` (arm, eval_task, seed, tokens, score) -> (the `compute_fits.parquet` table,
    {(arm, task): the seeds' jackknife replicates (S, 3) of (A, B, C_mid)})."""
    rows, replicates = [], {}
    for (arm, task), points in curves.groupby(["arm", "eval_task"], sort=True):
        fit = fit_arm(points)
        replicates[(arm, task)] = fit.replicates
        row = {"arm": arm, "eval_task": task, "r0": fit.pooled.r0, "rmse": fit.pooled.rmse}
        row.update(estimates(fit, confidence))
        row["max_tokens"] = fit.max_tokens
        row["seeds"] = int(points["seed"].nunique())
        row["points"] = int((points["tokens"] > 0).sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS)), replicates


def welch(mine: np.ndarray, theirs: np.ndarray, confidence: float) -> tuple[float, float]:
    """Welch's t interval of mean(mine) - mean(theirs); NaN when either side has under 2 values or no spread."""
    if len(mine) < 2 or len(theirs) < 2 or (np.ptp(mine) == 0 and np.ptp(theirs) == 0):
        return np.nan, np.nan
    ci = stats.ttest_ind(mine, theirs, equal_var=False).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


def compare_fits(
    fits: pd.DataFrame, replicates: dict, pairs: list[tuple[str, str]], confidence: float = 0.95
) -> pd.DataFrame:
    """Each (arm, baseline) of `pairs` per task: asymptote difference (CI), midpoint ratio (CI) and the verdict
    (`higher asymptote`, `lower asymptote`, `same asymptote, sooner`, `same asymptote, later`, `indistinguishable`,
    NOT_RESOLVED when either asymptote is not identified, or `no CI` when either arm has fewer than 2 seeds)."""
    rows, base_of = [], dict(pairs)
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
