"""Seed luck in the choice of a swept setting: bias, level and power of the arm - baseline comparison, measured
through the report's own code (`benchctl.report.tuning.select_settings`, then `benchctl.report.stats.
comparisons_table`, as `benchctl report` calls them).

The arm sweeps 4 learning rates, the baseline runs 1; every run has its own luck (a logit shift shared by its
validation and test scores), every seed a data-order effect shared by all runs of that seed, and every (run,
problem) its own noise; pass@1 is the mean of n = 16 Bernoulli samples on 200 validation and 200 test problems.
Null (`--effect 0`): every setting truly equal, truth 0.  `--effect d`: every setting of the arm is d higher on
the logit scale (validation and test), for the power.  Rules:

* all seeds: each arm's setting chosen on all seeds' validation scores, every seed tested at it (the rule the
  report replaced; the comparison's numbers by `stats.crossed_estimate`, as the report computes them);
* leave-one-seed-out, independent seeds: the report's cross-fit with the per-seed differences taken as
  independent (`crossed_estimate` of the comparison's problems x seeds matrix, the report's variance before the
  jackknife);
* leave-one-seed-out (the report: `comparisons_table`, its variance the delete-one-seed jackknife of the choice);
* held-apart seed 0 (`--tuning-seeds 0`, through `comparisons_table`).

"rejects": the primary comparison's p-value < 0.05 (Holm over a family of one), in the direction of the truth
when there is an effect.  Run: `.venv/bin/python benchmarks/report_tuning_bias.py [--reps 2000] [--seeds 5]
[--effect 0.1] [--arm-settings 1]`.

`--claims`: the same leave-one-seed-out data through `benchctl.report.claims.evaluate_claims` (as `benchctl
report --claims` calls it), an absolute and a relative pass@1 claim "new > grpo" at `--population problems`;
"rejects": the 95% interval excludes no effect (low > 0 or high < 0, the two-sided 5% test), with the seed part
of the variance the plain one (the re-choices left out) and the jackknife of the claim's statistic (the report).
"""

from __future__ import annotations

import argparse
import gc
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd

from benchctl.report.claims import Claim, evaluate_claims
from benchctl.report.config import ReportConfig
from benchctl.report.stats import comparisons_table
from benchctl.report.tuning import select_settings

PROBLEMS, SAMPLES = 200, 16
ARM_LRS, BASE_LRS = (1e-5, 3e-5, 1e-4, 3e-4), (1e-4,)
SD_RUN, SD_SEED, SD_NOISE = 0.25, 0.1, 0.3  # logit scale: run luck, seed (data order), run x problem
CONFIG = ReportConfig(inputs=("simulated",), baseline="grpo")  # the report's defaults: problems, 95%, k = 1
RULES = ("all seeds", "leave-one-seed-out, independent seeds", "leave-one-seed-out (report)", "held-apart seed 0")
CLAIMS = tuple(
    Claim(paper="simulated", claim=f"new beats grpo ({kind})", arm="new", baseline="grpo", relative=relative)
    for kind, relative in (("absolute", False), ("relative", True))
)
CLAIM_RULES = tuple(f"{c.claim}, {how}" for c in CLAIMS for how in ("seeds independent", "jackknife (report)"))


