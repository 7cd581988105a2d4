"""Validate `benchctl plan` by simulation (issue 41, item 2; docs/report.md, "Planning a design").

For each regime and pilot size: draw a pilot (3, 5 or 10 seeds x 100 questions x 8 samples; 20 pilots a row) from
a known generator, estimate its variance components with the advisor's own estimator (`design.components_of`,
optionally with `--seed-bound 0.75`), let the advisor pick the cheapest design of a grid that reaches the target mde
(cost of a cell: 1 + questions x samples / 2000, the tiny model's shape), then simulate that design (reps / 20 times
a pilot) from the same generator and read what the report would print (`stats.crossed_estimate` and
`stats.minimum_detectable_effect` at alpha / m, m = 2 comparisons, as `_holm` does) and how often the test rejects
(p < alpha / m) when the true difference equals the predicted mde.  The "oracle" row predicts from the generator's
components (a 200-seed x 2,000-question pilot for the binomial regime), so it separates the prediction's own error
from the pilot's.  The generators use numpy only, not the report's code.

Regimes (differences D = arm - baseline, points are percentage points):
* gaussian: D = delta + seed (sd 2) + problem (arm x problem, sd 6) + seed x problem (sd 8) + sampling noise
  (per-sample sd 45, over n samples);
* binomial: per-question logits (difficulty sd 1.5 around -0.5), arm x problem sd 0.3, seed sd 0.15 (both arms share
  nothing), run x problem sd 0.4; each cell's pass@1 is c / n of n Bernoulli samples; delta shifts the arm's
  probabilities additively (clipped to [0, 1]);
* seed-heavy: the gaussian regime with seed sd 6: few pilot seeds estimate it badly;
* paired: paired sampling streams, as a seed's evaluation draws them in both arms: per-question logits (difficulty
  sd 1.5 around -1.5), the baseline's seed sd 0.15 and run x problem sd 0.4, the arm = the baseline's logit + arm x
  problem sd 0.2 + seed sd 0.15 + run x problem sd 0.4 (two similar policies); both arms' verdicts are u < rate
  with the same uniforms u (common random numbers), so D's sampling variance per sample is |a - b| - (a - b)**2,
  far below the arms' summed a(1 - a) + b(1 - b): MS_error / summed variance 0.2-0.35 at 3 x 100 x 8, as in the
  tiny pilot (0.22 and 0.41; docs/report.md).
  Its "oracle" row: the generator's exact components (seed and arm x problem from the shift sds through the
  logistic slope, seed x problem and sampling from a 200-seed x 2,000-question draw of the true rates).

    PYTHONPATH=. .venv/bin/python benchmarks/design_simulation.py --reps 400
    PYTHONPATH=. .venv/bin/python benchmarks/design_simulation.py --reps 200 --regimes paired
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchctl.report.design import Components, components_of, predicted_mde
from benchctl.report.stats import POWER, crossed_estimate, minimum_detectable_effect

ALPHA, M = 0.05, 2
LEVEL = ALPHA / M
GRID = [
    (s, q, n) for s in (3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32) for q in (100, 200, 500, 1000) for n in (1, 2, 4, 8, 16)
]


def gaussian(rng, seeds, questions, samples, delta, seed_sd=0.02):
    """(D (P, S), cell sampling variance (P, S), n (P, S)) of the gaussian regime (fractions)."""
    s = rng.normal(0, seed_sd, seeds)
    p = rng.normal(0, 0.06, questions)
    e = rng.normal(0, 0.08, (questions, seeds)) + rng.normal(0, 0.45 / np.sqrt(samples), (questions, seeds))
    var = np.full((questions, seeds), 0.45**2 / samples)
    return delta + s[None, :] + p[:, None] + e, var, np.full((questions, seeds), float(samples))


BINOMIAL_NULL = 0.0  # E[arm - baseline] the logistic arm x problem term leaves under the null (set in main)


def binomial(rng, seeds, questions, samples, delta):
    """(D, cell sampling variance a(1 - a) / (n - 1) of both arms, n) of the binomial regime."""
    diff = rng.normal(-0.5, 1.5, questions)[:, None]  # (P, 1)
    arm_x = rng.normal(0, 0.3, questions)[:, None]
    logit_b = diff + rng.normal(0, 0.15, seeds)[None, :] + rng.normal(0, 0.4, (questions, seeds))
    logit_a = diff + arm_x + rng.normal(0, 0.15, seeds)[None, :] + rng.normal(0, 0.4, (questions, seeds))
    pb = 1 / (1 + np.exp(-logit_b))
    pa = 1 / (1 + np.exp(-logit_a))
    shift = delta - BINOMIAL_NULL  # the null's mean difference removed; the shift stays inside [0, 1]
    pa = pa + shift * ((1 - pa) / (1 - pa).mean() if shift > 0 else pa / pa.mean())
    a, b = rng.binomial(samples, pa) / samples, rng.binomial(samples, pb) / samples
    var = (a * (1 - a) + b * (1 - b)) / max(samples - 1, 1)
    return a - b, var, np.full(a.shape, float(samples))


PAIRED_NULL = 0.0  # E[arm - baseline] of the paired regime's rates under the null (set in main)


def paired_rates(rng, seeds, questions):
    """(arm, baseline) true pass@1 rates (P, S) of the paired regime: similar policies, logistic."""
    logit_b = (
        rng.normal(-1.5, 1.5, questions)[:, None]
        + rng.normal(0, 0.15, seeds)[None, :]
        + rng.normal(0, 0.4, (questions, seeds))
    )
    arm_x, seed_x = rng.normal(0, 0.2, questions)[:, None], rng.normal(0, 0.15, seeds)[None, :]
    shift = arm_x + seed_x + rng.normal(0, 0.4, logit_b.shape)  # (P, S)
    return 1 / (1 + np.exp(-(logit_b + shift))), 1 / (1 + np.exp(-logit_b))


def paired(rng, seeds, questions, samples, delta):
    """(D, cell sampling variance a(1 - a) / (n - 1) of both arms, n) of the paired regime: one stream of uniforms
    per seed and question, shared by the two arms."""
    pa, pb = paired_rates(rng, seeds, questions)
    shift = delta - PAIRED_NULL
    pa = pa + shift * ((1 - pa) / (1 - pa).mean() if shift > 0 else pa / pa.mean())
    u = rng.uniform(size=(questions, seeds, samples))  # (P, S, n): common random numbers
    a, b = (u < pa[..., None]).mean(-1), (u < pb[..., None]).mean(-1)  # (P, S)
    var = (a * (1 - a) + b * (1 - b)) / max(samples - 1, 1)
    return a - b, var, np.full(a.shape, float(samples))


def paired_truth() -> Components:
    """The paired regime's components, from a large draw of its true rates (no sampling): seed and arm x problem
    the variances of the rate difference's seed and problem means, seed x problem its double-centred residual,
    sampling the mean of |a - b| - (a - b)**2.  Also sets PAIRED_NULL."""
    global PAIRED_NULL
    pa, pb = paired_rates(np.random.default_rng(97), 200, 2000)
    d = pa - pb  # (P, S)
    PAIRED_NULL = float(d.mean())
    seed_m, prob_m = d.mean(axis=0), d.mean(axis=1)
    resid = d - seed_m[None, :] - prob_m[:, None] + d.mean()
    parts = (seed_m.var(ddof=1), prob_m.var(ddof=1), resid.var(), float((np.abs(d) - d**2).mean()))
    return Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, *(float(x) for x in parts))


def components(gen, rng, seeds, questions, samples, bound=0.0) -> Components:
    d, var, n = gen(rng, seeds, questions, samples, 0.0)
    parts = components_of(d, var if samples > 1 else None, n, bound)
    return Components("arm", "base", "t", 1, seeds, questions, float(samples), float(d.mean()), *parts)


def recommend(c: Components, target: float):
    """The cheapest grid design whose predicted mde <= target (cell cost 1 + q n / 2000), with that mde."""
    for _cost, s, q, n in sorted((s * (1 + q * n / 2000), s, q, n) for s, q, n in GRID):
        mde = predicted_mde(c, s, q, n, LEVEL)
        if mde <= target:
            return (s, q, n), mde
    return None, np.nan


def printed(gen, rng, design, delta):
    """(printed mde, rejected) of one simulated run of `design` with true difference delta."""
    s, q, n = design
    d, _, _ = gen(rng, s, q, n, delta)
    est = crossed_estimate(d, 0.95)
    mde = minimum_detectable_effect(est.se, est.df, LEVEL, POWER, est.seed_share, s - 1)
    return mde, est.p_value < LEVEL


def row(name, gen, pilot_seeds, reps, target, rng, oracle=None, bound=0.0, pilots=20):
    """One table row: `pilots` pilot draws (1 with an oracle), each recommending a design simulated reps / pilots
    times at the null (printed mde / predicted) and at a true difference equal to its predicted mde (power)."""
    ratios, hits, designs, predicted = [], [], [], []
    for _ in range(1 if oracle else pilots):
        c = oracle or components(gen, rng, pilot_seeds, 100, 8, bound)
        design, mde = recommend(c, target)
        if design is None:
            continue
        designs.append(design)
        predicted.append(mde)
        each = max(1, reps // (1 if oracle else pilots))
        ratios += [printed(gen, rng, design, 0.0)[0] / mde for _ in range(each)]
        hits += [printed(gen, rng, design, mde)[1] for _ in range(each)]
    label = "oracle" if oracle else f"{pilot_seeds}" + (f", bound {bound:g}" if bound else "") + f" ({pilots} pilots)"
    if not designs:
        return f"| {name} | {label} | none within the grid | | | |"
    power, q25, q50, q75 = np.mean(hits), *np.percentile(ratios, [25, 50, 75])
    seeds = sorted(d[0] for d in designs)
    shown = f"{designs[0][0]} x {designs[0][1]} x {designs[0][2]}" if oracle else f"seeds {seeds[0]}-{seeds[-1]}"
    return (
        f"| {name} | {label} | {shown} | {100 * np.median(predicted):.2f} | {q50 - 1:+.1%} ({q25:.2f}-{q75:.2f}) | "
        f"{power:.1%} ({np.sqrt(power * (1 - power) / len(hits)):.1%}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--target", type=float, default=0.03, help="target mde (fraction)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regimes", default="gaussian,binomial,seed-heavy,paired", help="comma list to run")
    parser.add_argument("--pilots", default="3:0,5:0,10:0,3:0.75,5:0.75", help="pilot seeds:seed bound, comma list")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| regime | pilot seeds | recommended (seeds x questions x samples) | predicted mde (median) | printed mde"
          " / predicted - 1, median (IQR of the ratio) | power at the predicted mde (MC se) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    seed_heavy = lambda r, s, q, n, d: gaussian(r, s, q, n, d, seed_sd=0.06)  # noqa: E731
    truth = {
        "gaussian": Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, 0.02**2, 0.06**2, 0.08**2, 0.45**2),
        "seed-heavy": Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, 0.06**2, 0.06**2, 0.08**2, 0.45**2),
        "binomial": components(binomial, np.random.default_rng(99), 200, 2000, 8),
        "paired": paired_truth(),
    }
    global BINOMIAL_NULL
    x = np.random.default_rng(98).normal(size=4_000_000)  # the logits' spread with and without arm x problem
    BINOMIAL_NULL = float(
        np.mean(1 / (1 + np.exp(0.5 - x * np.sqrt(1.5**2 + 0.3**2 + 0.15**2 + 0.4**2))))
        - np.mean(1 / (1 + np.exp(0.5 - x * np.sqrt(1.5**2 + 0.15**2 + 0.4**2))))
    )
    gens = {"gaussian": gaussian, "binomial": binomial, "seed-heavy": seed_heavy, "paired": paired}
    pilots = [(int(x.split(":")[0]), float(x.split(":")[1])) for x in args.pilots.split(",")]
    for name in args.regimes.split(","):
        start = time.perf_counter()
        print(row(name, gens[name], 3, args.reps, args.target, rng, oracle=truth[name]), flush=True)
        for pilot_seeds, bound in pilots:
            print(row(name, gens[name], pilot_seeds, args.reps, args.target, rng, bound=bound), flush=True)
        print(f"<!-- {name}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
