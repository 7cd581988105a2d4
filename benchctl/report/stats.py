"""The report's numbers: pass@k per arm with CIs, differences to the baseline with seed-level tests, the cost table.

Statistics [our choices, stated in every output]:
* The unit is the training run (Agarwal et al. 2021, arXiv:2108.13264; Henderson et al. 2018): the values of one
  (arm, task, k) form a problems x seeds matrix X (P, S) of per-problem unbiased pass@k (runs of one seed
  averaged; the problems every seed evaluated).  Seeds and problems are crossed (every seed is evaluated on the
  same problems), so the mean of X has a between-seed and a between-problem variance, and both enter every
  interval and test: V = var(seed means) / S + var(problem means) / P (sample variances).
* pass@k of an arm on a task at k: mean of X; CI mean +- t(df) sqrt(V), clipped to [0, 1], df the
  Welch-Satterthwaite degrees of freedom of the two components (between S - 1 and S + P - 2: an arm's own
  pass@k varies mostly with the problems, whose variance is well estimated; this interval makes no claim).
  With one seed the between-seed variance is unknown: the CI covers the problems only (t with P - 1 df) and the
  row is marked.
* difference to the baseline: D = X_arm - X_base on the seeds both arms ran (paired by seed) and the problems
  both evaluated (paired by problem), in the same context (equal values of the group-by columns other than the
  arm).  diff = mean(D), CI diff +- t(S-1) sqrt(V(D)), two-sided p = 2 P(T(S-1) > |diff| / sqrt(V(D))).
  seed_std: standard deviation of the per-seed differences.  Fewer than 3 common seeds (`MIN_SEEDS`): the
  estimate is shown, marked too_few_seeds, with no p-value and no significance (one seed: no CI either).
  Holm's step-down correction (`statsmodels.stats.multitest.multipletests(method="holm")`) over the
  comparisons with enough seeds (all arms x tasks x k), family-wise error rate `alpha`.
* seeds_for_80pct_power: the seeds a two-sided paired t-test on per-seed differences needs for power 0.8 at
  `alpha` (before Holm) if the observed diff and seed_std were the truth (`statsmodels.stats.power.TTestPower`,
  effect size |diff| / seed_std; the problem variance left out); at least 3; empty where diff or seed_std is 0
  or more than 100,000 seeds would be needed.
* health (`benchctl.report.health`): each comparison names the runs of the arm and of the baseline that are not
  ok (collapsed, diverged, stalled); their numbers stay in the table, marked.

Why this test [our choice; measured in docs/report.md]: V counts the seed x problem noise twice, so it is
slightly conservative, and S - 1 degrees of freedom are the fewest the two components can have: the test keeps
its level with 3 seeds.  A hierarchical bootstrap (seeds, then problems) has no small-sample correction: with
3-5 seeds there are 10-126 distinct seed sets, and on null arms whose variance is mostly between seeds it
rejected far more often than `alpha`.  A t-test on per-seed means alone treats the problem set as fixed and
rejects too often when problems favour one arm by chance; Welch-Satterthwaite degrees of freedom on V were
anti-conservative with 3 seeds when the two components are alike.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from benchctl.report.config import ReportConfig
from benchctl.report.load import ReportData

PHASES = ("time/rollout", "time/reward", "time/advantage", "time/logprobs", "time/update", "time/sync", "time/eval")


def _with_runs(data: ReportData, cols: list[str]) -> pd.DataFrame:
    return data.problems.merge(data.runs[["run_id", *cols]], on="run_id")


def seed_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of one (arm, task, k) -> problems x seeds of values (runs of one seed averaged), complete rows."""
    seeds = frame["seed"].fillna(-1)
    wide = frame.assign(seed=seeds).pivot_table(index="problem_id", columns="seed", values="value", aggfunc="mean")
    return wide.dropna()


