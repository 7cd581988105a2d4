"""The report's numbers: pass@k per arm with CIs, differences to the baseline with seed-level tests, the cost table.

Statistics [our choices, stated in every output]:
* The unit is the training run (Agarwal et al. 2021, arXiv:2108.13264; Henderson et al. 2018): the values of one
  (arm, task, k) form a problems x seeds matrix X (P, S) of per-problem unbiased pass@k (runs of one seed
  averaged; the problems every seed evaluated).  Seeds and problems are crossed (every seed is evaluated on the
  same problems): X = mean + seed effect + problem effect + seed x problem noise, a two-way random layout.
* population "problems" (the default: seeds and problems like these): Var(mean X) = (MS_seed + MS_problem -
  MS_error) / (S P) from the two-way ANOVA mean squares, the problem component kept >= 0 (never below the
  fixed-set variance MS_seed / (S P)); t with Satterthwaite's df,
  the seed mean square taken at its upper 75% confidence limit in the df (so 3 seeds never buy the df of a
  seed variance that came out small by chance).  population "fixed" (this problem set, new seeds): a paired t
  on the per-seed means, exact, t(S - 1).  `--population` chooses; docs/report.md measures both.
* pass@k of an arm on a task at k: mean of X; CI mean +- t(df) se, clipped to [0, 1].  With one seed the
  between-seed variance is unknown: the CI covers the problems only (t with P - 1 df; none for "fixed") and the
  row is marked.
* difference to the baseline: D = X_arm - X_base on the seeds both arms ran (paired by seed) and the problems
  both evaluated (paired by problem), in the same context (equal values of the group-by columns other than the
  arm).  diff = mean(D), CI diff +- t(df) se(D), two-sided p = 2 P(T(df) > |diff| / se(D)).  seed_std: standard
  deviation of the per-seed differences.  An arm whose swept setting was chosen leave-one-seed-out: the seed part
  of the variance is the delete-one-seed jackknife of the choice (`crossfit.cross_fit_seed_variance`), not
  var(seed means) / S.  Fewer than 3 common seeds (`MIN_SEEDS`): the estimate is shown,
  marked too_few_seeds, with no p-value and no significance (one seed: no CI either).
* primary family: the comparisons at k = `--primary-k` (default 1) with enough seeds, over arms x tasks x
  contexts; Holm's step-down correction (`statsmodels.stats.multitest.multipletests(method="holm")`) at family-wise
  error rate `alpha` over them only.  The other k are secondary: CI and unadjusted p, never significant.
* mde (minimum detectable effect, units of diff): the true difference the test detects with power 0.8 at the
  current seeds and df, two-sided at alpha / m for the primary family (m its size: Holm's first step) and at
  alpha for a secondary row, on average over the sampling distribution of the standard error it is computed
  from (`minimum_detectable_effect`: the noncentral t power function averaged over se_hat / se, its seed part
  on chi2(S - 1), the rest known; the plug-in, `plugin_mde`, promised 80% and kept 61-73% at 3 seeds), solved at
  the variance of the effect (`level_scaled_mde`: near pass@k 0 or 1 a real gain or loss moves the variance).  An
  "indistinguishable" cell says nothing about differences below it.
* health (`benchctl.report.health`): each comparison names the runs of the arm and of the baseline that are not
  ok (collapsed, diverged, stalled); their numbers stay in the table, marked.

Why this test [our choice; measured by benchmarks/report_power.py, table in docs/report.md]: the previous
V = var(seed means)/S + var(problem means)/P with t(S - 1) counted the seed x problem noise twice and held its
level by throwing power away; the two-way variance with the bounded Satterthwaite df keeps the level at 3, 5 and
10 seeds in the seed-dominated, problem-dominated and run x problem regimes and gains power where the problem
or noise terms matter.  A hierarchical bootstrap (seeds, then problems) has no small-sample correction and
rejected null arms far more often than alpha with 3-5 seeds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import brentq
from statsmodels.stats.multitest import multipletests

from benchctl.report.config import MIN_SEEDS, ReportConfig
from benchctl.report.crossfit import cross_fit_seed_variance
from benchctl.report.load import ReportData
from benchctl.report.lost_seeds import lost_seeds

PHASES = ("time/rollout", "time/reward", "time/advantage", "time/logprobs", "time/update", "time/sync", "time/eval")


def _with_runs(data: ReportData, cols: list[str]) -> pd.DataFrame:
    return data.problems.merge(data.runs[["run_id", *cols]], on="run_id")


def seed_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of one (arm, task, k) -> problems x seeds of values (runs of one seed averaged), complete rows."""
    seeds = frame["seed"].fillna(-1)
    wide = frame.assign(seed=seeds).pivot_table(index="problem_id", columns="seed", values="value", aggfunc="mean")
    return wide.dropna()


