"""The effect printed at a group-sequential claim's deciding look, and its stopping-adjusted estimates, against the
target each one has (issue 41 item 9; docs/report.md, "Seeds until decided").

    PYTHONPATH=. .venv/bin/python benchmarks/design_stagewise.py [--reps 1000] [--cond-reps 200] [--first 100]

Generator (numpy, our own): per-seed paired differences d_s ~ N(delta, 1), a `greater` claim without a stated
effect, the designs' looks; each look's interval is `stats.crossed_estimate` at `SequentialDesign.confidences`
(as `claims.seed_effect` computes it for one value per run), the verdict `claims.verdict`, the stop at the first
decided look (`sequential.is_decided`), and the estimates `stagewise.stagewise_estimate`, as the report computes
them (the per-seed sd plugged in at the deciding look).  Two targets, measured apart:

* unconditional (all stops pooled, `--reps` claims a regime): a median-unbiased estimate has P(estimate > delta)
  = 1/2 and median - delta = 0; this is the stagewise median-unbiased estimate's target (Jennison & Turnbull 2000,
  §8.4; Whitehead 1997, §5.3);
* conditional on the deciding look (`--cond-reps` claims a regime, and `--first` claims drawn until they stop at
  look 1): the mean of each estimate among the claims decided at that look against delta; the conditional
  bias-adjusted estimate's target (Troendle & Yu 1999).  The median-unbiased estimate equals the look's mean at
  look 1 by construction (nothing lies above a first-look outcome in the stagewise ordering but larger means).

"true sd": the same estimates with the per-seed sd set to the generator's (1) instead of the deciding look's
estimate: what the plug-in costs.  Monte Carlo se in brackets (binomial for rates, sd / sqrt(n) for means; the
median's from the normal approximation, 1.253 sd / sqrt(n)).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchctl.report import stagewise
from benchctl.report.claims import Claim, verdict
from benchctl.report.sequential import SequentialDesign, is_decided, t_boundary
from benchctl.report.stats import crossed_estimate

CLAIM = Claim(paper="-", claim="-", arm="a", baseline="b", metric="m")
REGIMES = ((4, 8, 2, 1.0), (4, 8, 2, 0.5), (3, 9, 3, 1.0))  # first wave, max seeds, wave, delta / sigma


def decide(d: np.ndarray, design: SequentialDesign):
    """(look index, row as sequential_claims makes it) of one claim on per-seed differences d (max seeds,)."""
    looks, conf = design.looks(), design.confidences()
    for k in range(len(looks)):
        est = crossed_estimate(d[None, : len(looks[k])], conf[k], "fixed")
        if is_decided(verdict("greater", est.low, est.high, len(looks[k]))) or k == len(looks) - 1:
            return k, {"look": k + 1, "effect": est.mean, "low": est.low, "high": est.high}


def true_sd(row: dict, k: int, seeds, crit, adjusted: bool = True) -> tuple[float, float]:
    """(median-unbiased, bias-adjusted: NaN unless `adjusted`) of `row` with the per-seed sd known (1), else as
    `stagewise_estimate`."""
    se, u_star, looks = 1.0 / np.sqrt(seeds[k]), float(row["effect"]), (seeds, crit)
    way = int(stagewise.exits("greater", 0.0, None, row["low"], row["high"]))
    p = lambda mu: stagewise.p_function(mu, 1.0, (k, u_star, way), looks, CLAIM) - 0.5  # noqa: E731
    c = lambda mu: stagewise.conditional_mean(mu, 1.0, (k, way), looks, CLAIM) - u_star  # noqa: E731
    return stagewise._solve_increasing(p, u_star, se), stagewise._solve(c, u_star, se) if adjusted else np.nan


def estimates(rng, first, top, wave, delta, reps, adjusted=True, until_look=None):
    """(reps, 6): look index, printed, median-unbiased, bias-adjusted, and both with the true sd; `until_look`:
    draw until `reps` claims stop at that look index (the others are discarded)."""
    design = SequentialDesign(tuple(range(1, first + 1)), top, wave)
    seeds = tuple(len(s) for s in design.looks())
    crit = t_boundary(seeds, top, design.alpha)
    out = []
    while len(out) < reps:
        k, row = decide(rng.normal(delta, 1.0, top), design)
        if until_look is not None and k != until_look:
            continue
        if adjusted:
            median, adj = stagewise.stagewise_estimate(row, CLAIM, seeds, crit, design.alpha)
            out.append((k, row["effect"], median, adj, *true_sd(row, k, seeds, crit)))
        else:  # the median-unbiased estimates only (fast: `_solve_increasing`)
            sd = (row["high"] - row["low"]) / (2 * crit[k]) * np.sqrt(seeds[k])
            way = int(stagewise.exits("greater", 0.0, None, row["low"], row["high"]))
            observed, looks = (k, row["effect"], way), (seeds, crit)
            g = lambda mu, sd=sd, o=observed, x=looks: stagewise.p_function(mu, sd, o, x, CLAIM) - 0.5  # noqa: E731
            median = stagewise._solve_increasing(g, row["effect"], sd / np.sqrt(seeds[k]))
            out.append((k, row["effect"], median, np.nan, *true_sd(row, k, seeds, crit, adjusted=False)))
    return np.array(out, float)


def _rate(x) -> str:
    x = np.asarray(x, float)
    return f"{100 * x.mean():.1f}% ({100 * np.sqrt(x.mean() * (1 - x.mean()) / len(x)):.1f})"


def _mean(x) -> str:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return f"{x.mean():+.2f} ({x.std(ddof=1) / np.sqrt(len(x)):.2f})" if len(x) > 1 else "-"


def unconditional(rng, reps: int) -> None:
    print(f"\n## Unconditional: all stops pooled, {reps} claims a regime")
    print("| design | delta / sigma | P(> delta): printed | median-unbiased | median-unbiased, true sd | "
          "median - delta: printed | median-unbiased |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for first, top, wave, delta in REGIMES:
        a = estimates(rng, first, top, wave, delta, reps, adjusted=False)
        se = 1.253 * np.nanstd(a[:, 1], ddof=1) / np.sqrt(reps)
        med = [f"{np.nanmedian(a[:, j]) - delta:+.3f} ({se:.3f})" for j in (1, 2)]
        print(f"| {first}, {top}, {wave} | {delta:g} | {_rate(a[:, 1] > delta)} | {_rate(a[:, 2] > delta)} | "
              f"{_rate(a[:, 4] > delta)} | {med[0]} | {med[1]} |", flush=True)  # fmt: skip


def conditional(rng, reps: int, first_reps: int) -> None:
    print(f"\n## Conditional on the deciding look: {reps} claims a regime; {first_reps} first-look stops of 4, 8, 2")
    print("| design | delta / sigma | decided at | share | printed | median-unbiased | bias-adjusted | "
          "median-unbiased, true sd | bias-adjusted, true sd |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for first, top, wave, delta in REGIMES:
        a = estimates(rng, first, top, wave, delta, reps)
        parts = [
            (f"look {k + 1}", a[a[:, 0] == k], f"{np.mean(a[:, 0] == k):.0%}") for k in range(int(a[:, 0].max()) + 1)
        ]
        if first == 4 and delta == 1.0:
            parts.insert(0, ("look 1, drawn", estimates(rng, first, top, wave, delta, first_reps, until_look=0), "-"))
        for name, part, share in [*parts, ("any", a, "100%")]:
            if len(part) > 1:
                cells = " | ".join(_mean(part[:, j]) for j in (1, 2, 3, 4, 5))
                print(f"| {first}, {top}, {wave} | {delta:g} | {name} | {share} | {cells} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="claims a regime, unconditional part")
    parser.add_argument("--cond-reps", type=int, default=200, help="claims a regime, conditional part")
    parser.add_argument("--first", type=int, default=100, help="first-look stops drawn for 4, 8, 2 at delta = sigma")
    parser.add_argument("--parts", default="unconditional,conditional", help="unconditional, conditional, first")
    parser.add_argument("--regimes", default="0,1,2", help="indices into REGIMES, comma list")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    global REGIMES
    REGIMES = tuple(REGIMES[int(i)] for i in args.regimes.split(","))
    rng = np.random.default_rng(args.seed)
    for part in args.parts.split(","):
        start = time.perf_counter()
        if part == "unconditional":
            unconditional(rng, args.reps)
        elif part == "first":  # the first-look stops of 4, 8, 2 at delta = sigma alone (cheap)
            a = estimates(rng, 4, 8, 2, 1.0, args.first, until_look=0)
            print("| 4, 8, 2 | 1 | look 1, drawn | - | " + " | ".join(_mean(a[:, j]) for j in range(1, 6)) + " |")
        else:
            conditional(rng, args.cond_reps, args.first)
        print(f"<!-- {part}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
