"""Coverage and false calls of the report's compute-curve fits (ScaleRL), on simulated training curves.

    python benchmarks/report_compute_coverage.py [--reps 400] [--seed 0] [--cadence all|geometric|linear]
    (400 reps of the 11 regimes: about 14 minutes on 2 shared cores)

Each replication draws the held-out pass@1 of S seeds of each of four arms at step 0 and at n compute points up to
a budget of 160k rollout tokens, on one of two cadences: `geometric` (8 points 2k .. 160k, log-spaced) or `linear`
(every 160k / n tokens, n = 5 or 8: how `--eval-every-tokens` evaluates; the first point at or past C_mid).  A seed
is a training run: its own curve R0 + (A_s - R0) / (1 + (C_s / C)^B_s) with A_s = A + N(0, 0.03),
B_s = B e^N(0, 0.1), C_s = C_mid e^N(0, 0.2), plus evaluation noise N(0, sd) at every point (sd 0.02: about 600
problems at pass@1 0.5; 0.035: about 200; 0.05: a small held-out set).  R0 = 0.1, A = 0.6, B = 1.5, C_mid = 20k.

* coverage: the share of replications whose 95% interval (`benchctl.report.compute.compute_fits`) contains the
  baseline arm's true A, B, C_mid (its midpoint well inside the budget);
* identified: the share whose asymptote the report calls identified, for the baseline arm (it should be) and for an
  arm whose C_mid is 2.5x the largest compute, a curve still rising (it should not: then no asymptote is printed or
  compared);
* false calls: an arm with the baseline's true curve, compared by `compare_fits`: the share called "higher/lower
  asymptote" (target <= 5%) and "same asymptote, sooner/later";
* power: an arm whose A is 0.05 higher than the baseline's: the share called "higher asymptote".
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from benchctl.report.compute import compare_fits, compute_fits, scalerl_curve

BUDGET = 160_000.0
CADENCES = {  # evaluated compute points after step 0
    "geometric 8": np.geomspace(2_000, BUDGET, 8),
    "linear 5": np.linspace(BUDGET / 5, BUDGET, 5),
    "linear 8": np.linspace(BUDGET / 8, BUDGET, 8),
}
REGIMES = {  # (cadence, seeds, evaluation sd)
    "geometric": [("geometric 8", s, sd) for s, sd in ((3, 0.035), (5, 0.02), (5, 0.035), (5, 0.05), (10, 0.035))],
    "linear": [(c, s, 0.035) for c in ("linear 5", "linear 8") for s in (3, 5, 10)],
}
R0, A, B, C_MID = 0.1, 0.6, 1.5, 20_000.0
SPREAD = (0.03, 0.1, 0.2)  # seed sd of A, log B, log C_mid
COLUMNS = [
    *("cover A", "cover B", "cover C_mid", "identified", "higher/lower (identical)", "sooner/later (identical)"),
    *("higher (A +5 pts)", "identified, C_mid 2.5x budget"),
]


def draw(
    rng, arm: str, seeds: int, noise: float, tokens: np.ndarray, a: float = A, c_mid: float = C_MID
) -> pd.DataFrame:
    """(arm, eval_task, seed, tokens, score) of one arm's seeds evaluated at step 0 and at `tokens`: see the module
    docstring."""
    frames = []
    for seed in range(seeds):
        a_s = a + rng.normal(0, SPREAD[0])
        b_s, c_s = B * np.exp(rng.normal(0, SPREAD[1])), c_mid * np.exp(rng.normal(0, SPREAD[2]))
        score = np.r_[R0, scalerl_curve(tokens, R0, a_s, b_s, c_s)] + rng.normal(0, noise, len(tokens) + 1)
        frames.append(pd.DataFrame({"seed": seed, "tokens": np.r_[0.0, tokens], "score": score}))
    return pd.concat(frames).assign(arm=arm, eval_task="t")


def replication(rng, seeds: int, noise: float, tokens: np.ndarray) -> dict[str, float]:
    """One replication: a baseline arm (coverage of A, B, C_mid; identified), an arm with the identical true curve
    and one 5 points higher (their verdicts against the baseline), and an arm whose C_mid is 2.5x the budget
    (identified)."""
    curves = pd.concat(
        [
            draw(rng, "base", seeds, noise, tokens),
            draw(rng, "same", seeds, noise, tokens),
            draw(rng, "higher", seeds, noise, tokens, a=A + 0.05),
            draw(rng, "rising", seeds, noise, tokens, c_mid=2.5 * BUDGET),
        ]
    )
    fits, replicates = compute_fits(curves)
    verdicts = compare_fits(fits, replicates, [("same", "base"), ("higher", "base")]).set_index("arm")["verdict"]
    fit = fits.set_index("arm")
    base = fit.loc["base"]
    out = {
        f"cover {name}": float(base[f"{column}_low"] <= truth <= base[f"{column}_high"])
        for name, column, truth in (("A", "asymptote", A), ("B", "efficiency", B), ("C_mid", "midpoint", C_MID))
    }
    out["identified"] = float(base["asymptote_identified"])
    out["higher/lower (identical)"] = float(verdicts["same"] in ("higher asymptote", "lower asymptote"))
    out["sooner/later (identical)"] = float(verdicts["same"].startswith("same asymptote, "))
    out["higher (A +5 pts)"] = float(verdicts["higher"] == "higher asymptote")
    out["identified, C_mid 2.5x budget"] = float(fit.loc["rising", "asymptote_identified"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cadence", choices=("all", *REGIMES), default="all", help="which regimes to run")
    args = parser.parse_args()
    rng, start = np.random.default_rng(args.seed), time.perf_counter()
    print(f"{args.reps} replications; 95% intervals; true A {A}, B {B}, C_mid {C_MID:,.0f}, budget {BUDGET:,.0f}")
    print("| cadence | seeds | eval sd | " + " | ".join(COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    regimes = [r for name, rs in REGIMES.items() if args.cadence in ("all", name) for r in rs]
    for cadence, seeds, noise in regimes:
        shares = pd.DataFrame([replication(rng, seeds, noise, CADENCES[cadence]) for _ in range(args.reps)]).mean()
        print(f"| {cadence} | {seeds} | {noise} | " + " | ".join(f"{100 * shares[c]:.1f}%" for c in COLUMNS) + " |")
    se = 100 * np.sqrt(0.05 * 0.95 / args.reps)
    print(f"({time.perf_counter() - start:.0f} s; Monte Carlo standard error of a 5% rate: {se:.1f}%)")


if __name__ == "__main__":
    main()