def simulate(rng: np.random.Generator, seeds: int, arm_lrs: tuple = ARM_LRS, effect: float = 0.0):
    """One replication as the report's data: runs (arm, task, seed, lr) and per-problem pass@1 on arith_val and
    arith; the arm's runs `effect` higher on the logit scale."""
    runs = pd.DataFrame(
        [{"arm": arm, "lr": lr, "seed": s} for arm, lrs in (("new", arm_lrs), ("grpo", BASE_LRS)) for lr in lrs
         for s in range(seeds)]
    ).assign(estimator_label=lambda r: r["arm"], task="arith")  # fmt: skip
    runs.insert(0, "run_id", np.arange(len(runs)))
    seed_effect = rng.normal(0.0, SD_SEED, seeds)  # (S,)
    luck = rng.normal(0.0, SD_RUN, len(runs)) + seed_effect[runs["seed"]] + effect * (runs["arm"] == "new")  # (R,)
    frames = []
    for task in ("arith_val", "arith"):
        difficulty = rng.normal(0.0, 1.5, PROBLEMS)  # (P,)
        logit = difficulty + luck.to_numpy()[:, None] + rng.normal(0.0, SD_NOISE, (len(runs), PROBLEMS))  # (R, P)
        value = rng.binomial(SAMPLES, 1 / (1 + np.exp(-logit))) / SAMPLES  # (R, P)
        frames.append(pd.DataFrame({"run_id": np.repeat(runs["run_id"].to_numpy(), PROBLEMS), "eval_task": task,
                                    "k": 1, "value": value.ravel(), "problem_id": np.tile(np.arange(PROBLEMS),
                                    len(runs))}))  # fmt: skip
    return SimpleNamespace(
        runs=runs, problems=pd.concat(frames, ignore_index=True), metrics=pd.DataFrame(),
        eval_curve=pd.DataFrame(), notes=[], group_by=("arm",), arm_column="arm", asked=None,
    )  # fmt: skip


def _primary(data) -> tuple[float, float]:
    """(diff, p) of comparisons_table's primary row (p NaN when the comparison has too few seeds)."""
    row = comparisons_table(data, CONFIG).iloc[0]
    return row["diff"], row["p_value"]


def all_seeds(data) -> tuple[float, float]:
    """The replaced rule: each arm's setting with the best mean validation score over all seeds, all seeds tested
    (then the report's comparison)."""
    val = data.problems[data.problems["eval_task"] == "arith_val"].merge(data.runs)
    best = val.groupby(["arm", "lr"])["value"].mean().groupby("arm").idxmax().map(lambda key: key[1])
    runs = data.runs[data.runs["lr"] == data.runs["arm"].map(best)]
    problems = data.problems[data.problems["run_id"].isin(runs["run_id"]) & (data.problems["eval_task"] == "arith")]
    return _primary(SimpleNamespace(**{**vars(data), "runs": runs, "problems": problems, "notes": []}))


def cross_fit(data) -> list[tuple[float, float]]:
    """`benchctl report`'s path: select_settings, then comparisons_table; once with the seeds taken as independent
    (the re-choices left out: the variance before the jackknife), once as the report does."""
    data = SimpleNamespace(**{**vars(data), "notes": []})  # select_settings filters in place
    select_settings(data, None, CONFIG.baseline)
    return [_primary(SimpleNamespace(**{**vars(data), "refits": None})), _primary(data)]


def held_apart(data) -> tuple[float, float]:
    """The report's option --tuning-seeds 0: seed 0 chooses, the other seeds are tested."""
    data = SimpleNamespace(**{**vars(data), "notes": []})
    select_settings(data, None, CONFIG.baseline, (0,))
    return _primary(data)


def claims_cross_fit(data) -> dict:
    """{CLAIM_RULES name: (effect, rejects)}: `benchctl report --claims`'s path, select_settings then
    evaluate_claims, once with the re-choices left out (the seeds taken as independent), once as the report does."""
    data = SimpleNamespace(**{**vars(data), "notes": []})  # select_settings filters in place
    select_settings(data, None, CONFIG.baseline)
    plain = SimpleNamespace(**{**vars(data), "refits": None, "refit_metrics": None})
    tables = [evaluate_claims(d, list(CLAIMS), CONFIG.confidence, population=CONFIG.population) for d in (plain, data)]
    out = {}
    for i, c in enumerate(CLAIMS):
        for how, table in zip(("seeds independent", "jackknife (report)"), tables):
            row = table.iloc[i]
            tested = np.isfinite(row["low"]) and np.isfinite(row["high"])
            out[f"{c.claim}, {how}"] = (row["effect"], float(row["low"] > 0 or row["high"] < 0) if tested else np.nan)
    return out


def measure_claims(reps: int, seeds: int, arm_settings: int, effect: float) -> dict:
    """{CLAIM_RULES name: (R, 2) array of (effect, rejects)} over `reps` replications (generator seed 0)."""
    rng = np.random.default_rng(0)
    found = {name: [] for name in CLAIM_RULES}
    for _ in range(reps):
        got = claims_cross_fit(simulate(rng, seeds, ARM_LRS[:arm_settings], effect))
        for name in CLAIM_RULES:
            found[name].append(got[name])
    return {name: np.array(rows, dtype=float) for name, rows in found.items()}