MIN_SEEDS = 3  # fewer common seeds: the estimate is shown, marked, and no significance is claimed
POWER = 0.8
MAX_POWER_SEEDS = 100_000
PASSK_COLUMNS = [
    *("arm", "eval_task", "k", "pass_at_k", "low", "high"),
    *("seeds", "runs", "seed_std", "too_few_seeds", "problems"),
]


@dataclass(frozen=True)
class Estimate:
    """Mean of a (problems, seeds) matrix with its seed + problem variance: CI, two-sided p against 0, df."""

    mean: float
    low: float
    high: float
    p_value: float
    seed_std: float  # std of the per-seed means (ddof 1); NaN with one seed
    df: float  # degrees of freedom of the t reference (S - 1; P - 1 with one seed)


def crossed_estimate(values: np.ndarray, confidence: float, satterthwaite: bool = False) -> Estimate:
    """values (P, S): problems x seeds, crossed.  V = var(seed means)/S + var(problem means)/P, t with S - 1 df,
    or Welch-Satterthwaite's df of the two components with `satterthwaite` (P - 1 and the problem term only when
    S = 1: the between-seed variance is unknown).  See the module doc."""
    values = np.asarray(values, dtype=np.float64)
    n_prob, n_seed = values.shape
    mean = float(values.mean()) if values.size else np.nan
    seed_means, prob_means = values.mean(axis=0), values.mean(axis=1)  # (S,), (P,)
    seed_std = float(seed_means.std(ddof=1)) if n_seed > 1 else np.nan
    var_prob = float(prob_means.var(ddof=1)) / n_prob if n_prob > 1 else 0.0
    if n_seed > 1:
        var, df = seed_std**2 / n_seed + var_prob, float(n_seed - 1)
        if satterthwaite and var > 0 and n_prob > 1:
            df = var**2 / ((seed_std**2 / n_seed) ** 2 / (n_seed - 1) + var_prob**2 / (n_prob - 1))
    elif n_prob > 1:
        var, df = var_prob, float(n_prob - 1)
    else:
        return Estimate(mean, np.nan, np.nan, np.nan, seed_std, np.nan)
    if var == 0.0:  # every problem and seed gives the same value
        return Estimate(mean, mean, mean, 1.0 if mean == 0.0 else 0.0, seed_std, df)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * np.sqrt(var)
    p = float(2 * stats.t.sf(abs(mean) / np.sqrt(var), df))
    return Estimate(mean, mean - half, mean + half, p, seed_std, df)


