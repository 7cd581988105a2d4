"""Across-seed, across-task summary with rliable (Agarwal et al. 2021, arXiv:2108.13264).

Scores: each run's pass@k on each evaluated task (already in [0, 1], so no normalisation), as a
(runs, tasks) matrix per arm; runs lacking a task are left out.  Aggregates (IQM, mean, median, optimality
gap) with stratified-bootstrap percentile intervals (`rliable.library.get_interval_estimates`); probability
of improvement of each arm over its baseline (`rliable.metrics.probability_of_improvement`); performance
profiles (`rliable.library.create_performance_profile`, fraction of runs with score > tau).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchctl.report.config import ReportConfig
from benchctl.report.load import ReportData

TAUS = np.linspace(0.0, 1.0, 41)
# rliable imports arch, whose numba JIT (for GARCH recursions, unused here) loads llvmlite; vLLM's CPU platform
# later scans every loaded module and crashes on llvmlite's ctypes wrappers ("'_lib_fn_wrapper' object has no
# attribute 'get'"), so a process that ran a report could not start an engine.  Keep numba out of arch.
os.environ.setdefault("ARCH_DISABLE_NUMBA", "1")


@dataclass
class RliableSummary:
    """The tables and the performance-profile curves (arm -> (len(TAUS),) fractions and (2, len(TAUS)) CIs)."""

    aggregates: pd.DataFrame
    improvement: pd.DataFrame
    profiles: dict
    profile_cis: dict
    k: int | None


def score_matrices(data: ReportData, k: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """arm -> (runs, tasks) pass@k scores, tasks in sorted order (runs missing a task dropped)."""
    frame = data.problems[data.problems["k"] == k]
    per_run = frame.groupby(["run_id", "eval_task"])["value"].mean().unstack("eval_task")  # (runs, tasks)
    per_run = per_run.dropna()
    tasks = sorted(per_run.columns)
    arms = data.runs.set_index("run_id")["arm"]
    out = {}
    for arm, rows in per_run.groupby(arms.reindex(per_run.index)):
        out[str(arm)] = rows[tasks].to_numpy(dtype=np.float64)
    return out, tasks


def _aggregates(scores: dict, k: int, config: ReportConfig) -> pd.DataFrame:
    from rliable import library as rly
    from rliable import metrics

    funcs = {
        "IQM": metrics.aggregate_iqm,
        "mean": metrics.aggregate_mean,
        "median": metrics.aggregate_median,
        "optimality_gap": metrics.aggregate_optimality_gap,
    }
    func = lambda x: np.array([f(x) for f in funcs.values()])  # noqa: E731
    point, ci = rly.get_interval_estimates(
        scores,
        func,
        reps=config.rliable_reps,
        confidence_interval_size=config.confidence,
        random_state=np.random.RandomState(config.seed),
    )
    rows = [
        {
            "arm": arm,
            "k": k,
            "metric": name,
            "value": float(point[arm][i]),
            "low": float(ci[arm][0, i]),
            "high": float(ci[arm][1, i]),
            "runs": scores[arm].shape[0],
            "tasks": scores[arm].shape[1],
        }
        for arm in scores
        for i, name in enumerate(funcs)
    ]
    return pd.DataFrame(rows)


def _improvement(scores: dict, pairs, k: int, config: ReportConfig) -> pd.DataFrame:
    from rliable import library as rly
    from rliable import metrics

    pairs = [(a, b) for a, b in pairs if a in scores and b in scores]
    cols = ["arm", "baseline", "k", "probability_of_improvement", "low", "high"]
    if not pairs:
        return pd.DataFrame(columns=cols)
    pair_scores = {f"{a}|{b}": (scores[a], scores[b]) for a, b in pairs}
    point, ci = rly.get_interval_estimates(
        pair_scores,
        metrics.probability_of_improvement,
        reps=config.rliable_reps,
        confidence_interval_size=config.confidence,
        random_state=np.random.RandomState(config.seed),
    )
    rows = [
        [a, b, k, *(float(np.ravel(x)[0]) for x in (point[key], ci[key][0], ci[key][1]))]
        for a, b in pairs
        if (key := f"{a}|{b}")
    ]
    return pd.DataFrame(rows, columns=cols)


def _profiles(scores: dict, config: ReportConfig):
    """rliable's performance profiles; it draws from numpy's global generator, so seed it and restore it."""
    from rliable import library as rly

    saved = np.random.get_state()
    np.random.seed(config.seed)
    try:
        return rly.create_performance_profile(
            scores, TAUS, reps=config.rliable_reps, confidence_interval_size=config.confidence
        )
    finally:
        np.random.set_state(saved)


def rliable_summary(data: ReportData, pairs, config: ReportConfig) -> RliableSummary:
    """rliable aggregates at the smallest and largest k; improvement probabilities and profiles at the smallest."""
    ks = sorted(data.problems["k"].unique()) if not data.problems.empty else []
    if not ks:
        return RliableSummary(pd.DataFrame(), pd.DataFrame(), {}, {}, None)
    with warnings.catch_warnings():  # rliable passes arch a deprecated `random_state`
        warnings.simplefilter("ignore", FutureWarning)
        aggs = [
            _aggregates(s, k, config) for k in sorted({int(ks[0]), int(ks[-1])}) if (s := score_matrices(data, k)[0])
        ]
        scores, _ = score_matrices(data, int(ks[0]))
        improvement = _improvement(scores, pairs, int(ks[0]), config)
        profiles, cis = _profiles(scores, config) if scores else ({}, {})
    return RliableSummary(
        pd.concat(aggs, ignore_index=True) if aggs else pd.DataFrame(), improvement, profiles, cis, int(ks[0])
    )
