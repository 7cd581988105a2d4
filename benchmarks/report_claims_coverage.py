"""Relative claims ("AVSPO's ACR is 58-63% lower than GRPO's"): coverage of the interval and the verdicts it gives.

Each seed trains one GRPO run and one AVSPO run on the same data order. A run's advantage collapse rate (ACR,
`acr/all` averaged over training) is the fraction of 64 groups x 100 steps with zero advantage, around a per-run
rate logit(p) = logit(p_arm) + seed effect (sd 0.3, shared by the seed's two runs) + run effect (sd 0.25). GRPO's
p is 0.40; AVSPO's is set so that the true relative effect E[ACR_avspo] / E[ACR_grpo] - 1 is -r (computed by
Monte Carlo on 400,000 seeds), for r = 0 (no reduction), 0.10 and 0.60 (the paper's size).

Intervals (95%): the report's paired t-interval on per-seed log ratios (`benchctl.report.claims.log_ratio_interval`)
against the percentile bootstrap over seeds the report used before (ratio of resampled means, 2,000 resamples).
Verdicts of the claim "58% lower" (direction less, relative, stated_effect 0.58): the report's rule
(`benchctl.report.claims.verdict`) against the old one (bootstrap interval, no stated effect).

Relative pass@k claims ("+10% relative pass@1"), `--only passk`: each seed trains the arm and the baseline, and
both are evaluated on the same P = 100 problems, n = 16 samples each, pass@1 = correct / 16.  The logit of a
(run, problem) success rate is MU (+ SHIFT = 0.3 for the arm) + problem difficulty (sd 1.5, shared by the arms)
+ arm x problem (sd 0 or 0.6, each arm its own: the problems favour one arm) + seed (sd 0.15, shared by the
seed's two runs) + run (sd 0.1) + run x problem (sd 0.5); MU -1 (pass@1 near 0.3) or -3 (near 0.08).  Every term
is Gaussian, so an arm's population pass@1 is E[expit(N(mean, total variance))] (Gauss-Hermite quadrature, 80
nodes) and the population ratio is exact.  Intervals (95%), both through `benchctl.report.claims.seed_effect`:
"per-seed" is the paired t on the per-seed log ratios that `--population problems` used for a relative claim
(and `--population fixed` keeps); "crossed" the delta-method log ratio with the crossed variance
(`benchctl.report.stats.crossed_log_ratio`) it uses now.  Detection at the printed mde: each replication's null
pair (SHIFT 0, ratio 1) gives the mde the report prints; an independent null pair whose arm is multiplied by
exp(mde) (a true ratio of exp(mde)) is then tested; the share whose interval excludes 0 is the detection (the
mde's promise: 80%).

Target (docs/report.md, "Claims"): coverage 93-97% at 3, 5 and 10 seeds. Run:
`.venv/bin/python benchmarks/report_claims_coverage.py [--reps 2000] [--only acr|passk]`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from benchctl.report.claims import EXCLUDED, log_ratio_interval, seed_effect, verdict

P_BASE, SD_SEED, SD_RUN, CELLS = 0.40, 0.3, 0.25, 64 * 100
REDUCTIONS, SEEDS = (0.0, 0.10, 0.60), (3, 5, 10)


def acr(rng: np.random.Generator, p: float, seed_effect: np.ndarray) -> np.ndarray:
    """Per-run ACR, same shape as seed_effect: binomial share of CELLS around the run's logit rate."""
    rate = expit(logit(p) + seed_effect + rng.normal(0.0, SD_RUN, seed_effect.shape))
    return rng.binomial(CELLS, rate) / CELLS


def arm_rate(reduction: float, rng: np.random.Generator) -> float:
    """p_arm whose true E[ACR] is (1 - reduction) E[ACR of GRPO] (bisection on a Monte Carlo mean)."""
    shared = rng.normal(0.0, SD_SEED, 400_000)
    noise = rng.normal(0.0, SD_RUN, 400_000)
    target = (1 - reduction) * expit(logit(P_BASE) + shared + noise).mean()
    low, high = 1e-4, 0.9999
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if expit(logit(mid) + shared + noise).mean() < target else (low, mid)
    return (low + high) / 2


