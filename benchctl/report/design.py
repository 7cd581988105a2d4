"""The design advisor's statistics: variance components of a pilot's comparisons, and the mde a design will print.

A pilot is a finished matrix.  For one comparison (arm - baseline at one task and the primary k), D is the problems x
seeds matrix of per-problem differences the report tests (`stats.seed_matrix`, paired by seed and problem).  Its
two-way random model (Montgomery, Design and Analysis of Experiments, §13.3; docs/report.md, "The training run is the
unit") has expected mean squares

    E[MS_seed] = P s2_seed + s2_err,   E[MS_problem] = S s2_problem + s2_err,   E[MS_error] = s2_err,
    s2_err = s2_interaction + s2_sampling / n,

with s2_seed the seed-to-seed variance of the difference, s2_problem the arm x problem variance, s2_interaction
the seed x problem variance beyond sampling, and s2_sampling the per-sample variance of a correct/wrong verdict
summed over both arms: at k = 1 a cell's pass@1 is c / n, and a(1 - a) n / (n - 1) estimates a cell's per-sample
variance without bias, averaged over the cells [our choice: at k > 1 the unbiased pass@k has no such split, and the
sampling part stays in s2_interaction: more samples are not modelled].  Components are the ANOVA (method of moments)
estimates, each clipped at 0.

Paired sampling streams [our choice]: the two arms' sums assume their samples are independent, but a seed's
evaluation draws its samples from the same random stream in both arms (same seed, same sampler seed), so two
policies that still agree on a question often give the same verdict, and the sampling variance of a cell of D,
Var_arm + Var_base - 2 Cov, can be far below the sum (pilot of tiny dr_grpo vs grpo: sum 0.029, MS_error 0.0063;
the advisor predicted 15.7 points where the report printed 1.5).  The sampling part of a cell can never exceed
MS_error, whose expectation contains it: where the averaged sum exceeds MS_error, the sampling component is scaled
by MS_error / sum and s2_interaction is 0 (all of MS_error is sampling, shrinking with more samples as the sum
would).  Where the sum is below MS_error, a covariance is not identified from one pilot and the sum is kept: the
interaction is then underestimated by the unseen covariance, and designs with more samples are predicted
optimistically (at the pilot's own samples the prediction is unaffected: s2_err is MS_error either way).

Prediction [our choice, the point of the module]: for a design of S' seeds, P' questions and n' samples, the mean
squares are set to their expectations under the pilot's components, and the prediction is what the report would
print on a matrix with exactly those mean squares: `stats.crossed_estimate` (the report's variance, Satterthwaite
df and seed share) and `stats.minimum_detectable_effect` at the level of the report's primary family (alpha / m, m
the number of comparisons at the primary k), with the pilot's two levels (its variance moved with the effect near 0
or 1, `stats.level_scaled_mde`, as the report prints it).  No second mde formula: `_matrix_with_mean_squares`
builds a (P', S') matrix whose ANOVA mean squares are the expected ones, and the report's own code reads it.  The
printed mde is a random quantity (its mean squares are estimates); the prediction is its value at their expectations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import chi2

from benchctl.errors import BenchctlError
from benchctl.report.config import ReportConfig
from benchctl.report.load import ReportData
from benchctl.report.stats import (
    POWER,
    baseline_pairs,
    crossed_estimate,
    mean_squares,
    minimum_detectable_effect,
    spread_power,
)
from benchctl.results.runinfo import read_eval_problems

MIN_PILOT_SEEDS = 2  # the seed component needs two seeds
COMPONENT_COLUMNS = [
    *("arm", "baseline", "eval_task", "k", "seeds", "questions", "samples", "diff"),
    *("seed_sd", "problem_sd", "interaction_sd", "sampling_sd", "pilot_mde"),
]  # plan_components.parquet: diff, the standard deviations (square roots of the components) and mde in points


class PlanInputError(BenchctlError):
    """A pilot or a target the advisor cannot plan from (one line, exit 2)."""


@dataclass(frozen=True)
class Components:
    """Variance components of one comparison's D = arm - baseline (fractions, not points), and its pilot design."""

    arm: str
    baseline: str
    eval_task: str
    k: int
    seeds: int
    questions: int
    samples: float  # samples per question and run in the pilot (median)
    diff: float
    seed: float  # s2_seed: variance of the seed-level difference
    problem: float  # s2_problem: arm x problem
    interaction: float  # s2_interaction: seed x problem beyond sampling
    sampling: float  # s2_sampling: per-sample variance, both arms (divided by n in a cell)
    arm_level: float = np.nan  # the arm's mean pass@k in the pilot (the printed mde scales its variance with it)
    base_level: float = np.nan  # the baseline's


