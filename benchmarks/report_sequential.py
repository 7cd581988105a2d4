"""Seeds until decided: the group-sequential design's error rates, and the compute it saves on the claims testbed.

    python benchmarks/report_sequential.py [--reps 2000] [--seed 0] [--parts 1,2,3,4]

Everything goes through the package: each look's interval is `benchctl.report.stats.crossed_estimate` (the
interval `claims.seed_effect` computes for an absolute effect; one unit per seed, so the paired t on per-seed
values, as for a training metric) at the look's adjusted confidence (`benchctl.report.sequential.SequentialDesign.
confidences`, the Lan-DeMets O'Brien-Fleming boundary), its verdict `benchctl.report.claims.verdict`, and a claim
stops at the first look where `sequential.is_decided`. Data: per-seed paired differences d_s ~ N(delta, sigma^2),
independent across seeds (our own generator).

Part 1, error rates (`reps` per regime, Monte Carlo se): for designs (first wave, max seeds, wave) and effects
delta / sigma, a `greater` claim with a stated effect e = delta + 1 sigma:
  level     P(the reported interval excludes 0 | delta = 0): a "holds" or "does not hold" made on no effect;
  cover     P(delta inside the interval of the reported look: the deciding look, else the last);
  cover_all P(delta inside the intervals of every look up to max seeds, as if the claim never stopped): the repeated
            intervals' simultaneous coverage, which bounds the error of any verdict read off them;
  level_plain the level for the same claim without a stated effect (only holds / does not hold decide);
  excl_err  P("paper's effect excluded" | delta = e0) with e0 = e, the stated effect itself (the error of
            an exclusion; one-sided, target <= 2.5%).
Part 2, compute on the testbed (a simulation on the parameters measured by `make claims`, examples/claims/README.md:
each tested claim's effect and seed-level sd, sd = CI half-width * sqrt(4) / t(0.975, 3) from the four-seed table):
per design the expected decided claims and cells (an arm runs as long as one of its claims is undecided; the
baseline grpo as long as any arm compared with it), the fixed designs at 3..16 seeds, and the fixed design of equal
power (the seeds, linear between whole seeds, deciding as many claims in expectation) with its core-hours.
Part 3, the effect at the deciding look (issue 41 item 9): per design and delta / sigma, a `greater` claim without a
stated effect; for the claims decided at each look, the mean of the printed effect (the look's mean), of the
conditional bias-adjusted estimate and of the median-unbiased estimate (`benchctl.report.stagewise`), each in sd
units with its Monte Carlo se; and over all stops P(median-unbiased > delta) (1/2 when median-unbiased).
Part 4, skewed per-seed values (issue 41 item 10): the level (0 excluded when delta = 0, claim without a stated
effect) of the sequential design with the normal and the skewed boundary (`SequentialDesign.shape`) and of the
fixed t-test at max seeds, for normal, exponential (skewness 2), gamma(1/2) (skewness 2.8) and lognormal(0, 1)
(skewness 6.2) seeds centred at 0; and the power at delta = sigma for normal seeds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

from benchctl.report.claims import Claim, verdict
from benchctl.report.sequential import SequentialDesign, is_decided, t_boundary
from benchctl.report.stagewise import stagewise_estimate
from benchctl.report.stats import crossed_estimate

DESIGNS = ((4, 8, 2), (4, 10, 2), (3, 9, 3), (4, 12, 4))  # (first-wave seeds, max seeds, wave)
EFFECTS = (0.0, 0.5, 1.0, 2.0)  # delta / sigma
CELL_SECONDS = {"oar_g": 224.0, "oar_p": 260.0}  # README "Cost": side by side; every other arm ~185 s
GRPO_LIKE = 185.0


def run_claim(d: np.ndarray, design: SequentialDesign, direction: str, margin: float, stated: float | None):
    """One claim through the looks on per-seed differences d (max_seeds,): (verdict, look index, low, high, every
    look's (low, high))."""
    intervals, looks, confidences = [], design.looks(), design.confidences()
    for k in range(len(looks)):  # every look's interval, as if the claim ran on to max seeds (cover_all)
        est = crossed_estimate(d[None, : len(looks[k])], confidences[k], "fixed")
        intervals.append((est.low, est.high))
    for k, (low, high) in enumerate(intervals):
        found = verdict(direction, low, high, len(looks[k]), margin, stated)
        if is_decided(found) or k == len(looks) - 1:
            return found, k, low, high, intervals


def fixed_claim(d: np.ndarray, n: int, direction: str, margin: float, stated: float | None) -> str:
    est = crossed_estimate(d[None, :n], 0.95, "fixed")
    return verdict(direction, est.low, est.high, n, margin, stated)


def _rate(x) -> str:
    x = np.asarray(x, float)
    return f"{100 * x.mean():5.1f}% ({100 * x.std(ddof=1) / np.sqrt(len(x)):.1f})"


def error_rates(reps: int, rng: np.random.Generator) -> None:
    print(f"## Part 1: level and coverage, {reps} reps per regime (Monte Carlo se in brackets)")
    print("design (first,max,wave) | delta/sigma | level (0 excluded) | level_plain | cover (reported) | cover_all | "
          "excl_err (delta = e) | mean seeds | decided")  # fmt: skip
    for first, top, wave in DESIGNS:
        design = SequentialDesign(tuple(range(1, first + 1)), top, wave)
        for delta in EFFECTS:
            stated = delta + 1.0
            out = {"exclude0": [], "plain": [], "cover": [], "cover_all": [], "excl": [], "seeds": [], "decided": []}
            for _ in range(reps):
                d = rng.normal(delta, 1.0, top)
                found, k, low, high, intervals = run_claim(d, design, "greater", 0.0, stated)
                out["exclude0"].append(low > 0 or high <= 0)
                *_, p_low, p_high, _ = run_claim(d, design, "greater", 0.0, None)
                out["plain"].append(p_low > 0 or p_high <= 0)
                out["cover"].append(low <= delta <= high)
                out["cover_all"].append(all(lo <= delta <= hi for lo, hi in intervals))
                out["seeds"].append(len(design.looks()[k]))
                out["decided"].append(is_decided(found))
                found_e, *_ = run_claim(rng.normal(stated, 1.0, top), design, "greater", 0.0, stated)
                out["excl"].append(found_e == "paper's effect excluded")
            level, plain = (_rate(out["exclude0"]), _rate(out["plain"])) if delta == 0 else ("-", "-")
            print(f"({first},{top},{wave}) | {delta:.1f} | {level} | {plain} | {_rate(out['cover'])} | "
                  f"{_rate(out['cover_all'])} | {_rate(out['excl'])} | {np.mean(out['seeds']):.2f} | "
                  f"{_rate(out['decided'])}")  # fmt: skip


# ---- part 2: the testbed ------------------------------------------------------------------------------------

# (id, arm, baseline, direction, effect, CI half-width at 4 seeds, margin, stated effect, requires); points of
# pass@k (AVSPO's acr/all: percent change), examples/claims/README.md, "What `make claims` found".
TESTBED = (
    ("hadw_beats_grpo", "ha_dw", "grpo", "greater", -0.3, 0.5, 0.0, 2.2, None),
    ("agrae_pass1", "a_grae", "grpo", "greater", -1.1, 0.4, 0.0, 1.0, None),
    ("agrae_pass8", "a_grae", "grpo", "greater", -0.7, 2.1, 0.0, 1.1, None),
    ("avspo_acr_lower", "avspo", "grpo", "less", 0.4, 0.4, 0.0, 58.0, None),
    ("avspo_beats_grpo", "avspo", "grpo", "greater", -0.6, 0.7, 0.0, 4.0, None),
    ("oar_g_beats_grpo", "oar_g", "grpo", "greater", -0.1, 0.95, 0.0, None, None),
    ("oar_p_beats_grpo", "oar_p", "grpo", "greater", -1.2, 1.4, 0.0, None, None),
    ("oar_p_matches_oar_g", "oar_p", "oar_g", "at_least", -1.1, 1.8, 2.0, None, "oar_g_beats_grpo"),
    ("oar_g_matches_oar_p", "oar_g", "oar_p", "at_least", 1.1, 1.8, 2.0, None, "oar_p_beats_grpo"),
    ("dgpo_beats_grpo", "dgpo", "grpo", "greater", 0.1, 0.55, 0.0, 2.18, None),
)
ARMS = ("grpo", "ha_dw", "a_grae", "avspo", "dgpo", "oar_g", "oar_p")


def _seed_sd(half_width: float) -> float:
    return half_width * 2.0 / float(sps.t.ppf(0.975, 3))


def testbed_rep(rng, design: SequentialDesign | None, fixed_n: int = 0) -> tuple[int, dict[str, int]]:
    """One replication of the testbed's tested claims: (decided claims, seeds per arm)."""
    top = design.max_seeds if design else fixed_n
    result: dict[str, tuple[str, int]] = {}  # claim -> (verdict, seeds used)
    for cid, _arm, _base, direction, effect, hw, margin, stated, _req in TESTBED:
        d = rng.normal(effect, _seed_sd(hw), top)
        if design is None:
            result[cid] = (fixed_claim(d, fixed_n, direction, margin, stated), fixed_n)
        else:
            found, k, *_ = run_claim(d, design, direction, margin, stated)
            result[cid] = (found, len(design.looks()[k]))
    decided, seeds = 0, dict.fromkeys(ARMS, 0)
    for cid, arm, base, *_rest, req in TESTBED:
        found, n = result[cid]
        if req is not None:  # premise rule: decided when the premise is decided and not holds, else own
            p_found, p_n = result[req]
            done = is_decided(p_found) and (p_found != "holds" or is_decided(found))
            n = p_n if is_decided(p_found) and p_found != "holds" else max(n, p_n)
        else:
            done = is_decided(found)
        decided += done
        seeds[arm], seeds[base] = max(seeds[arm], n), max(seeds[base], n)
    if design is None:
        seeds = dict.fromkeys(ARMS, fixed_n)
    return decided, seeds


def _cost(seeds: dict[str, int]) -> tuple[int, float]:
    cells = sum(seeds.values())
    return cells, sum(n * CELL_SECONDS.get(arm, GRPO_LIKE) for arm, n in seeds.items()) / 3600.0


TESTBED_DESIGNS = ((3, 4, 1), (3, 5, 1), (4, 6, 2), (4, 8, 2), (4, 10, 2), (4, 12, 4))


def equal_power_seeds(fixed: dict[int, tuple[float, int, float]], decided: float) -> float | None:
    """The fixed design's seeds (linear between whole seeds) deciding `decided` claims in expectation."""
    ns = sorted(fixed)
    for lo, hi in zip(ns, ns[1:]):
        if fixed[lo][0] <= decided <= fixed[hi][0]:
            return lo + (decided - fixed[lo][0]) / (fixed[hi][0] - fixed[lo][0])
    return None


def testbed_compute(reps: int, rng: np.random.Generator) -> None:
    print(f"\n## Part 2: the claims testbed (simulation on make claims' measured effects and seed spread), {reps} reps")
    print("design | decided claims of 10 (mean, se) | cells (mean) | core-hours (mean)")
    fixed = {}
    for n in range(3, 17):
        runs = [testbed_rep(rng, None, n) for _ in range(reps)]
        dec = np.array([r[0] for r in runs], float)
        cells, hours = _cost(runs[0][1])
        fixed[n] = (dec.mean(), cells, hours)
        print(f"fixed {n} seeds | {dec.mean():.2f} ({dec.std(ddof=1) / np.sqrt(reps):.2f}) | {cells} | {hours:.2f}")
    per_seed = fixed[4][2] / 4  # core-hours of one seed of every arm
    for first, top, wave in TESTBED_DESIGNS:
        design = SequentialDesign(tuple(range(1, first + 1)), top, wave)
        runs = [testbed_rep(rng, design) for _ in range(reps)]
        dec = np.array([r[0] for r in runs], float)
        costs = np.array([_cost(r[1]) for r in runs])
        n_eq = equal_power_seeds(fixed, dec.mean())
        equal = "beyond 16 seeds" if n_eq is None else (
            f"{n_eq:.1f} seeds, {n_eq * per_seed:.2f} core-hours; saved "
            f"{100 * (1 - costs[:, 1].mean() / (n_eq * per_seed)):.0f}%")  # fmt: skip
        print(f"sequential ({first},{top},{wave}) | {dec.mean():.2f} ({dec.std(ddof=1) / np.sqrt(reps):.2f}) | "
              f"{costs[:, 0].mean():.1f} | {costs[:, 1].mean():.2f} | equal-power fixed: {equal}")  # fmt: skip


# ---- part 3: the effect at the deciding look; part 4: skewed seeds ------------------------------------------


def adjusted_effects(reps: int, rng: np.random.Generator) -> None:
    print(f"\n## Part 3: the effect at the deciding look, {reps} reps per regime (in sd units, Monte Carlo se)")
    print("design | delta/sigma | look | share stopped there | printed | bias-adjusted | median-unbiased")
    claim = Claim(paper="-", claim="-", arm="a", baseline="b", metric="m")
    for first, top, wave in ((4, 8, 2), (3, 9, 3)):
        design = SequentialDesign(tuple(range(1, first + 1)), top, wave)
        seeds = tuple(len(s) for s in design.looks())
        crit = t_boundary(seeds, top, design.alpha)
        for delta in (0.5, 1.0):
            rows = []
            for _ in range(reps):
                _found, k, low, high, _ = run_claim(rng.normal(delta, 1.0, top), design, "greater", 0.0, None)
                effect = 0.5 * (low + high)  # the paired t interval is symmetric about the look's mean
                row = {"look": k + 1, "effect": effect, "low": low, "high": high}
                rows.append((k, effect, *stagewise_estimate(row, claim, seeds, crit, design.alpha)))
            a = np.array(rows, float)
            for k in range(len(seeds)):
                part = a[a[:, 0] == k]
                if len(part) < 2:
                    continue
                cells = " | ".join(_mean_se(part[:, j]) for j in (1, 3, 2))
                print(f"({first},{top},{wave}) | {delta:.1f} | {k + 1} | {len(part) / reps:.2f} | {cells}")
            print(f"({first},{top},{wave}) | {delta:.1f} | all | 1.00 | {_mean_se(a[:, 1])} | {_mean_se(a[:, 3])} | "
                  f"{_mean_se(a[:, 2])}; P(median-unbiased > delta) {_rate(a[:, 2] > delta)}")  # fmt: skip


def _mean_se(x) -> str:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return f"{x.mean():+.3f} ({x.std(ddof=1) / np.sqrt(len(x)):.3f})"


SKEWED = {
    "normal": lambda rng, size: rng.standard_normal(size),
    "exponential": lambda rng, size: rng.standard_exponential(size) - 1.0,
    "gamma(1/2)": lambda rng, size: (rng.gamma(0.5, 1.0, size) - 0.5) / np.sqrt(0.5),
    "lognormal(0,1)": lambda rng, size: (np.exp(rng.standard_normal(size)) - np.exp(0.5)) / np.sqrt(np.e**2 - np.e),
}


def skewed_level(reps: int, rng: np.random.Generator) -> None:
    print(f"\n## Part 4: skewed per-seed values, {reps} reps per regime: level (power for normal, delta = sigma)")
    print("design | seeds | sequential, normal boundary | sequential, skewed boundary | fixed t at max seeds")
    for first, top, wave in DESIGNS:
        designs = [SequentialDesign(tuple(range(1, first + 1)), top, wave, shape=s) for s in ("normal", "skewed")]
        for name, draw in [*SKEWED.items(), ("normal, power", None)]:
            out = {"normal": [], "skewed": [], "fixed": []}
            for _ in range(reps):
                d = draw(rng, top) if draw is not None else rng.standard_normal(top) + 1.0
                for design in designs:
                    *_, low, high, _ = run_claim(d, design, "greater", 0.0, None)
                    out[design.shape].append(low > 0 or high <= 0)
                est = crossed_estimate(d[None, :], 0.95, "fixed")
                out["fixed"].append(est.low > 0 or est.high <= 0)
            print(f"({first},{top},{wave}) | {name} | {_rate(out['normal'])} | {_rate(out['skewed'])} | "
                  f"{_rate(out['fixed'])}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", default="1,2", help="which parts to run, e.g. 3,4")
    args = parser.parse_args()
    parts = {int(p) for p in args.parts.split(",")}
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for first, top, wave in DESIGNS:
        design = SequentialDesign(tuple(range(1, first + 1)), top, wave)
        print(f"design ({first},{top},{wave}): looks at {[len(s) for s in design.looks()]} seeds, adjusted "
              f"confidence {[round(100 * c, 2) for c in design.confidences()]}%")  # fmt: skip
    for part, run in ((1, error_rates), (2, testbed_compute), (3, adjusted_effects), (4, skewed_level)):
        if part in parts:
            run(args.reps, rng)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
