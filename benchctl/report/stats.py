"""The report's numbers: pass@k per arm with CIs, paired differences to the baseline, the cost table.

Statistics [our choices, stated in every output]:
* pass@k of an arm on a task at k: each run's per-problem unbiased pass@k, averaged over the runs of a seed,
  then over seeds, on the problems every seed evaluated.  CI: `scipy.stats.bootstrap` (percentile) over
  problems of the per-problem seed means, so it is the uncertainty from the finite problem set; the spread
  over seeds is reported beside it (seed_std) and in the rliable summary.
* difference to the baseline: the same problems and the same seeds (those both arms ran, in the same
  context: equal values of the group-by columns other than the arm), paired by problem:
  `scipy.stats.bootstrap((arm, base), mean(arm - base), paired=True)` (percentile).  p-value: inversion of
  that percentile interval, p = min(1, 2 min(#{d* <= 0}+1, #{d* >= 0}+1) / (B+1)).  Significance: Holm's
  step-down correction (`statsmodels.stats.multitest.multipletests(method="holm")`) over every comparison in
  the report (all arms x tasks x k), family-wise error rate `alpha`.
"""

from __future__ import annotations

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


def _ci(values: np.ndarray, config: ReportConfig) -> tuple[float, float]:
    if len(values) < 2:
        return np.nan, np.nan
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    res = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=config.resamples,
        confidence_level=config.confidence,
        method="percentile",
        vectorized=True,
        random_state=config.seed,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def passk_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """One row per (arm, eval_task, k): pass_at_k (mean over seeds), CI over problems, seeds, seed_std."""
    rows = []
    frame = _with_runs(data, ["arm", "seed"])
    for (arm, task, k), part in frame.groupby(["arm", "eval_task", "k"], sort=True):
        wide = seed_matrix(part)
        per_problem = wide.mean(axis=1).to_numpy()  # (P,)
        per_seed = wide.mean(axis=0).to_numpy()  # (S,)
        low, high = _ci(per_problem, config)
        rows.append(
            {
                "arm": arm,
                "eval_task": task,
                "k": int(k),
                "pass_at_k": float(per_problem.mean()),
                "low": low,
                "high": high,
                "seeds": wide.shape[1],
                "runs": part["run_id"].nunique(),
                "seed_std": float(per_seed.std(ddof=1)) if len(per_seed) > 1 else np.nan,
                "problems": wide.shape[0],
            }
        )
    return pd.DataFrame(
        rows, columns=["arm", "eval_task", "k", "pass_at_k", "low", "high", "seeds", "runs", "seed_std", "problems"]
    )


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


def _pvalue(boot: np.ndarray) -> float:
    below, above = int(np.sum(boot <= 0)), int(np.sum(boot >= 0))
    return min(1.0, 2 * (min(below, above) + 1) / (len(boot) + 1))


def paired_difference(arm: np.ndarray, base: np.ndarray, config: ReportConfig) -> tuple[float, float, float, float]:
    """(mean difference, CI low, CI high, two-sided p) of arm - base, paired by problem."""
    diff = float(np.mean(arm - base))
    if len(arm) < 2 or np.all(arm - base == diff):
        return diff, diff if len(arm) else np.nan, diff if len(arm) else np.nan, 1.0 if diff == 0 else np.nan
    res = stats.bootstrap(
        (arm, base),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=config.resamples,
        confidence_level=config.confidence,
        method="percentile",
        random_state=config.seed,
    )
    ci = res.confidence_interval
    return diff, float(ci.low), float(ci.high), _pvalue(res.bootstrap_distribution)


def _compare_one(frame: pd.DataFrame, arm: str, base: str, config: ReportConfig) -> list[dict]:
    rows = []
    for (task, k), part in frame[frame["arm"].isin([arm, base])].groupby(["eval_task", "k"], sort=True):
        a, b = seed_matrix(part[part["arm"] == arm]), seed_matrix(part[part["arm"] == base])
        seeds = sorted(set(a.columns) & set(b.columns))
        probs = a.index.intersection(b.index)
        if not seeds or len(probs) == 0:
            continue
        av = a.loc[probs, seeds].mean(axis=1).to_numpy()  # (P,)
        bv = b.loc[probs, seeds].mean(axis=1).to_numpy()  # (P,)
        diff, low, high, p = paired_difference(av, bv, config)
        rows.append(
            {
                "arm": arm,
                "baseline": base,
                "eval_task": task,
                "k": int(k),
                "arm_pass_at_k": av.mean(),
                "baseline_pass_at_k": bv.mean(),
                "diff": diff,
                "low": low,
                "high": high,
                "p_value": p,
                "seeds": len(seeds),
                "problems": len(probs),
            }
        )
    return rows


def comparisons_table(data: ReportData, config: ReportConfig) -> pd.DataFrame:
    """Paired differences to the baseline for every (arm, task, k), Holm-corrected over all of them."""
    frame = _with_runs(data, ["arm", "seed"])
    rows = [r for arm, base in baseline_pairs(data, config.baseline) for r in _compare_one(frame, arm, base, config)]
    cols = [
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
        "problems",
    ]
    table = pd.DataFrame(rows, columns=[c for c in cols if c not in ("p_holm", "significant")])
    ok = table["p_value"].notna().to_numpy()
    table["p_holm"], table["significant"] = np.nan, False
    if ok.any():
        reject, p_adj, _, _ = multipletests(table.loc[ok, "p_value"].to_numpy(), alpha=config.alpha, method="holm")
        table.loc[ok, "p_holm"], table.loc[ok, "significant"] = p_adj, reject
    return table[cols]


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