def seeds_for_power(diff: float, seed_std: float, alpha: float, power: float = POWER) -> float:
    """Seeds a two-sided paired t-test over per-seed differences needs for `power` at `alpha`, if the true
    difference were `diff` and the seeds' standard deviation `seed_std` (TTestPower); >= MIN_SEEDS; NaN when
    undefined (diff or seed_std 0 or NaN) or over MAX_POWER_SEEDS."""
    from statsmodels.stats.power import TTestPower
    from statsmodels.tools import sm_exceptions  # noqa: F401  (its import sets "always" filters: before ours)

    if not (np.isfinite(diff) and np.isfinite(seed_std)) or diff == 0.0 or seed_std == 0.0:
        return np.nan
    effect, analysis = abs(diff) / seed_std, TTestPower()
    small = np.arange(2, 11)
    reached = analysis.power(effect_size=effect, nobs=small, alpha=alpha, alternative="two-sided") >= power
    if reached.any():  # the solver fails on very large effects; the small counts are checked directly
        return float(max(MIN_SEEDS, small[np.argmax(reached)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = analysis.solve_power(effect_size=effect, nobs=None, alpha=alpha, power=power, alternative="two-sided")
    n = float(np.ravel(n)[0]) if n is not None else np.nan
    return float(np.ceil(n)) if np.isfinite(n) and n <= MAX_POWER_SEEDS else np.nan


def passk_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """One row per (arm, eval_task, k): pass_at_k (mean over seeds and problems), CI with the seed and problem
    variance, seeds, runs, seed_std, too_few_seeds, problems."""
    rows = []
    frame = _with_runs(data, ["arm", "seed"])
    for (arm, task, k), part in frame.groupby(["arm", "eval_task", "k"], sort=True):
        wide = seed_matrix(part)
        est = crossed_estimate(wide.to_numpy(), config.confidence, satterthwaite=True)
        rows.append(
            {
                "arm": arm,
                "eval_task": task,
                "k": int(k),
                "pass_at_k": est.mean,
                "low": max(0.0, est.low) if np.isfinite(est.low) else np.nan,
                "high": min(1.0, est.high) if np.isfinite(est.high) else np.nan,
                "seeds": wide.shape[1],
                "runs": part["run_id"].nunique(),
                "seed_std": est.seed_std,
                "too_few_seeds": wide.shape[1] < MIN_SEEDS,
                "problems": wide.shape[0],
            }
        )
    return pd.DataFrame(rows, columns=PASSK_COLUMNS)


def baseline_pairs(data: ReportData, baseline: str | None) -> list[tuple[str, str]]:
    """[(arm, its baseline arm)]: the baseline arm with the same context (other group-by columns)."""
    if baseline is None:
        return []
    runs = data.runs
    is_base = np.zeros(len(runs), bool)
    for col in (data.arm_column, "estimator", "estimator_label", "model"):
        if col in runs:  # the first column naming the baseline decides: arm `dapo` runs estimator grpo, not the arm
            is_base = runs[col].astype(str).to_numpy() == baseline
            if is_base.any():
                break
    context = [c for c in data.group_by if c != data.arm_column and not c.startswith("est")]
    key = runs[context].astype(str).agg("|".join, axis=1) if context else pd.Series([""] * len(runs))
    base_arms = {}
    for k_val, arm in zip(key[is_base], runs["arm"][is_base]):
        base_arms.setdefault(k_val, set()).add(arm)
    if not is_base.any():
        _note(data, f"--baseline {baseline} matches no run ({data.arm_column}/estimator/model); no comparisons")
    pairs = []
    for k_val, arm in sorted(set(zip(key[~is_base], runs["arm"][~is_base])), key=lambda x: x[1]):
        bases = base_arms.get(k_val, set())
        if len(bases) == 1:
            pairs.append((arm, next(iter(bases))))
        elif is_base.any():
            _note(
                data,
                f"{arm}: {len(bases)} baseline arms share its context ({', '.join(sorted(bases)) or 'none'}); "
                "not compared",
            )
    return pairs


def _note(data: ReportData, text: str) -> None:
    if text not in data.notes:
        data.notes.append(text)


COMPARISON_COLUMNS = [
    "arm",
    "baseline",
    "eval_task",
    "k",
    "arm_pass_at_k",
    "baseline_pass_at_k",
    "diff",
    "low",
    "high",
    "p_value",
    "p_holm",
    "significant",
    "seeds",
    "seed_std",
    "too_few_seeds",
    "seeds_for_80pct_power",
    "problems",
    "arm_health",
    "baseline_health",
    "unhealthy",
]


def _arm_health(data: ReportData, arm: str, seeds: list) -> str:
    """'ok', or the runs of `arm` among `seeds` that are not ok ('collapsed: seed 1; stalled: seed 3')."""
    from benchctl.report.health import summarize

    runs = data.runs[data.runs["arm"] == arm]
    if "health" not in runs:
        return "ok"
    runs = runs[runs["seed"].fillna(-1).isin(seeds)]
    return summarize(runs["health"].tolist(), runs["seed"].tolist())


def _compare_one(data: ReportData, frame: pd.DataFrame, arm: str, base: str, config: ReportConfig) -> list[dict]:
    rows = []
    for (task, k), part in frame[frame["arm"].isin([arm, base])].groupby(["eval_task", "k"], sort=True):
        a, b = seed_matrix(part[part["arm"] == arm]), seed_matrix(part[part["arm"] == base])
        seeds = sorted(set(a.columns) & set(b.columns))
        probs = a.index.intersection(b.index)
        if not seeds or len(probs) == 0:
            continue
        av, bv = a.loc[probs, seeds].to_numpy(), b.loc[probs, seeds].to_numpy()  # (P, S) each
        est = crossed_estimate(av - bv, config.confidence)
        few = len(seeds) < MIN_SEEDS
        arm_health, base_health = _arm_health(data, arm, seeds), _arm_health(data, base, seeds)
        rows.append(
            {
                "arm": arm,
                "baseline": base,
                "eval_task": task,
                "k": int(k),
                "arm_pass_at_k": float(av.mean()),
                "baseline_pass_at_k": float(bv.mean()),
                "diff": est.mean,
                "low": np.nan if len(seeds) < 2 else est.low,
                "high": np.nan if len(seeds) < 2 else est.high,
                "p_value": np.nan if few else est.p_value,
                "seeds": len(seeds),
                "seed_std": est.seed_std,
                "too_few_seeds": few,
                "seeds_for_80pct_power": seeds_for_power(est.mean, est.seed_std, config.alpha),
                "problems": len(probs),
                "arm_health": arm_health,
                "baseline_health": base_health,
                "unhealthy": arm_health != "ok" or base_health != "ok",
            }
        )
    return rows


def comparisons_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """Differences to the baseline for every (arm, task, k) with the seed-level test; Holm over the comparisons
    with at least MIN_SEEDS seeds (the others carry too_few_seeds and no p-value)."""
    frame = _with_runs(data, ["arm", "seed"])
    rows = [
        r for arm, base in baseline_pairs(data, config.baseline) for r in _compare_one(data, frame, arm, base, config)
    ]
    table = pd.DataFrame(rows, columns=[c for c in COMPARISON_COLUMNS if c not in ("p_holm", "significant")])
    table["too_few_seeds"] = table["too_few_seeds"].astype(bool)
    table["unhealthy"] = table["unhealthy"].astype(bool)
    ok = (table["p_value"].notna() & ~table["too_few_seeds"]).to_numpy()
    table["p_holm"], table["significant"] = np.nan, False
    if ok.any():
        reject, p_adj, _, _ = multipletests(table.loc[ok, "p_value"].to_numpy(), alpha=config.alpha, method="holm")
        table.loc[ok, "p_holm"], table.loc[ok, "significant"] = p_adj, reject
    return table[COMPARISON_COLUMNS]


def cost_table(data: ReportData) -> pd.DataFrame:
    """One row per arm: runs, steps, rollout tokens and samples, seconds per phase and in all (means over runs),
    and pass@1 per evaluated task (mean over seeds)."""
    if data.metrics.empty:
        return pd.DataFrame(columns=["arm", "runs"])
    m = data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id")
    per_run = m.groupby(["arm", "run_id"]).agg(steps=("step", "max"))
    for col, name in (("rollout/tokens_total", "rollout_tokens"), ("rollout/samples_total", "rollout_samples")):
        if col in m:
            per_run[name] = m.groupby(["arm", "run_id"])[col].max()
    if "rollout_tokens" not in per_run and "rollout/tokens" in m:
        per_run["rollout_tokens"] = m.groupby(["arm", "run_id"])["rollout/tokens"].sum()
    for col in [*PHASES, "time/step"]:
        if col in m:
            per_run[f"{col}_s"] = m.groupby(["arm", "run_id"])[col].sum()
    table = per_run.groupby("arm").mean()
    table.insert(0, "runs", per_run.groupby("arm").size())
    p1 = data.eval_curve
    if not p1.empty:
        final = p1.sort_values("step", kind="stable").groupby(["run_id", "eval_task"]).tail(1)
        final = final.merge(data.runs[["run_id", "arm"]], on="run_id")
        wide = final.pivot_table(index="arm", columns="eval_task", values="pass@1", aggfunc="mean")
        table = table.join(wide.add_prefix("pass@1:"))
    return table.reset_index()