def expected_mean_squares(c: Components, seeds: int, questions: int, samples: float) -> tuple[float, float, float]:
    """(E[MS_seed], E[MS_problem], E[MS_error]) of a design under `c` (module docstring)."""
    err = c.interaction + (c.sampling / samples if c.sampling > 0 else 0.0)
    return questions * c.seed + err, seeds * c.problem + err, err


def _matrix_with_mean_squares(ms_seed: float, ms_prob: float, ms_err: float, questions: int, seeds: int):
    """A (questions, seeds) matrix whose two-way ANOVA mean squares are exactly the given ones: a seed contrast u,
    a problem contrast v (each mean 0, sum of squares 1) and their product, which is double-centred."""
    u = np.arange(seeds) - (seeds - 1) / 2
    u /= np.sqrt((u**2).sum())  # (S,)
    v = np.arange(questions) - (questions - 1) / 2
    v /= np.sqrt((v**2).sum())  # (P,)
    a = np.sqrt(ms_seed * (seeds - 1) / questions)
    b = np.sqrt(ms_prob * (questions - 1) / seeds)
    e = np.sqrt(ms_err * (seeds - 1) * (questions - 1))
    return a * u[None, :] + b * v[:, None] + e * np.outer(v, u)  # (P, S)


def predicted_mde(
    c: Components, seeds: int, questions: int, samples: float, level: float, population: str = "problems"
) -> float:
    """The mde (fraction) the report would print for this comparison on a design of `seeds` x `questions` x
    `samples`, at two-sided `level` (the primary family's alpha / m): the report's own estimate and mde function on
    a matrix with the expected mean squares (module docstring)."""
    values = _matrix_with_mean_squares(*expected_mean_squares(c, seeds, questions, samples), questions, seeds)
    est = crossed_estimate(values, 0.95, population)
    levels = {"arm_level": c.arm_level, "base_level": c.base_level, "spread_power": spread_power(c.k)}
    return minimum_detectable_effect(est.se, est.df, level, POWER, est.seed_share, seeds - 1, **levels)


def components_of(
    diff: np.ndarray, cell_var: np.ndarray | None, n: np.ndarray | None, seed_bound: float = 0.0
) -> tuple[float, ...]:
    """D (P, S), the variance of each cell's pass@1 from sampling (P, S; both arms: a(1 - a) / (n - 1) summed) and
    the samples per cell n (P, S), or None at k > 1 -> (seed, problem, interaction, sampling) method-of-moments
    components, clipped at 0; sampling is per sample (a cell's sampling variance is sampling / n), scaled down to
    MS_error where the summed cell variances exceed it (paired sampling streams, module docstring).  `seed_bound` >
    0: MS_seed at its upper `seed_bound` confidence limit (chi-square, S - 1 df), the seed component a pilot of
    few seeds cannot rule out [our choice, the report's own guard on Satterthwaite's df: `stats.DF_SEED_BOUND`]."""
    n_prob, n_seed = diff.shape
    _, ms_seed, ms_prob, ms_err = (float(x) for x in mean_squares(diff))
    if seed_bound > 0:
        ms_seed = ms_seed * (n_seed - 1) / float(chi2.ppf(1 - seed_bound, n_seed - 1))
    in_cells = float(np.mean(cell_var)) if cell_var is not None else 0.0
    sampling = float(np.mean(cell_var * n)) if cell_var is not None else 0.0
    if in_cells > ms_err:  # paired sampling streams: the arms' summed variance overstates D's (module docstring)
        sampling *= ms_err / in_cells
    return (
        max((ms_seed - ms_err) / n_prob, 0.0),
        max((ms_prob - ms_err) / n_seed, 0.0),
        max(ms_err - in_cells, 0.0),
        sampling,
    )


