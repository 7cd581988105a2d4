"""Each arm at its own best setting: a training setting swept within an arm (a matrix `train:` axis, e.g. `lr`) is
chosen on a validation task, and only then is the arm compared on the test tasks.

Rule [our choice]: the setting columns are the `benchctl train` settings that take more than one value among the
runs of one arm and training task (seeds, run folders and evaluation settings excluded). A run's validation task is
`--select-on`, else `<its training task>_val` when it evaluated that task (arith -> arith_val, arith_steps ->
arith_steps_val), so one report can hold arms trained on different tasks. For each (arm, training task), every
combination of the settings' values is scored by its mean pass@k at the smallest k on its validation task (all
seeds); the best one is kept (ties: the first in sorted order) and the other runs leave every test table. Validation
tasks never enter the verdict tables. Without a validation task the settings become part of the arm (each setting
its own row), with a note: choosing on the test tasks would be selection on the test set. The `settings` table shows
the sensitivity: every combination's validation and test scores, seeds, and which one was chosen.
"""

from __future__ import annotations

import pandas as pd

NOT_SETTINGS = {
    *("model", "task", "estimator", "estimator_params", "recipe", "group_size", "seed", "out", "resume"),
    *("progress", "sources", "threads", "eval_task", "eval_every", "eval_every_tokens", "eval_n", "eval_k"),
    *("eval_limit", "eval_temperature", "save_every", "report_to", "allow_overlap"),
}
SETTINGS_COLUMNS = ["arm", "setting", "validation_task", "validation_score", "eval_task", "test_score", "seeds"]


def setting_columns(runs: pd.DataFrame) -> list[str]:
    """Train settings that vary among the runs of one arm (and training task)."""
    from benchctl.trainers.config import field_names

    names = [c for c in field_names() if c not in NOT_SETTINGS and c in runs]
    if not names:
        return []
    varying = runs.astype({c: str for c in names}).groupby(_unit(runs))[names].nunique()
    return [c for c in names if (varying[c] > 1).any()]


def _unit(runs: pd.DataFrame) -> list[str]:
    """The columns within which a setting is chosen: the arm, and the training task when runs have one."""
    return ["arm", "task"] if "task" in runs else ["arm"]


def _label(row, cols: list[str]) -> str:
    return ",".join(f"{c}={row[c]}" for c in cols)


def _validation_of(runs: pd.DataFrame, problems: pd.DataFrame, select_on: str | None) -> pd.Series:
    """Per run: `select_on`, else `<training task>_val` when the run evaluated it (arith -> arith_val), else None."""
    evaluated = problems.groupby("run_id")["eval_task"].unique().map(set).to_dict()
    out = []
    for r in runs.to_dict("records"):
        want = select_on or (f"{r['task']}_val" if isinstance(r.get("task"), str) else None)
        out.append(want if want in evaluated.get(r["run_id"], set()) else None)
    return pd.Series(out, index=runs.index, dtype=object)


def select_settings(data, select_on: str | None) -> pd.DataFrame:
    """Keep each arm's best setting in `data` (in place: runs and problems filtered, validation problems removed);
    returns the `settings` sensitivity table (empty when no setting varies within an arm)."""
    runs, problems = data.runs, data.problems
    runs = runs.assign(validation=_validation_of(runs, problems, select_on))
    val_tasks = set(runs["validation"].dropna())
    data.problems = problems[~problems["eval_task"].isin(val_tasks)]
    cols = setting_columns(runs)
    if not cols:
        return pd.DataFrame(columns=[*SETTINGS_COLUMNS, "chosen"])
    unit = _unit(runs)
    runs["setting"] = [_label(r, cols) for r in runs.to_dict("records")]
    k = int(problems["k"].min())
    at_k = problems[problems["k"] == k].merge(runs[["run_id", *unit, "setting", "seed", "validation"]], on="run_id")
    keys = [*unit, "setting", "eval_task"]
    scores = at_k.groupby(keys).agg(score=("value", "mean"), seeds=("seed", "nunique")).reset_index()
    on_val = at_k[at_k["eval_task"] == at_k["validation"]]
    val_scores = on_val.groupby([*unit, "setting"])["value"].mean().rename("validation_score").reset_index()
    ranked = val_scores.sort_values(
        [*unit, "validation_score", "setting"], ascending=[True] * len(unit) + [False, True]
    )
    best = {tuple(r[c] for c in unit): r["setting"] for r in ranked.groupby(unit).head(1).to_dict("records")}
    key = list(zip(*(runs[c] for c in unit)))
    chosen = pd.Series([best.get(kv) for kv in key], index=runs.index)
    unchosen = chosen.isna()
    if unchosen.any():
        data.notes.append(
            f"{', '.join(cols)} vary within arms evaluated on no validation task (--select-on, or <task>_val among "
            "the eval tasks): each of their settings is reported as its own arm, none chosen"
        )
        runs.loc[unchosen, "arm"] = runs.loc[unchosen, "arm"] + " " + runs.loc[unchosen, "setting"]
    keep = unchosen | (runs["setting"] == chosen)
    data.runs = runs[keep].drop(columns=["setting", "validation"]).reset_index(drop=True)
    kept = set(data.runs["run_id"])
    data.problems = data.problems[data.problems["run_id"].isin(kept)]
    if not data.metrics.empty:
        data.metrics = data.metrics[data.metrics["run_id"].isin(kept)]
    if not data.eval_curve.empty:
        data.eval_curve = data.eval_curve[data.eval_curve["run_id"].isin(kept)]
    if best:
        data.notes.append(
            f"each arm's {', '.join(cols)} chosen on its validation task ({', '.join(sorted(val_tasks))}, pass@{k}); "
            "the other settings' runs are in the settings table only"
        )
    return _sensitivity(scores, val_scores, best, unit, runs)


def _sensitivity(scores, val_scores, best: dict, unit: list[str], runs: pd.DataFrame) -> pd.DataFrame:
    """Every (arm, setting, test task): its validation and test scores, seeds, and whether it was chosen."""
    vals = runs.dropna(subset=["validation"]).drop_duplicates(unit).set_index(unit)["validation"]
    test = scores[~scores["eval_task"].isin(set(vals))].rename(columns={"score": "test_score"})
    rows = test.merge(val_scores, on=[*unit, "setting"], how="left")
    rows["validation_task"] = [
        vals.get(tuple(r[c] for c in unit) if len(unit) > 1 else r[unit[0]]) for r in rows.to_dict("records")
    ]
    rows["chosen"] = [best.get(tuple(r[c] for c in unit)) == r["setting"] for r in rows.to_dict("records")]
    columns = [*SETTINGS_COLUMNS, "chosen"] + (["task"] if "task" in unit else [])
    return rows[columns].sort_values(["arm", "eval_task", "setting"]).reset_index(drop=True)