def print_claims(found: dict) -> None:
    """One line per claim and variance: mean effect (points, or % for the relative claim), rejection rate, mc se."""
    print(f"{'claim, seed variance':<58} {'effect':>8} {'rejects':>8} {'mc se':>6} {'tested':>7}")
    for name, rows in found.items():
        tested = np.isfinite(rows[:, 1])
        rate = rows[tested, 1].mean() if tested.any() else np.nan
        mc = np.sqrt(rate * (1 - rate) / max(tested.sum(), 1))
        print(f"{name:<58} {rows[:, 0].mean() * 100:>+8.2f} {rate:>8.1%} {mc:>6.1%} {tested.mean():>7.0%}")


def measure(reps: int, seeds: int, arm_settings: int, effect: float, rules: tuple = RULES) -> dict:
    """{rule: (R, 2) array of (diff, p)} over `reps` replications (generator seed 0) for the `rules` asked."""
    rng = np.random.default_rng(0)
    found = {name: [] for name in rules}
    for _ in range(reps):
        data = simulate(rng, seeds, ARM_LRS[:arm_settings], effect)
        got = dict(zip(RULES[1:3], cross_fit(data)))
        if RULES[0] in rules:
            got[RULES[0]] = all_seeds(data)
        if RULES[3] in rules:
            got[RULES[3]] = held_apart(data)
        for name in rules:
            found[name].append(got[name])
    return {name: np.array(rows, dtype=float) for name, rows in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--effect", type=float, default=0.0, help="the arm's logit shift (0: the null)")
    parser.add_argument("--arm-settings", type=int, default=len(ARM_LRS), help="1: no sweep (the test's own level)")
    parser.add_argument("--all-seeds", action="store_true", help="also the replaced rule (choice on all seeds)")
    parser.add_argument("--held-apart", action="store_true", help="also --tuning-seeds 0")
    parser.add_argument("--claims", action="store_true", help="the claims' level instead (evaluate_claims)")
    args = parser.parse_args()
    rules = tuple(r for r, on in zip(RULES, (args.all_seeds, True, True, args.held_apart)) if on)
    gc.freeze()  # the imported modules stay out of the collections statsmodels triggers per comparison
    start = time.perf_counter()
    if args.claims:
        found = measure_claims(args.reps, args.seeds, args.arm_settings, args.effect)
        print(f"arm sweeps {args.arm_settings} settings, baseline {len(BASE_LRS)}; {args.seeds} seeds, {args.reps} "
              f"reps; effect {args.effect} logit; claims at 95%, rejects: the interval excludes 0")  # fmt: skip
        print_claims(found)
        print(f"({time.perf_counter() - start:.0f} s)")
        return
    found = measure(args.reps, args.seeds, args.arm_settings, args.effect, rules)
    head = f"arm sweeps {args.arm_settings} settings, baseline {len(BASE_LRS)}; {args.seeds} seeds, {args.reps} reps"
    print(f"{head}; effect {args.effect} logit; rejects: p < 0.05{' in its direction' if args.effect else ''}")
    print(f"{'rule':<40} {'diff (points)':>13} {'se':>5} {'rejects':>8} {'mc se':>6} {'tested':>7}")
    for name, rows in found.items():
        diffs, p = rows[:, 0] * 100, rows[:, 1]
        tested = np.isfinite(p)
        hit = (p < 0.05) & (np.sign(diffs) == np.sign(args.effect) if args.effect else True)
        rate = hit[tested].mean() if tested.any() else np.nan
        mc = np.sqrt(rate * (1 - rate) / max(tested.sum(), 1))
        se = diffs.std(ddof=1) / np.sqrt(len(diffs))
        print(f"{name:<40} {diffs.mean():>+13.2f} {se:>5.2f} {rate:>8.1%} {mc:>6.1%} {tested.mean():>7.0%}")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
