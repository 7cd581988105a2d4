"""Level and power of the report's difference test, new against old, on simulated problems x seeds matrices; and
how often a true effect equal to the printed mde is detected.

    python benchmarks/report_power.py [--reps 2000] [--problems 200] [--seed 0] [--mde-only]   (about 1 min)

Each replication draws the matrix D (P problems, S seeds) of an arm's per-problem pass@k minus its baseline's,
paired by seed and problem, and applies three tests of mean(D) = 0 at 5%, two-sided:

* old: V = var(seed means) / S + var(problem means) / P, t(S - 1) (the report before the two-way design);
* problems: the report's default (`benchctl.report.stats.crossed_variance`: two-way ANOVA mean squares,
  (MS_s + max(MS_p - MS_e, 0)) / (S P), Satterthwaite df with the seed mean square at its upper 75% limit);
* fixed: `--population fixed`, a paired t on the per-seed means (exact when the problem set is held fixed; under
  the "problems like these" null below it also counts the problem set's luck, so its level is shown only as
  that question's false-positive rate).

Regimes.  Gaussian D = delta + seed effect + problem effect (the problems favour one arm) + run x problem noise,
standard deviations in pass@k units: seed-dominated (0.03, 0.005, 0.05), problem-dominated (0.005, 0.08, 0.05),
run x problem (0.005, 0.01, 0.25).  Binomial: n = 16 samples per problem and run, logit p = mean + problem
difficulty (sd 1.5, shared by the arms) + arm x problem (0.3) + seed (0.15) + run x problem (0.5); pass@1 near 0
(mean logit -4; the arm's logit + 0.3 for power) and pass@16 near 1 (mean logit +0.5; + 0.8 for power).
Level: delta = 0; power: delta = 0.03 (3 points) or the logit shift (its mean diff printed).  A zero variance
(every difference 0) counts as no rejection.

Detection at the printed mde (the mde's promise: a true effect that large is detected 80% of the time).  Each
replication draws one null matrix and computes the mde the report would print from its standard error and df
(`benchctl.report.stats`, two-sided 5%: `plugin_mde`, the noncentral t power at the estimated se;
`minimum_detectable_effect` without a seed share, that power averaged over se_hat / se ~ sqrt(chi2(df) / df),
"chi2(df)"; and the printed one, `minimum_detectable_effect` with the seed share of the variance on S - 1 df, as
`stats._holm` calls it; interpolated on a grid of df (and of shares), their function of se being linear), then
draws an independent null matrix, adds that mde to every difference and applies the report's test.  The share
of rejections is the detection at the printed mde (target 77-83%); `mde / true` is the median printed mde over
the effect the test detects with 80% power (found by bisection on the same regime, 4 x the reps).
"""

from __future__ import annotations

import argparse
import time
from math import comb

import numpy as np
from scipy import stats
from scipy.interpolate import RegularGridInterpolator

from benchctl.report.stats import (
    POWER,
    crossed_variance,
    level_scaled_mde,
    mean_squares,
    minimum_detectable_effect,
    plugin_mde,
    spread_power,
)

GAUSSIAN = {
    "seed-dominated": (0.03, 0.005, 0.05),
    "problem-dominated": (0.005, 0.08, 0.05),
    "run x problem": (0.005, 0.01, 0.25),
}
BINOMIAL = {"pass@1 near 0": (-4.0, 1, 0.3), "pass@16 near 1": (0.5, 16, 0.8)}  # mean logit, k, arm shift
N_SAMPLES, ALPHA, DELTA = 16, 0.05, 0.03


def p_values(d: np.ndarray) -> dict[str, np.ndarray]:
    """d (R, P, S) -> two-sided p-values (R,) of the old, problems and fixed tests."""
    n_prob, n_seed = d.shape[-2:]
    grand, ms_seed, ms_prob, _ = mean_squares(d)
    old = np.sqrt((ms_seed + ms_prob) / (n_seed * n_prob))  # var(seed means)/S + var(problem means)/P
    _, var, df = crossed_variance(d)
    fixed = np.sqrt(ms_seed / (n_seed * n_prob))  # var(seed means) / S
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "old": 2 * stats.t.sf(np.abs(grand) / old, n_seed - 1),
            "problems": 2 * stats.t.sf(np.abs(grand) / np.sqrt(var), df),
            "fixed": 2 * stats.t.sf(np.abs(grand) / fixed, n_seed - 1),
        }


