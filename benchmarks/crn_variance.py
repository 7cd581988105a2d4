"""How much common random numbers (CRN) shrink the seed variance of an arm's difference to its baseline, measured
on a results folder.

    python benchmarks/crn_variance.py RESULTS [RESULTS ...] [--baseline grpo] [--k 1] [--task arith_mix]

A matrix gives every arm the same prompts and sampling streams for a seed (the trainer's rollouts and the final
evaluation's samples are keyed by seed and problem), so arm and baseline runs of one seed share their luck. For
each arm, from the per-seed held-out pass@k (mean over problems; x_s the arm's, b_s the baseline's):

* paired: the sample variance over seeds of x_s - b_s (what the report's test uses);
* unpaired: the mean of (x_s - b_t)^2 over seeds s != t, minus the squared mean difference: the variance of a
  difference between runs that share no random numbers, estimated from the same runs (equal to var(x) + var(b)
  in expectation when seeds are exchangeable);
* ratio: paired / unpaired (below 1: CRN helps; 0.25 halves the interval's width); and corr(x_s, b_s).

With S seeds each variance has about S - 1 degrees of freedom: the ratio of one arm is a rough figure, the
median over arms a better one.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pandas as pd

from benchctl.report.config import ReportConfig
from benchctl.report.load import load_report_data


def seed_scores(results: list[str], k: int, task: str | None) -> pd.DataFrame:
    """arms (a matrix cell's arm, else the estimator's label) x seeds of held-out pass@k (mean over problems)."""
    data = load_report_data(ReportConfig(inputs=tuple(results)))
    problems = data.problems[data.problems["k"] == k]
    if task is not None:
        problems = problems[problems["eval_task"] == task]
    runs = data.runs[["run_id", data.arm_column, "seed"]].rename(columns={data.arm_column: "arm"})
    frame = problems.merge(runs, on="run_id")
    return frame.groupby(["arm", "seed"])["value"].mean().unstack("seed")


def crn_rows(scores: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per arm: paired and unpaired variance of its difference to the baseline (module docstring)."""
    base = scores.loc[baseline]
    rows = []
    for arm, values in scores.drop(index=baseline).iterrows():
        seeds = values.dropna().index.intersection(base.dropna().index)
        x, b = values[seeds].to_numpy(), base[seeds].to_numpy()
        if len(seeds) < 2:
            continue
        diff = x - b
        cross = [(x[s] - b[t]) for s, t in itertools.permutations(range(len(seeds)), 2)]
        unpaired = float(np.mean(np.square(cross)) - np.mean(cross) ** 2)
        paired = float(np.var(diff, ddof=1))
        rows.append(
            {
                "arm": arm,
                "seeds": len(seeds),
                "diff_points": 100 * diff.mean(),
                "paired_sd_points": 100 * np.sqrt(paired),
                "unpaired_sd_points": 100 * np.sqrt(max(unpaired, 0.0)),
                "ratio": paired / unpaired if unpaired > 0 else np.nan,
                "corr": float(np.corrcoef(x, b)[0, 1]) if np.std(x) > 0 and np.std(b) > 0 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--baseline", default="grpo")
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--task", default=None, help="eval task (default: every task's problems pooled)")
    args = parser.parse_args()
    rows = crn_rows(seed_scores(args.results, args.k, args.task), args.baseline)
    print(rows.round(3).to_string(index=False))
    print(f"median paired / unpaired variance over {len(rows)} arms: {rows['ratio'].median():.3f}")


if __name__ == "__main__":
    main()