def bootstrap(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The old interval: percentile bootstrap over seeds of mean(a) / mean(b) - 1."""
    picks = rng.integers(0, len(a), size=(2000, len(a)))  # (B, S)
    reps = a[picks].mean(axis=1) / b[picks].mean(axis=1) - 1
    return float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))


def regime(rng, reduction: float, p_arm: float, seeds: int, reps: int) -> dict:
    """Coverage of -reduction and verdict rates of the claim '58% lower' over `reps` replications."""
    counts = dict.fromkeys(("cover_t", "cover_boot", "holds_t", "excluded_t", "holds_boot"), 0)
    for _ in range(reps):
        shared = rng.normal(0.0, SD_SEED, seeds)  # (S,)
        a, b = acr(rng, p_arm, shared), acr(rng, P_BASE, shared)
        _, low, high = log_ratio_interval(a, b)
        b_low, b_high = bootstrap(a, b, rng)
        counts["cover_t"] += low <= -reduction <= high
        counts["cover_boot"] += b_low <= -reduction <= b_high
        found = verdict("less", low, high, seeds, stated_effect=0.58)
        counts["holds_t"] += found == "holds"
        counts["excluded_t"] += found == EXCLUDED
        counts["holds_boot"] += verdict("less", b_low, b_high, seeds) == "holds"
    return {key: 100 * value / reps for key, value in counts.items()}


# ---- relative pass@k claims: problems x seeds ------------------------------------------------------------------

PROBLEMS, SAMPLES, SHIFT = 100, 16, 0.3
SD_DIFFICULTY, SD_PAIR_SEED, SD_PAIR_RUN, SD_CELL = 1.5, 0.15, 0.1, 0.5
PASSK_REGIMES = {  # name -> (mean logit MU, arm x problem sd)
    "pass@1 ~0.3, no arm x problem": (-1.0, 0.0),
    "pass@1 ~0.3, arm x problem 0.6": (-1.0, 0.6),
    "pass@1 ~0.08, arm x problem 0.6": (-3.0, 0.6),
}
METHODS = {"per-seed": "fixed", "crossed": "problems"}  # label -> the population seed_effect is called with


def population_pass1(mean: float, sd_interaction: float) -> float:
    """E[expit(L)], L ~ N(mean, total variance of the logit terms): the arm's population pass@1 (Gauss-Hermite)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    sd = np.sqrt(SD_DIFFICULTY**2 + sd_interaction**2 + SD_PAIR_SEED**2 + SD_PAIR_RUN**2 + SD_CELL**2)
    return float((weights * expit(mean + sd * nodes)).sum() / weights.sum())


def passk_pair(rng, seeds: int, mu: float, sd_interaction: float, shift: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-problem pass@1 of the arm and of the baseline as problems x seeds frames, as `claims.run_values` gives."""
    difficulty = rng.normal(0.0, SD_DIFFICULTY, (PROBLEMS, 1))  # shared by the arms
    seed = rng.normal(0.0, SD_PAIR_SEED, (1, seeds))  # shared by the seed's two runs

    def arm(offset: float) -> pd.DataFrame:
        logits = (
            mu
            + offset
            + difficulty
            + seed
            + rng.normal(0.0, sd_interaction, (PROBLEMS, 1))  # this arm's problem preferences
            + rng.normal(0.0, SD_PAIR_RUN, (1, seeds))
            + rng.normal(0.0, SD_CELL, (PROBLEMS, seeds))
        )  # (P, S)
        values = rng.binomial(SAMPLES, expit(logits)) / SAMPLES  # (P, S)
        return pd.DataFrame(values, index=[f"p{i}" for i in range(PROBLEMS)], columns=range(seeds))

    return arm(shift), arm(0.0)


def passk_regime(rng, seeds: int, mu: float, sd_interaction: float, reps: int) -> dict:
    """Per method: coverage of the population log ratio (%), detection at the printed mde (%), median printed mde
    (relative increase, %), over `reps` replications."""
    true = np.log(population_pass1(mu + SHIFT, sd_interaction) / population_pass1(mu, sd_interaction))
    cover, detect, mdes = dict.fromkeys(METHODS, 0), dict.fromkeys(METHODS, 0), {m: [] for m in METHODS}
    for _ in range(reps):
        alt, null, test = (passk_pair(rng, seeds, mu, sd_interaction, s) for s in (SHIFT, 0.0, 0.0))
        for method, population in METHODS.items():
            _, low, high, _, _ = seed_effect(*alt, True, 0.95, population)
            cover[method] += np.log1p(low) <= true <= np.log1p(high)
            mde = seed_effect(*null, True, 0.95, population)[4]  # log scale
            _, low, high, _, _ = seed_effect(test[0] * np.exp(mde), test[1], True, 0.95, population)
            detect[method] += low > 0 or high < 0
            mdes[method].append(mde)
    return {m: (100 * cover[m] / reps, 100 * detect[m] / reps, 100 * np.expm1(np.median(mdes[m]))) for m in METHODS}


def passk_table(rng, reps: int) -> None:
    print(f"\nrelative pass@1 claims, {PROBLEMS} problems: {reps} replications per row; percent")
    print("| regime | seeds | true ratio | coverage, per-seed (before) | coverage, crossed | detected at mde, per-seed "
          "| detected at mde, crossed | median mde, per-seed | median mde, crossed |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for regime, (mu, sd) in PASSK_REGIMES.items():
        ratio = population_pass1(mu + SHIFT, sd) / population_pass1(mu, sd)
        for seeds in SEEDS:
            r = passk_regime(rng, seeds, mu, sd, reps)
            cells = [r[m][0] for m in METHODS] + [r[m][1] for m in METHODS] + [r[m][2] for m in METHODS]
            print(f"| {regime} | {seeds} | {ratio:.3f} | " + " | ".join(f"{c:.1f}" for c in cells) + " |", flush=True)
    print(f"(Monte Carlo standard error of a 95% coverage: {100 * np.sqrt(0.05 * 0.95 / reps):.1f}, of an 80% "
          f"detection: {100 * np.sqrt(0.8 * 0.2 / reps):.1f})")  # fmt: skip


def acr_table(rng, reps: int) -> None:
    print(f"relative ACR claims: {reps} replications per row; percent of replications")
    head = ("true r", "seeds", "cover t(log)", "cover boot", "holds t(log)", "excluded", "holds boot (old)")
    print(" | ".join(head))
    for reduction in REDUCTIONS:
        p_arm = arm_rate(reduction, rng)
        for seeds in SEEDS:
            r = regime(rng, reduction, p_arm, seeds, reps)
            cells = (r["cover_t"], r["cover_boot"], r["holds_t"], r["excluded_t"], r["holds_boot"])
            print(f"{0.0 - reduction:+.2f} | {seeds:>2} | " + " | ".join(f"{c:5.1f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--only", choices=("acr", "passk"), help="only the training-metric or the pass@k table")
    args = parser.parse_args()
    rng, start = np.random.default_rng(0), time.perf_counter()
    if args.only != "passk":
        acr_table(rng, args.reps)
    if args.only != "acr":
        passk_table(rng, args.reps)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