def gaussian(rng, sds, reps, problems, seeds, delta) -> np.ndarray:
    seed_sd, prob_sd, noise_sd = sds
    return (
        delta
        + rng.normal(0, seed_sd, (reps, 1, seeds))
        + rng.normal(0, prob_sd, (reps, problems, 1))
        + rng.normal(0, noise_sd, (reps, problems, seeds))
    )  # (R, P, S)


def _passk_table(k: int) -> np.ndarray:
    """Unbiased pass@k for c = 0..n correct of n (Chen et al. 2021, arXiv:2107.03374, Eq. 1)."""
    return np.array([1.0 - comb(N_SAMPLES - c, k) / comb(N_SAMPLES, k) for c in range(N_SAMPLES + 1)])


def binomial(rng, setting, reps, problems, seeds, shift) -> np.ndarray:
    mean, k, _ = setting
    difficulty = rng.normal(0, 1.5, (reps, problems, 1))  # shared by both arms

    def arm(offset: float) -> np.ndarray:
        logit = (
            mean
            + offset
            + difficulty
            + rng.normal(0, 0.3, (reps, problems, 1))
            + rng.normal(0, 0.15, (reps, 1, seeds))
            + rng.normal(0, 0.5, (reps, problems, seeds))
        )
        return _passk_table(k)[rng.binomial(N_SAMPLES, 1 / (1 + np.exp(-logit)))]  # (R, P, S)

    return arm(shift) - arm(0.0)


def rates(d: np.ndarray) -> dict[str, float]:
    """Share of p < ALPHA per test over the replications of d (R, P, S)."""
    return {name: float(np.mean(p < ALPHA)) for name, p in p_values(d).items()}


def draw(rng, args, regime: str, seeds: int, effect: float) -> np.ndarray:
    """(R, P, S) differences of one regime; effect 0: the null, 1: the power alternative."""
    if regime in GAUSSIAN:
        return gaussian(rng, GAUSSIAN[regime], args.reps, args.problems, seeds, effect * DELTA)
    return binomial(rng, BINOMIAL[regime], args.reps, args.problems, seeds, effect * BINOMIAL[regime][2])