POWER = 0.8
SE_NODES = 64  # nodes of the standard error's sampling distribution in the mde's expected power
POPULATIONS = ("problems", "fixed")
DF_SEED_BOUND = 0.75  # the seed mean square enters Satterthwaite's df at its upper 75% confidence limit
PASSK_COLUMNS = [
    *("arm", "eval_task", "k", "pass_at_k", "low", "high"),
    *("seeds", "runs", "seed_std", "too_few_seeds", "problems", "seeds_expected", "seeds_lost"),
]


@dataclass(frozen=True)
class Estimate:
    """Mean of a (problems, seeds) matrix with its standard error: CI, two-sided p against 0, df."""

    mean: float
    low: float
    high: float
    p_value: float
    seed_std: float  # std of the per-seed means (ddof 1); NaN with one seed
    df: float  # degrees of freedom of the t reference
    se: float = np.nan  # standard error of the mean (sqrt of the variance the test uses)
    seed_share: float = np.nan  # share of se**2 from the seed mean square (S - 1 df): the mde's se distribution


def mean_squares(values: np.ndarray) -> tuple[np.ndarray, ...]:
    """values (..., P, S) -> grand mean, MS_seed, MS_problem, MS_error (...,) of the two-way crossed layout
    without replication (Montgomery, Design and Analysis of Experiments, two-factor random model)."""
    n_prob, n_seed = values.shape[-2:]
    grand = values.mean(axis=(-2, -1))  # (...,)
    seed_means, prob_means = values.mean(axis=-2), values.mean(axis=-1)  # (..., S), (..., P)
    ms_seed = n_prob * ((seed_means - grand[..., None]) ** 2).sum(-1) / (n_seed - 1)
    ms_prob = n_seed * ((prob_means - grand[..., None]) ** 2).sum(-1) / (n_prob - 1)
    resid = values - seed_means[..., None, :] - prob_means[..., :, None] + grand[..., None, None]  # (..., P, S)
    ms_err = (resid**2).sum(axis=(-2, -1)) / ((n_seed - 1) * (n_prob - 1))
    return grand, ms_seed, ms_prob, ms_err


