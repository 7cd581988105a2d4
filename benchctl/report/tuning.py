"""Each arm at its own best setting: a training setting swept within an arm (a matrix `train:` axis, e.g. `lr`) is
chosen on a validation task, and only then is the arm compared on the test tasks.

Rule [our choice]: the setting columns are the `benchctl train` settings that take more than one value among the
runs of one arm (seeds, run folders and evaluation settings excluded). For each arm, every combination of their
values is scored by its mean pass@k at the smallest k on the validation task (all seeds); the best one is kept
(ties: the first in sorted order) and the arm's other runs leave every test table. The validation task itself
never enters the verdict tables. Without a validation task the settings become part of the arm (each setting its
own row), with a note: choosing on the test tasks would be selection on the test set. The `settings` table shows
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
    """Train settings that vary among the runs of one arm."""
    from benchctl.trainers.config import field_names

    names = [c for c in field_names() if c not in NOT_SETTINGS and c in runs]
    varying = runs.groupby("arm")[names].nunique(dropna=False) if names else pd.DataFrame()
    return [c for c in names if (varying[c] > 1).any()] if len(varying) else []


def _label(row, cols: list[str]) -> str:
    return ",".join(f"{c}={row[c]}" for c in cols)


def validation_task(tasks, requested: str | None) -> str | None:
    """The task to choose on: `requested`, else the one evaluated task whose name ends in `_val`, else None."""
    if requested:
        return requested
    found = sorted(t for t in tasks if str(t).endswith("_val"))
    return found[0] if len(found) == 1 else None


def select_settings(data, select_on: str | None) -> pd.DataFrame:
    """Keep each arm's best setting in `data` (in place: runs and problems filtered, validation problems removed);
    returns the `settings` sensitivity table (empty when no setting varies within an arm)."""
    runs, problems = data.runs, data.problems
    val = validation_task(problems["eval_task"].unique(), select_on)
    cols = setting_columns(runs)
    if not cols:
        if val is not None:
            data.problems = problems[problems["eval_task"] != val]
        return pd.DataFrame(columns=SETTINGS_COLUMNS)
    runs = runs.assign(setting=[_label(r, cols) for r in runs.to_dict("records")])
    k = int(problems["k"].min())
    at_k = problems[problems["k"] == k].merge(runs[["run_id", "arm", "setting", "seed"]], on="run_id")
    scores = at_k.groupby(["arm", "setting", "eval_task"]).agg(score=("value", "mean"), seeds=("seed", "nunique"))
    scores = scores.reset_index()
    if val is None:
        data.notes.append(
            f"{', '.join(cols)} vary within arms and no validation task was evaluated (--select-on, or a *_val eval "
            "task): each setting is reported as its own arm, none chosen"
        )
        runs["arm"] = runs["arm"] + " " + runs["setting"]
        data.runs = runs.drop(columns="setting")
        return _sensitivity(scores, None, {})
    on_val = scores[scores["eval_task"] == val].sort_values(["arm", "score", "setting"], ascending=[True, False, True])
    best = on_val.groupby("arm").head(1).set_index("arm")["setting"].to_dict()
    keep = runs["setting"] == runs["arm"].map(best)
    data.runs = runs[keep].drop(columns="setting").reset_index(drop=True)
    kept = set(data.runs["run_id"])
    data.problems = problems[problems["run_id"].isin(kept) & (problems["eval_task"] != val)]
    if not data.metrics.empty:
        data.metrics = data.metrics[data.metrics["run_id"].isin(kept)]
    if not data.eval_curve.empty:
        data.eval_curve = data.eval_curve[data.eval_curve["run_id"].isin(kept)]
    data.notes.append(
        f"each arm's {', '.join(cols)} chosen on {val} (pass@{k}); the other settings' runs are in "
        "the settings table only"
    )
    return _sensitivity(scores, val, best)


def _sensitivity(scores: pd.DataFrame, val: str | None, best: dict) -> pd.DataFrame:
    test = scores[scores["eval_task"] != val] if val else scores
    rows = test.rename(columns={"score": "test_score"})
    if val is not None:
        on_val = scores[scores["eval_task"] == val][["arm", "setting", "score"]].rename(
            columns={"score": "validation_score"}
        )
        rows = rows.merge(on_val, on=["arm", "setting"], how="left")
    else:
        rows["validation_score"] = float("nan")
    rows["validation_task"] = val
    rows["chosen"] = [best.get(a) == s for a, s in zip(rows["arm"], rows["setting"])]
    return rows[[*SETTINGS_COLUMNS, "chosen"]].sort_values(["arm", "eval_task", "setting"]).reset_index(drop=True)