def report_test(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """d (R, P, S) -> the report's (p-value, se, df, seed share) per replication (the `problems` test; the seed
    share MS_s / (S P) over its variance, as `stats.crossed_estimate` reports it)."""
    n_prob, n_seed = d.shape[-2:]
    grand, ms_seed, _, _ = mean_squares(d)
    _, var, df = crossed_variance(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(var > 0, np.fmin(1.0, ms_seed / (n_seed * n_prob) / var), np.nan)
        return 2 * stats.t.sf(np.abs(grand) / np.sqrt(var), df), np.sqrt(var), df, share


def printed_mde(rule, se: np.ndarray, df: np.ndarray) -> np.ndarray:
    """rule(se, df, alpha) per replication: rule(1, df) on a log grid of df, interpolated, times se."""
    ok = np.isfinite(df) & (df > 0)
    grid = np.geomspace(df[ok].min(), df[ok].max() + 1e-9, 48)
    unit = np.array([rule(1.0, g, ALPHA) for g in grid])
    return np.where(ok, np.interp(np.log(np.where(ok, df, 1.0)), np.log(grid), unit) * se, np.nan)


def seed_share_mde(se: np.ndarray, df: np.ndarray, share: np.ndarray, seeds: int) -> np.ndarray:
    """`minimum_detectable_effect` with the seed share (S - 1 df) per replication: its value at se 1 on a grid of
    21 shares x 16 log df, bilinearly interpolated, times se."""
    ok = np.isfinite(df) & (df > 0) & np.isfinite(share)
    shares, grid = np.linspace(0.0, 1.0, 21), np.geomspace(df[ok].min(), df[ok].max() + 1e-9, 16)
    unit = [[minimum_detectable_effect(1.0, g, ALPHA, POWER, w, seeds - 1.0) for g in grid] for w in shares]
    at = RegularGridInterpolator((shares, np.log(grid)), np.array(unit))
    points = np.stack([np.where(ok, share, 0.0), np.log(np.where(ok, df, grid[0]))], axis=-1)
    return np.where(ok, at(points) * se, np.nan)


def detection(rng, args, regime: str, seeds: int, mde: np.ndarray) -> float:
    """Share of replications whose independent null matrix, shifted by their printed mde, the report's test rejects."""
    p = report_test(draw(rng, args, regime, seeds, 0.0) + mde[:, None, None])[0]
    return float(np.mean(p < ALPHA))


def true_mde(rng, args, regime: str, seeds: int) -> float:
    """The shift the report's test detects with 80% power in this regime (bisection on 4 x reps null matrices)."""
    d = np.concatenate([draw(rng, args, regime, seeds, 0.0) for _ in range(4)])
    low, high = 0.0, 0.5
    for _ in range(25):
        mid = (low + high) / 2
        low, high = (mid, high) if np.mean(report_test(d + mid)[0] < ALPHA) < 0.8 else (low, mid)
    return (low + high) / 2


MDE_HEADER = (
    "| regime | seeds | detected at plug-in mde | detected at chi2(df) mde | detected at printed mde "
    "| plug-in / true | chi2(df) / true | printed / true |\n"
    "|---|---|---|---|---|---|---|---|"
)


def mde_table(rng, args) -> None:
    print(f"\ndetection at the printed mde ({args.reps} replications; target 77-83%)")
    print(MDE_HEADER)
    for regime in [*GAUSSIAN, *BINOMIAL]:
        for seeds in (3, 5, 10):
            _, se, df, share = report_test(draw(rng, args, regime, seeds, 0.0))
            mdes = [printed_mde(rule, se, df) for rule in (plugin_mde, minimum_detectable_effect)]
            mdes.append(seed_share_mde(se, df, share, seeds))
            rates = [detection(rng, args, regime, seeds, m) for m in mdes]
            true = true_mde(rng, args, regime, seeds)
            ratios = [np.nanmedian(m) / true for m in mdes]
            cells = [f"{100 * r:.1f}%" for r in rates] + [f"{r:.3f}" for r in ratios]
            print(f"| {regime} | {seeds} | " + " | ".join(cells) + " |", flush=True)


def expected_passk(setting, shift: np.ndarray) -> np.ndarray:
    """E[pass@k] of an arm whose logit is shifted by `shift` (array): 1 - E[(1 - p)^k] (the unbiased estimator's
    mean), p = expit(mean + shift + L), L ~ N(0, the total logit sd of `binomial`), by 80-node Gauss-Hermite."""
    mean, k, _ = setting
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    sd = np.sqrt(1.5**2 + 0.3**2 + 0.15**2 + 0.5**2)
    p = 1 / (1 + np.exp(-(mean + np.asarray(shift)[..., None] + sd * nodes)))
    return 1 - ((1 - p) ** k) @ weights / weights.sum()


def shift_for(setting, diff: np.ndarray) -> np.ndarray:
    """The arm's logit shift whose expected pass@k difference to the unshifted baseline is `diff` (per replication,
    of either sign; interpolated on a grid of shifts in [-6, 6])."""
    grid = np.linspace(-6, 6, 4801)
    gain = expected_passk(setting, grid) - expected_passk(setting, np.zeros(1))
    return np.interp(diff, gain, grid, left=np.nan, right=np.nan)


def binomial_arms(rng, setting, shift: np.ndarray, problems: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """(arm, baseline) per-problem pass@k (R, P, S) of `binomial`, the arm's logit shifted by `shift` (R,)."""
    mean, k, _ = setting
    reps = len(shift)
    difficulty = rng.normal(0, 1.5, (reps, problems, 1))

    def arm(offset: np.ndarray) -> np.ndarray:
        logit = mean + offset[:, None, None] + difficulty + rng.normal(0, 0.3, (reps, problems, 1))
        logit = logit + rng.normal(0, 0.15, (reps, 1, seeds)) + rng.normal(0, 0.5, (reps, problems, seeds))
        return _passk_table(k)[rng.binomial(N_SAMPLES, 1 / (1 + np.exp(-logit)))]

    return arm(np.asarray(shift, dtype=np.float64)), arm(np.zeros(reps))


def gain_table(rng, args) -> None:
    """Detection at the printed mde when the arm really gains (or loses) that much: each replication draws a null
    pair of arms, prints the mde (seed share, as `stats._holm`; "before" without the arms' levels, "after" with
    them), then an independent pair whose arm's logit is shifted so that its expected pass@k difference is that
    mde (up: a gain, down: a loss), its variance moving with it, and applies the report's test ("after": the
    spread power of the regime's k, `stats.spread_power`, as the report calls it)."""
    print(f"\ndetection at the printed mde, the arm's logit really shifted ({args.reps} replications; target 75-85%)")
    print("| regime | seeds | mde before | mde after | gain: before | gain: after | loss: before | loss: after |")
    print("|---|---|---|---|---|---|---|---|")
    for name, setting in BINOMIAL.items():
        for seeds in (3, 5, 10):
            a, b = binomial_arms(rng, setting, np.zeros(args.reps), args.problems, seeds)
            _, se, df, share = report_test(a - b)
            before = seed_share_mde(se, df, share, seeds)
            levels = zip(before, a.mean(axis=(1, 2)), b.mean(axis=(1, 2)), strict=True)
            after = np.array([level_scaled_mde(m, arm, base, spread_power(setting[1])) for m, arm, base in levels])
            cells = [f"{100 * np.nanmedian(before):.2f}", f"{100 * np.nanmedian(after):.2f}"]
            for sign in (1.0, -1.0):
                for mde in (before, after):
                    shift = shift_for(setting, sign * mde)  # NaN: a change larger than the level allows
                    arm, base = binomial_arms(rng, setting, np.nan_to_num(shift), args.problems, seeds)
                    found, ok = report_test(arm - base)[0] < ALPHA, np.isfinite(shift)
                    past = f" ({100 * (1 - ok.mean()):.0f}% past the level)" if not ok.all() else ""
                    cells.append(f"{100 * found[ok].mean():.1f}%{past}")
            print(f"| {name} | {seeds} | " + " | ".join(cells) + " |", flush=True)


HEADER = (
    "| regime | seeds | level old | level problems | level fixed | diff | power old | power problems | power fixed |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mde-only", action="store_true", help="only the detection at the printed mde")
    parser.add_argument("--mde-gain", action="store_true", help="only the detection at the mde with a real gain")
    args = parser.parse_args()
    rng, start = np.random.default_rng(args.seed), time.perf_counter()
    if args.mde_gain:
        gain_table(rng, args)
        print(
            f"({time.perf_counter() - start:.0f} s; Monte Carlo se of an 80% rate: "
            f"{100 * np.sqrt(0.16 / args.reps):.1f}%)"
        )
        return
    if args.mde_only:
        mde_table(rng, args)
        print(
            f"({time.perf_counter() - start:.0f} s; Monte Carlo standard error of an 80% rate: "
            f"{100 * np.sqrt(0.8 * 0.2 / args.reps):.1f}%)"
        )
        return
    print(f"{args.reps} replications, {args.problems} problems, two-sided 5%; level: no true difference")
    print(HEADER)
    for regime in [*GAUSSIAN, *BINOMIAL]:
        for seeds in (3, 5, 10):
            level = rates(draw(rng, args, regime, seeds, 0.0))
            alt = draw(rng, args, regime, seeds, 1.0)
            power = rates(alt)
            cells = [f"{100 * v:.1f}%" for v in level.values()] + [f"{100 * alt.mean():+.1f}"]
            cells += [f"{100 * v:.1f}%" for v in power.values()]
            print(f"| {regime} | {seeds} | " + " | ".join(cells) + " |")
    se = 100 * np.sqrt(0.05 * 0.95 / args.reps)
    mde_table(rng, args)
    print(
        f"({time.perf_counter() - start:.0f} s; Monte Carlo standard error of a 5% rate: {se:.1f}%, of an 80% rate: "
        f"{100 * np.sqrt(0.8 * 0.2 / args.reps):.1f}%)"
    )


if __name__ == "__main__":
    main()