def _samples_frame(data: ReportData, task: str) -> pd.DataFrame:
    """run_id, problem_id, n: samples per question of each run's evaluation of `task`."""
    frames = []
    for run_id, folder in zip(data.runs["run_id"], data.runs["eval"], strict=True):
        if folder is None:
            continue
        try:
            table = read_eval_problems(folder, task).to_pandas()
        except (BenchctlError, OSError):
            continue
        frames.append(pd.DataFrame({"run_id": run_id, "problem_id": table["problem_id"].astype(str), "n": table["n"]}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run_id", "problem_id", "n"])


def _cell_sampling(data: ReportData, part: pd.DataFrame, task: str):
    """part: one arm's k = 1 rows -> ((P, S) a(1 - a) / (n - 1), (P, S) n) as `stats.seed_matrix` lays them out."""
    from benchctl.report.stats import seed_matrix

    n = part.merge(_samples_frame(data, task), on=["run_id", "problem_id"], how="left")
    var = n.assign(value=n["value"] * (1 - n["value"]) / (n["n"] - 1).clip(lower=1))
    return seed_matrix(var), seed_matrix(n.assign(value=n["n"]))


def pilot_components(data: ReportData, config: ReportConfig, seed_bound: float = 0.0) -> list[Components]:
    """The Components of every comparison at the primary k (arm against its baseline, per task), as the report
    pairs them (`stats.baseline_pairs`: same context; common seeds and problems); `seed_bound`: `components_of`.
    PlanInputError when there is no comparison or a comparison has fewer than 2 common seeds."""
    from benchctl.report.stats import seed_matrix

    frame = data.problems.merge(data.runs[["run_id", "arm", "seed"]], on="run_id")
    frame = frame[frame["k"] == config.primary_k]
    pairs = baseline_pairs(data, config.baseline)
    if not pairs:
        arms = sorted(data.runs["arm"].unique())
        raise PlanInputError(
            f"the pilot needs at least 2 arms, one of them the baseline {config.baseline!r}; it has "
            f"{len(arms)}: {', '.join(arms)} (--baseline names the baseline)"
        )
    out = []
    for arm, base in pairs:
        for task, part in frame[frame["arm"].isin([arm, base])].groupby("eval_task", sort=True):
            a, b = seed_matrix(part[part["arm"] == arm]), seed_matrix(part[part["arm"] == base])
            seeds, probs = sorted(set(a.columns) & set(b.columns)), a.index.intersection(b.index)
            if len(seeds) < MIN_PILOT_SEEDS or len(probs) < 2:
                raise PlanInputError(
                    f"{arm} against {base} on {task}: {len(seeds)} common seed(s) and {len(probs)} question(s); the "
                    f"advisor needs a pilot with at least {MIN_PILOT_SEEDS} seeds of each arm and 2 questions"
                )
            diff = (a.loc[probs, seeds] - b.loc[probs, seeds]).to_numpy()  # (P, S)
            var = n = None
            if config.primary_k == 1:
                (va, na), (vb, nb) = (_cell_sampling(data, part[part["arm"] == x], task) for x in (arm, base))
                var = (va.loc[probs, seeds] + vb.loc[probs, seeds]).to_numpy()  # (P, S)
                n = (0.5 * (na.loc[probs, seeds] + nb.loc[probs, seeds])).to_numpy()  # (P, S)
            parts = components_of(diff, var, n, seed_bound)
            samples = float(np.median(n)) if n is not None else np.nan
            levels = (float(a.loc[probs, seeds].to_numpy().mean()), float(b.loc[probs, seeds].to_numpy().mean()))
            out.append(Components(arm, base, str(task), config.primary_k, len(seeds), len(probs), samples,
                                  float(diff.mean()), *parts, *levels))  # fmt: skip
    return out