def crossed_variance(values: np.ndarray, seed_variance=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """values (..., P, S), P and S >= 2 -> (mean, Var(mean), df), vectorised over the leading axes.

    Var(mean) = sigma2_seed / S + sigma2_problem / P + sigma2_error / (S P) = (MS_s + MS_p - MS_e) / (S P), with
    the problem component kept >= 0: (MS_s + max(MS_p - MS_e, 0)) / (S P), never below MS_s / (S P), the paired
    t's variance for this fixed problem set.  df: Satterthwaite (1946) for that sum, with MS_s at its upper
    DF_SEED_BOUND confidence limit (chi-square, S - 1 df) where that gives fewer: a seed mean square that is small
    by chance would otherwise also buy the most df (over 5% false positives at 3 seeds; docs/report.md); at least
    min(S, P) - 1.  `seed_variance` (a swept setting chosen leave-one-seed-out: the jackknife of
    `crossfit.cross_fit_seed_variance`) replaces MS_s / (S P), the seed part, and enters the df as MS_s does."""
    n_prob, n_seed = values.shape[-2:]
    grand, ms_seed, ms_prob, ms_err = mean_squares(values)
    if seed_variance is not None:
        ms_seed = np.asarray(seed_variance, dtype=np.float64) * n_seed * n_prob
    prob_part = np.maximum(ms_prob - ms_err, 0.0)  # S sigma2_problem, estimated
    rest = np.where(prob_part > 0, ms_prob**2 / (n_prob - 1) + ms_err**2 / ((n_seed - 1) * (n_prob - 1)), 0.0)
    bound = ms_seed * (n_seed - 1) / stats.chi2.ppf(1 - DF_SEED_BOUND, n_seed - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = np.fmin(*((s + prob_part) ** 2 / (s**2 / (n_seed - 1) + rest) for s in (ms_seed, bound)))
    total = ms_seed + prob_part
    floor = float(min(n_seed, n_prob) - 1)  # a difference of mean squares can drive Satterthwaite's df below 1
    return grand, total / (n_seed * n_prob), np.where(total > 0, np.fmax(df, floor), n_seed - 1.0)


def _variance(values: np.ndarray, population: str, seed_variance=None) -> tuple[float, float, float]:
    """(Var(mean), df, seed share) of a (P, S) matrix, the seed share the part of Var(mean) estimated from the
    seed mean square (S - 1 df); NaN where the design cannot say (one seed with a fixed problem set)."""
    n_prob, n_seed = values.shape
    seed_means = values.mean(axis=0)  # (S,)
    if n_seed > 1 and (population == "fixed" or n_prob == 1):  # paired t on per-seed means
        seed_part = float(seed_means.var(ddof=1)) / n_seed if seed_variance is None else seed_variance
        return seed_part, float(n_seed - 1), 1.0
    if n_seed > 1:
        _, var, df = crossed_variance(values, seed_variance)
        seed_part = mean_squares(values)[1] / (n_seed * n_prob) if seed_variance is None else seed_variance
        return float(var), float(df), float(min(1.0, seed_part / var)) if var > 0 else np.nan
    if n_prob > 1 and population == "problems":  # one seed: the problems only, marked by the caller
        return float(values.mean(axis=1).var(ddof=1)) / n_prob, float(n_prob - 1), 0.0
    return np.nan, np.nan, np.nan


def crossed_estimate(
    values: np.ndarray, confidence: float, population: str = "problems", seed_variance: float | None = None
) -> Estimate:
    """values (P, S): problems x seeds, crossed.  population "problems": Var(mean) and df of `crossed_variance`
    (new problems like these and new seeds); "fixed": a paired t on the per-seed means (this problem set, new
    seeds), exact.  One seed: the problems only ("problems") or nothing ("fixed").  `seed_variance`: the seed
    part of Var(mean) when the seeds are not independent (a cross-fitted setting choice), in place of
    var(seed means) / S.  See the module doc."""
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean()) if values.size else np.nan
    seed_std = float(values.mean(axis=0).std(ddof=1)) if values.shape[1] > 1 else np.nan
    var, df, share = _variance(values, population, seed_variance) if values.size else (np.nan, np.nan, np.nan)
    if not np.isfinite(var):
        return Estimate(mean, np.nan, np.nan, np.nan, seed_std, np.nan)
    if var == 0.0:  # every problem and seed gives the same value
        return Estimate(mean, mean, mean, 1.0 if mean == 0.0 else 0.0, seed_std, df, 0.0)
    se = float(np.sqrt(var))
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    return Estimate(mean, mean - half, mean + half, p, seed_std, df, se, share)


def crossed_log_ratio(
    arm: np.ndarray, base: np.ndarray, confidence: float, seed_variance: float | None = None
) -> Estimate:
    """arm, base (P, S): problems x seeds of two arms, paired by problem and seed -> the Estimate of the log ratio
    of means log R = log(mean(arm) / mean(base)), for new problems like these and new seeds; NaN where a mean is
    not positive.

    Delta method (linearisation of a ratio estimator: Woodruff 1971, JASA 66:411; Cochran, Sampling Techniques,
    1977, §6.3): log(A/B) - log(mu_A/mu_B) ~ mean(Z) with the per-cell quantity
        Z_ps = arm_ps / mean(arm) - base_ps / mean(base)   (P, S),
    so Var(log R) = Var(mean Z), the `crossed_variance` of Z: its seed, problem (an arm x problem interaction
    included) and error components carry the covariance of the arms paired by seed and problem.  mean(Z) = 0
    exactly, so the Estimate of Z + log R has mean log R with Z's variance and Satterthwaite df, CI log R +- t(df)
    se, and p against a ratio of 1.  `seed_variance`: the seed part of Var(log R) when the seeds are not
    independent (a cross-fitted setting choice: the jackknife of log R, `claims.seed_jackknife`), in place of Z's."""
    arm, base = np.asarray(arm, dtype=np.float64), np.asarray(base, dtype=np.float64)
    mean_arm, mean_base = (float(v.mean()) if v.size else np.nan for v in (arm, base))
    if not (mean_arm > 0 and mean_base > 0):  # the log ratio is undefined (NaN means fail too)
        return Estimate(np.nan, np.nan, np.nan, np.nan, np.nan, np.nan)
    z = arm / mean_arm - base / mean_base  # (P, S), mean 0
    return crossed_estimate(z + np.log(mean_arm / mean_base), confidence, "problems", seed_variance)


def _power(delta: np.ndarray, df: float, crit: float) -> np.ndarray:
    """Two-sided power P(|T| > crit), T ~ noncentral t(df, delta), elementwise over delta (the power function of
    statsmodels' TTestPower); NaN far out in the tails read as 1 (upper) and 0 (lower)."""
    upper, lower = stats.nct.sf(crit, df, delta), stats.nct.cdf(-crit, df, delta)
    return np.nan_to_num(upper, nan=1.0) + np.nan_to_num(lower, nan=0.0)


def _solve_noncentrality(power_of, crit: float, power: float) -> float:
    """The noncentrality at which power_of(delta) reaches `power` (brentq to 1e-10, bracket doubled as needed)."""
    hi = 2 * crit + 10
    while power_of(hi) < power:
        hi *= 2
    return float(brentq(lambda d: power_of(d) - power, 0.0, hi, xtol=1e-10))


def plugin_mde(se: float, df: float, alpha: float, power: float = POWER) -> float:
    """The true difference a two-sided t-test with known standard error `se` and `df` degrees of freedom detects
    with `power` at level `alpha`: delta * se, delta the noncentrality at which |T|, T ~ noncentral t(df, delta),
    exceeds t(1 - alpha/2, df) with that probability.  Many df: (z_{1-alpha/2} + z_power) se.  Exact when `se` is
    the true one; with an estimated se it promises too much (`minimum_detectable_effect`).  NaN when se or df is
    not finite."""
    if not (np.isfinite(se) and np.isfinite(df)) or df <= 0:
        return np.nan
    return 0.0 if se == 0.0 else _plugin_noncentrality(float(df), alpha, power) * se


@functools.lru_cache(maxsize=1024)
def _plugin_noncentrality(df: float, alpha: float, power: float) -> float:
    """`plugin_mde`'s delta: it depends on (df, alpha, power) only, so a report's comparisons share it."""
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    return _solve_noncentrality(lambda d: float(_power(np.array(d), df, crit)), crit, power)


def se_ratio_nodes(df: float, seed_share: float = np.nan, seed_df: float = np.nan) -> np.ndarray:
    """(SE_NODES,) equal-probability nodes of u = se_hat / se, the sampling distribution of an estimated standard
    error, at the bin midpoints q = (i + 0.5) / SE_NODES (u increases with the quantile q).

    Without a seed share: u = sqrt(chi2(df) / df), one chi-square with `df` (Satterthwaite's approximation).
    With one: se_hat**2 is seed part + problem part, the seed part a mean square on `seed_df` = S - 1 degrees
    of freedom, MS_s ~ E[MS_s] chi2(S - 1) / (S - 1) (two-way random model: Montgomery, Design and Analysis of
    Experiments, §13.3), and the problem part, on (P - 1) and (S - 1)(P - 1) df, taken as known.  Its
    generalized pivotal quantity (Weerahandi 1993, JASA 88:899) se**2 = se_hat**2 (w / x + 1 - w), w =
    `seed_share` the share of se_hat**2 from MS_s and x = chi2(S - 1) / (S - 1), gives
        u = 1 / sqrt(w / x + 1 - w):
    the lower tail of chi2(S - 1) (a seed mean square small by chance), which a single chi-square on the
    larger Satterthwaite df understates when the seed part is estimated from 2 or 4 df.  w = 1: sqrt(chi2(S -
    1) / (S - 1)), the paired t's."""
    q = (np.arange(SE_NODES) + 0.5) / SE_NODES
    if not (np.isfinite(seed_share) and np.isfinite(seed_df)):
        return np.sqrt(stats.chi2.ppf(q, df) / df)
    x = stats.chi2.ppf(q, seed_df) / seed_df
    return 1.0 / np.sqrt(seed_share / x + 1.0 - seed_share)


def minimum_detectable_effect(
    se: float,
    df: float,
    alpha: float,
    power: float = POWER,
    seed_share: float = np.nan,
    seed_df: float = np.nan,
    *,
    arm_level: float = np.nan,
    base_level: float = np.nan,
    spread_power: float = 2.0,
) -> float:
    """The printed mde: the true difference that the test detects with `power` on average over the sampling
    distribution of the standard error it is computed from.  `se` is an estimate, se_hat = u se, u on
    `se_ratio_nodes` (a seed part on `seed_df` = S - 1 df making up `seed_share` of se_hat**2, the rest known;
    without them u ~ sqrt(chi2(df) / df)); printed as delta * se_hat, a true effect of delta * u * se is
    detected with probability P(|T| > t(1 - alpha/2, df)), T ~ noncentral t(df, delta u), and delta solves
    E_u[power(delta u)] = `power` (expected power over the nuisance parameter: the assurance of O'Hagan, Stevens
    & Campbell 2005, Pharm. Stat. 4:187, with the variance as the uncertain parameter).  The plug-in
    `plugin_mde` solves power(delta) = `power` and is met only 59-74% of the time at 3 seeds; at 3 seeds one
    chi-square on Satterthwaite's df is met 77.2-77.4% of the time in the binomial and problem-dominated regimes,
    the seed share 78.3-80.6% (10,000 replications; benchmarks/report_power.py, docs/report.md).  Many df and a
    small seed share: u -> 1, (z_{1-alpha/2} + z_power) se.  NaN when se or df is not finite.

    `arm_level`, `base_level` (the two arms' mean pass@k, in [0, 1]; `spread_power` 2 for pass@1, 1 for pass@k at
    large k: `_binomial_spread`): the effect moves the variance with it (`level_scaled_mde`): near 0 or 1 a real
    gain (or loss) raises the variance of the arm that moved, and the mde printed from the observed one promised
    80% and kept 68-73% (pass@1 near 5%); without them, the variance stays."""
    if not (np.isfinite(se) and np.isfinite(df)) or df <= 0:
        return np.nan
    if se == 0.0:
        return 0.0
    if not (np.isfinite(seed_share) and np.isfinite(seed_df)):  # the cache keys on the Satterthwaite case alone
        mde = _assurance_noncentrality(float(df), alpha, power) * se
    else:
        mde = _assurance_noncentrality(float(df), alpha, power, float(seed_share), float(seed_df)) * se
    return level_scaled_mde(mde, arm_level, base_level, spread_power)


def _binomial_spread(level: float, power: float = 2.0) -> float:
    """(m (1 - m))**power: how an arm's part of Var(mean D) moves with its mean pass@k m.  pass@1 (power 2): a shift
    on the logit scale moves each problem's rate by about p (1 - p) x the shift, and its problem, seed and run x
    problem spreads scale with the square of that slope [our choice: the sampling part, which scales with
    p (1 - p) alone, is the smaller part at 16 samples a problem].  pass@k at large k (power 1): each problem's
    pass@k is nearly 0 or 1, solvable or not, and the spread of such a variable is m (1 - m)."""
    m = min(max(level, 0.0), 1.0)
    return (m * (1.0 - m)) ** power


def level_scaled_mde(mde: float, arm_level: float, base_level: float, spread_power: float = 2.0) -> float:
    """The mde with the variance at the effect: a true difference delta puts the arm at base_level +- delta, and
    Var(mean D) = c (h(arm) + h(base)), h = `_binomial_spread` (`spread_power`), each arm's part proportional to
    h of its level (c from the variance observed at arm_level, base_level); delta solves delta = mde g(delta)**0.5,
    g the ratio of that variance to the observed one (brentq on [0, room]), for a gain and for a loss, the larger
    kept and never under `mde` [our choice: the mde is a size, either way; an effect whose variance falls keeps
    the observed one].  Near the floor the gain's variance rises (about (1 + delta / m)**2 for the arm's half at
    pass@1); at 0.5 it falls both ways.  A direction with no root in its room (the mde larger than any change of
    the level) gives mde g(room)**0.5, past the room.  `mde` unchanged when a level is not finite or both spreads
    are 0."""
    if not (np.isfinite(mde) and np.isfinite(arm_level) and np.isfinite(base_level)) or mde <= 0:
        return mde
    base = min(max(base_level, 0.0), 1.0)
    observed = _binomial_spread(arm_level, spread_power) + _binomial_spread(base, spread_power)
    if observed <= 0:
        return mde
    best = mde
    for step in (1.0, -1.0):
        room = 1.0 - base if step > 0 else base
        if room > 0:
            best = max(best, _scaled_root(mde, base, step, room, observed, spread_power))
    return best


def _scaled_root(mde: float, base: float, step: float, room: float, observed: float, power: float) -> float:
    """delta = mde g(delta)**0.5 for the arm at base + step delta (`level_scaled_mde`), on [0, room]."""

    def scaled(d: float) -> float:
        spread = _binomial_spread(base + step * d, power) + _binomial_spread(base, power)
        return mde * float(np.sqrt(spread / observed))

    if room < scaled(room):  # no root: larger than any change of the level in this direction
        return scaled(room)
    return float(brentq(lambda d: d - scaled(d), 0.0, room, xtol=1e-12))


@functools.lru_cache(maxsize=4096)
def _assurance_noncentrality(
    df: float, alpha: float, power: float, seed_share: float = np.nan, seed_df: float = np.nan
) -> float:
    """`minimum_detectable_effect`'s delta (about 15 ms to solve): it depends on (df, alpha, power, seed share,
    seed df) only, so comparisons that share them solve it once."""
    crit, u = float(stats.t.ppf(1 - alpha / 2, df)), se_ratio_nodes(df, seed_share, seed_df)
    return _solve_noncentrality(lambda d: float(_power(d * u, df, crit).mean()), crit, power)


def passk_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """One row per (arm, eval_task, k): pass_at_k (mean over seeds and problems), CI with the seed and problem
    variance, seeds, runs, seed_std, too_few_seeds, problems, seeds_expected and seeds_lost (every seed of the
    arm's runs listed, any status, and those missing with why: `benchctl.report.lost_seeds`)."""
    rows = []
    frame = _with_runs(data, ["arm", "seed"])
    for (arm, task, k), part in frame.groupby(["arm", "eval_task", "k"], sort=True):
        wide = seed_matrix(part)
        jack = cross_fit_seed_variance(getattr(data, "refits", None), arm, None, task, k, wide, None)
        est = crossed_estimate(wide.to_numpy(), config.confidence, config.population, jack)
        expected, lost = lost_seeds(_asked(data, arm), None, wide.columns, arm)
        rows.append(
            {
                "arm": arm,
                "eval_task": task,
                "k": int(k),
                "pass_at_k": est.mean,
                "low": max(0.0, est.low) if np.isfinite(est.low) else np.nan,
                "high": min(1.0, est.high) if np.isfinite(est.high) else np.nan,
                "seeds": wide.shape[1],
                "runs": part["run_id"].nunique(),
                "seed_std": est.seed_std,
                "too_few_seeds": wide.shape[1] < MIN_SEEDS,
                "problems": wide.shape[0],
                "seeds_expected": expected,
                "seeds_lost": lost,
            }
        )
    return pd.DataFrame(rows, columns=PASSK_COLUMNS)


def baseline_pairs(data: ReportData, baseline: str | None) -> list[tuple[str, str]]:
    """[(arm, its baseline arm)]: the baseline arm with the same context (other group-by columns)."""
    if baseline is None:
        return []
    runs = data.runs
    is_base = np.zeros(len(runs), bool)
    for col in (data.arm_column, "estimator", "estimator_label", "model"):
        if col in runs:  # the first column naming the baseline decides: arm `dapo` runs estimator grpo, not the arm
            is_base = runs[col].astype(str).to_numpy() == baseline
            if is_base.any():
                break
    context = [c for c in data.group_by if c != data.arm_column and not c.startswith("est")]
    key = runs[context].astype(str).agg("|".join, axis=1) if context else pd.Series([""] * len(runs))
    base_arms = {}
    for k_val, arm in zip(key[is_base], runs["arm"][is_base]):
        base_arms.setdefault(k_val, set()).add(arm)
    if not is_base.any():
        column = "arm" if data.arm_column == "cell_arm" else data.arm_column
        _note(data, f"--baseline {baseline} matches no run ({column}/estimator/model); no comparisons")
    pairs = []
    for k_val, arm in sorted(set(zip(key[~is_base], runs["arm"][~is_base])), key=lambda x: x[1]):
        bases = base_arms.get(k_val, set())
        if arm in bases:  # runs of the baseline arm that the baseline's name does not match (--group-by other columns)
            continue
        if len(bases) == 1:
            pairs.append((arm, next(iter(bases))))
        elif is_base.any():
            _note(
                data,
                f"{arm}: {len(bases)} baseline arms share its context ({', '.join(sorted(bases)) or 'none'}); "
                "not compared",
            )
    return pairs


def _note(data: ReportData, text: str) -> None:
    if text not in data.notes:
        data.notes.append(text)


COMPARISON_COLUMNS = [
    *("arm", "baseline", "eval_task", "k", "arm_pass_at_k", "baseline_pass_at_k", "diff", "low", "high"),
    *("p_value", "p_holm", "significant", "primary", "mde", "df", "seeds", "seed_std", "too_few_seeds"),
    *("problems", "arm_health", "baseline_health", "unhealthy", "seeds_expected", "seeds_lost"),
]


def arm_health(runs: pd.DataFrame | None, arm: str, seeds: list | None = None) -> str:
    """'ok', or the runs of `arm` (among `seeds` when given) that are not ok ('collapsed: seed 1; stalled: seed 3')."""
    from benchctl.report.health import summarize

    if runs is None or "health" not in runs:
        return "ok"
    runs = runs[runs["arm"] == arm]
    if seeds is not None:
        runs = runs[runs["seed"].fillna(-1).isin(seeds)]
    return summarize(runs["health"].tolist(), runs["seed"].tolist())


def _asked(data: ReportData, arm: str) -> pd.DataFrame:
    """The runs of `arm` the inputs list, whatever their status (`ReportData.asked`; the done runs without it)."""
    asked = getattr(data, "asked", None)
    asked = data.runs if asked is None else asked
    return asked[asked["arm"] == arm]


def _compare_one(data: ReportData, frame: pd.DataFrame, arm: str, base: str, config: ReportConfig) -> list[dict]:
    rows = []
    for (task, k), part in frame[frame["arm"].isin([arm, base])].groupby(["eval_task", "k"], sort=True):
        a, b = seed_matrix(part[part["arm"] == arm]), seed_matrix(part[part["arm"] == base])
        seeds = sorted(set(a.columns) & set(b.columns))
        probs = a.index.intersection(b.index)
        if not seeds or len(probs) == 0:
            continue
        av, bv = a.loc[probs, seeds].to_numpy(), b.loc[probs, seeds].to_numpy()  # (P, S) each
        refits = getattr(data, "refits", None)  # a setting chosen leave-one-seed-out: the jackknife's seed part
        jack = cross_fit_seed_variance(refits, arm, base, task, k, a.loc[probs, seeds], b.loc[probs, seeds])
        est = crossed_estimate(av - bv, config.confidence, config.population, jack)
        few = len(seeds) < MIN_SEEDS
        arm_state, base_state = arm_health(data.runs, arm, seeds), arm_health(data.runs, base, seeds)
        expected, lost = lost_seeds(_asked(data, arm), _asked(data, base), seeds, base)
        rows.append(
            {
                "arm": arm,
                "baseline": base,
                "eval_task": task,
                "k": int(k),
                "arm_pass_at_k": float(av.mean()),
                "baseline_pass_at_k": float(bv.mean()),
                "diff": est.mean,
                "low": np.nan if len(seeds) < 2 else est.low,
                "high": np.nan if len(seeds) < 2 else est.high,
                "p_value": np.nan if few else est.p_value,
                "df": np.nan if few else est.df,
                "se": est.se,
                "seed_share": est.seed_share,
                "seeds": len(seeds),
                "seed_std": est.seed_std,
                "too_few_seeds": few,
                "problems": len(probs),
                "arm_health": arm_state,
                "baseline_health": base_state,
                "unhealthy": arm_state != "ok" or base_state != "ok",
                "seeds_expected": expected,
                "seeds_lost": lost,
            }
        )
    return rows


def _holm(table: pd.DataFrame, config: ReportConfig) -> pd.DataFrame:
    """The primary family: rows at k = primary_k with enough seeds (arms x tasks x contexts); Holm over them only.
    mde at alpha / m for the family (Holm's first step), at alpha for the secondary rows (unadjusted p)."""
    table["primary"] = (table["k"] == config.primary_k).to_numpy()
    family = (table["primary"] & table["p_value"].notna() & ~table["too_few_seeds"]).to_numpy()
    table["p_holm"], table["significant"] = np.nan, False
    if family.any():
        reject, p_adj, _, _ = multipletests(table.loc[family, "p_value"].to_numpy(), alpha=config.alpha, method="holm")
        table.loc[family, "p_holm"], table.loc[family, "significant"] = p_adj, reject
    level = np.where(table["primary"], config.alpha / max(1, int(family.sum())), config.alpha)
    table["mde"] = [
        minimum_detectable_effect(r.se, r.df, a, POWER, r.seed_share, r.seeds - 1, **_levels(r))
        for r, a in zip(table.itertuples(), level, strict=True)
    ]
    return table


def spread_power(k: int) -> float:
    """`_binomial_spread`'s power for pass@k: 2 at k = 1 (the mean of c / n), 1 above (each problem's pass@k nearly
    solvable or not) [our choice; benchmarks/report_power.py --mde-gain measures both]."""
    return 2.0 if int(k) == 1 else 1.0


def _levels(row) -> dict[str, float]:
    """The arms' levels the mde scales its variance with (`level_scaled_mde`), with the spread power of its k."""
    return {"arm_level": row.arm_pass_at_k, "base_level": row.baseline_pass_at_k, "spread_power": spread_power(row.k)}


def comparisons_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """Differences to the baseline for every (arm, task, k) with the seed-level test; Holm over the primary family
    (k = primary_k, at least MIN_SEEDS seeds); the other k keep their unadjusted p-value (secondary)."""
    frame = _with_runs(data, ["arm", "seed"])
    rows = [
        r for arm, base in baseline_pairs(data, config.baseline) for r in _compare_one(data, frame, arm, base, config)
    ]
    table = pd.DataFrame(rows, columns=[*COMPARISON_COLUMNS, "se", "seed_share"])
    table["too_few_seeds"] = table["too_few_seeds"].astype(bool)
    table["unhealthy"] = table["unhealthy"].astype(bool)
    if len(table) and not (table["k"] == config.primary_k).any():
        _note(data, f"primary k = {config.primary_k} was not evaluated: no comparison is tested (--primary-k)")
    table = _holm(table, config)
    table["significant"] = table["significant"].astype(bool)
    table["primary"] = table["primary"].astype(bool)
    return table[COMPARISON_COLUMNS]


def cost_table(data: ReportData) -> pd.DataFrame:
    """One row per arm: runs, steps, rollout tokens and samples, seconds per phase and in all (means over runs),
    and pass@1 per evaluated task (mean over seeds)."""
    if data.metrics.empty:
        return pd.DataFrame(columns=["arm", "runs"])
    m = data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id")
    per_run = m.groupby(["arm", "run_id"]).agg(steps=("step", "max"))
    for col, name in (("rollout/tokens_total", "rollout_tokens"), ("rollout/samples_total", "rollout_samples")):
        if col in m:
            per_run[name] = m.groupby(["arm", "run_id"])[col].max()
    if "rollout_tokens" not in per_run and "rollout/tokens" in m:
        per_run["rollout_tokens"] = m.groupby(["arm", "run_id"])["rollout/tokens"].sum()
    for col in [*PHASES, "time/step"]:
        if col in m:
            per_run[f"{col}_s"] = m.groupby(["arm", "run_id"])[col].sum()
    table = per_run.groupby("arm").mean()
    table.insert(0, "runs", per_run.groupby("arm").size())
    p1 = data.eval_curve
    if not p1.empty:
        final = p1.sort_values("step", kind="stable").groupby(["run_id", "eval_task"]).tail(1)
        final = final.merge(data.runs[["run_id", "arm"]], on="run_id")
        wide = final.pivot_table(index="arm", columns="eval_task", values="pass@1", aggfunc="mean")
        table = table.join(wide.add_prefix("pass@1:"))
    return table.reset_index()
