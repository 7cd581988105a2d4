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

Target (docs/report.md, "Claims"): coverage >= 93% at 5 seeds. Run:
`.venv/bin/python benchmarks/report_claims_coverage.py [--reps 2000]` (about a minute).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import expit, logit

from benchctl.report.claims import EXCLUDED, log_ratio_interval, verdict

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{args.reps} replications per row; percent of replications")
    head = ("true r", "seeds", "cover t(log)", "cover boot", "holds t(log)", "excluded", "holds boot (old)")
    print(" | ".join(head))
    for reduction in REDUCTIONS:
        p_arm = arm_rate(reduction, rng)
        for seeds in SEEDS:
            r = regime(rng, reduction, p_arm, seeds, args.reps)
            cells = (r["cover_t"], r["cover_boot"], r["holds_t"], r["excluded_t"], r["holds_boot"])
            print(f"{0.0 - reduction:+.2f} | {seeds:>2} | " + " | ".join(f"{c:5.1f}" for c in cells))


if __name__ == "__main__":
    main()
