"""Each arm at its own best setting: a training setting swept within an arm (a matrix `train:` axis, e.g. `lr`) is
chosen on a validation task, and only then is the arm compared on the test tasks.

Rule [our choice]: the setting columns are the `benchctl train` settings that take more than one value among the
runs of one arm and training task (seeds, run folders and evaluation settings excluded). A run's validation task is
`--select-on`, else `<its training task>_val` when it evaluated that task (arith -> arith_val, arith_steps ->
arith_steps_val), so one report can hold arms trained on different tasks. A setting is scored by its mean pass@k at
the smallest k on the validation task, per seed; ties go to the first in sorted order.

Seed luck [our choice; docs/report.md, "Choosing a swept setting"]: validation and test are scored on the same
trained runs, so a setting chosen on all seeds carries its lucky runs into the test (with 4 equal learning rates
against a baseline with 1, the arm gained +1.95 points in benchmarks/report_tuning_bias.py). So the choice is
cross-fitted by default: for seed s the setting is chosen on the other seeds' validation scores
(leave-one-seed-out), and seed s's test value is the run of that setting at seed s, which played no part in
choosing it. With `tuning_seeds` (held-apart tuning seeds) the setting is chosen once on those seeds' validation
scores and their runs leave every test table. An arm with one seed is chosen on that seed (in-sample, with a
note). The `settings` table gives every setting's validation and test scores, `chosen_for_seeds` (the seeds whose
test value comes from it) and `method`. A note warns when an arm and its baseline were swept over different grids:
cross-fitting removes the seed luck, not the advantage of tuning one arm more than the other. Without a validation
task the settings become part of the arm (each setting its own row): choosing on the test tasks would be selection
on the test set.

The test [our choice; docs/report.md, "Choosing a swept setting"]: the cross-fit removes the bias, not the
dependence. Seed t's runs help choose the setting seed s is tested at, so the per-seed differences are correlated,
and a variance that takes them as independent is too small (under a null it rejected 6.9%, 8.2%, 11.0% at 5% with
3, 5, 10 seeds in benchmarks/report_tuning_bias.py). The seeds remain the independent
units of the whole procedure (choose, then average), so the seed part of the variance of a cross-fitted arm's
numbers is the delete-one-seed jackknife of that procedure, the choice redone without each seed in turn
(`crossfit.cross_fit_seed_variance`; Quenouille 1956, Tukey 1958; in expectation it does not understate the variance
of a symmetric statistic of independent units: Efron & Stein 1981, Ann. Statist. 9:586; the same correlation makes
naive cross-validation intervals too short: Bates, Hastie & Tibshirani 2023, arXiv:2104.00673). It replaces
var(seed means) / S, the seed part of `stats.crossed_variance` (the problem part and Satterthwaite's df as
before), in the comparisons and the arm's own pass@k; for an arm not swept it is var(seed means) / S exactly.
Measured: 3.6%, 2.6%, 2.6%, bias ~0; conservative, as Efron-Stein says (power 17.9% against 21.9% for one
held-apart seed at 5 seeds). Held-apart seeds need none: their choice is independent of every tested seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchctl.report.crossfit import REFIT_COLUMNS

NOT_SETTINGS = {
    *("model", "task", "estimator", "estimator_params", "recipe", "group_size", "seed", "out", "resume"),
    *("progress", "sources", "threads", "eval_task", "eval_every", "eval_every_tokens", "eval_n", "eval_k"),
    *("eval_limit", "eval_temperature", "save_every", "report_to", "allow_overlap"),
}
SETTINGS_COLUMNS = ["arm", "setting", "validation_task", "validation_score", "eval_task", "test_score", "seeds"]
LOO, HELD_APART, IN_SAMPLE = "leave-one-seed-out", "held-apart tuning seeds", "in-sample (one seed)"
REFIT_METRIC_COLUMNS = ["arm", "left_out", "seed", "metric", "value"]


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


def choose_per_seed(val: pd.DataFrame, has_run: pd.DataFrame, tuning_seeds: Sequence = (), without=None) -> dict:
    """{test seed: (setting, method)} from `val` (settings x seeds: mean validation score of each run) and `has_run`
    (settings x seeds, bool: a run exists). Leave-one-seed-out, or on `tuning_seeds` when given (module doc).
    `without`: a seed left out of the whole procedure (it neither chooses nor is tested: the jackknife's replicate).
    Scores are means over the choosing seeds that have a validation score; ties go to the first setting in sorted
    order."""
    settings = sorted(has_run.index)
    seeds = [s for s in dict.fromkeys([*has_run.columns, *val.columns]) if s != without]
    scores = val.reindex(index=settings, columns=seeds).to_numpy(dtype=float)  # (settings, seeds)
    runs = has_run.reindex(index=settings, columns=seeds, fill_value=False).to_numpy(dtype=bool)
    tuning = [i for i, s in enumerate(seeds) if s in set(tuning_seeds) and s in val.columns]
    out = {}
    for j, seed in enumerate(seeds):
        if (tuning and j in tuning) or seed not in has_run.columns:
            continue  # a tuning seed chooses, it is never tested
        choosers, method = (tuning, HELD_APART) if tuning else ([i for i in range(len(seeds)) if i != j], LOO)
        mean = _nanmean(scores[:, choosers])  # (settings,)
        if not np.isfinite(mean).any():
            mean, method = scores[:, j], IN_SAMPLE
        mean = np.where(runs[:, j] & np.isfinite(mean), mean, -np.inf)
        if np.isfinite(mean).any():  # highest score, ties to the first setting in sorted order
            out[seed] = (settings[int(np.argmax(mean))], method)
    return out


def _nanmean(scores: np.ndarray) -> np.ndarray:
    """(settings, seeds) -> (settings,) mean over the finite entries of each row, NaN where there is none."""
    finite = np.isfinite(scores)
    with np.errstate(invalid="ignore"):
        return np.where(finite, scores, 0.0).sum(axis=1) / finite.sum(axis=1)


def select_settings(
    data, select_on: str | None, baseline: str | None = None, tuning_seeds: Sequence[int] = ()
) -> pd.DataFrame:
    """Keep, for each arm and seed, the run of the setting chosen without that seed (module doc) in `data` (in
    place: runs and problems filtered, validation problems removed); returns the `settings` table (empty when no
    setting varies within an arm)."""
    data.before_selection = _before_selection(data)  # the looks of a sequential run choose again (sequential.py)
    runs, problems = data.runs, data.problems
    seed_key = runs["seed"].fillna(-1) if "seed" in runs else -1  # runs without a seed share one
    runs = runs.assign(validation=_validation_of(runs, problems, select_on), seed_key=seed_key)
    val_tasks = set(runs["validation"].dropna())
    data.problems = problems[~problems["eval_task"].isin(val_tasks)]
    data.refits = pd.DataFrame(columns=REFIT_COLUMNS)  # rows only where a setting is chosen leave-one-seed-out
    data.refit_metrics = pd.DataFrame(columns=REFIT_METRIC_COLUMNS)
    cols = setting_columns(runs)
    if not cols:
        return pd.DataFrame(columns=[*SETTINGS_COLUMNS, "chosen", "chosen_for_seeds", "method"])
    unit = _unit(runs)
    runs["setting"] = [_label(r, cols) for r in runs.to_dict("records")]
    k = int(problems["k"].min())
    at_k = problems[problems["k"] == k].merge(runs[["run_id", *unit, "setting", "seed_key", "validation"]])
    choices, replicates = _choices(runs, at_k, unit, tuning_seeds)
    data.refits = _refit_values(runs, data.problems, replicates, unit)
    data.refit_metrics = refit_metric_values(runs, data.metrics, replicates, unit)
    picked = [choices.get((tuple(r[c] for c in unit), r["seed_key"]), (None, None))[0] for _, r in runs.iterrows()]
    unchosen = runs["validation"].isna() & runs.groupby(unit)["validation"].transform(lambda v: v.isna().all())
    if unchosen.any():
        data.notes.append(
            f"{', '.join(cols)} vary within arms evaluated on no validation task (--select-on, or <task>_val among "
            "the eval tasks): each of their settings is reported as its own arm, none chosen"
        )
        runs.loc[unchosen, "arm"] = runs.loc[unchosen, "arm"] + " " + runs.loc[unchosen, "setting"]
    keep = unchosen | (runs["setting"] == pd.Series(picked, index=runs.index))
    _keep_runs(data, runs, keep)
    if tuning_seeds and getattr(data, "asked", None) is not None:  # held-apart seeds are never tested: not lost
        data.asked = data.asked[~data.asked["seed"].isin(list(tuning_seeds))]
    _notes(data, runs[~unchosen], cols, val_tasks, k, choices, baseline, tuning_seeds)
    return _sensitivity(at_k, runs[~unchosen], unit, choices)


def _before_selection(data):
    """A shallow copy of `data` before `select_settings` filters it (its frames are replaced, never changed in
    place; its notes are its own): `report.sequential` chooses the setting again at each look, on that look's seeds
    only (docs/report.md, "Seeds until decided")."""
    import copy

    raw = copy.copy(data)
    raw.notes = list(data.notes)
    raw.__dict__.pop("before_selection", None)
    return raw


def _choices(runs: pd.DataFrame, at_k: pd.DataFrame, unit: list[str], tuning_seeds: Sequence) -> tuple[dict, dict]:
    """({(unit key, seed): (setting, method)} for every arm (and training task) with a validation task, and for
    the leave-one-seed-out ones {(unit key, left-out seed, seed): setting}: the choice made without that seed)."""
    on_val = at_k[at_k["eval_task"] == at_k["validation"]]
    per_run = on_val.groupby([*unit, "setting", "seed_key"])["value"].mean().reset_index()
    out, replicates = {}, {}
    for key, part in runs.dropna(subset=["validation"]).groupby(unit):
        key = key if isinstance(key, tuple) else (key,)
        mine = per_run[(per_run[unit] == pd.Series(key, index=unit)).all(axis=1)]
        val = mine.pivot_table(index="setting", columns="seed_key", values="value")  # settings x seeds
        has_run = pd.crosstab(part["setting"], part["seed_key"]) > 0
        val = val.reindex(index=has_run.index, columns=sorted(set(val.columns) | set(has_run.columns)))
        chosen = choose_per_seed(val, has_run, tuning_seeds)
        for seed, choice in chosen.items():
            out[(key, seed)] = choice
        if len(has_run) < 2 or any(method != LOO for _, method in chosen.values()):
            continue  # one setting, or held apart: no choice depends on a tested seed; in-sample: no test
        for left_out in has_run.columns:
            for seed, (setting, _) in choose_per_seed(val, has_run, without=left_out).items():
                replicates[(key, left_out, seed)] = setting
    return out, replicates


def _refit_values(runs: pd.DataFrame, problems: pd.DataFrame, replicates: dict, unit: list[str]) -> pd.DataFrame:
    """REFIT_COLUMNS: for each delete-one-seed replicate of the choice, the test values of the runs it would test."""
    rows = [(*key, left_out, seed, setting) for (key, left_out, seed), setting in replicates.items()]
    picks = pd.DataFrame(rows, columns=[*unit, "left_out", "seed_key", "setting"])
    ids = picks.merge(runs[["run_id", *unit, "setting", "seed_key"]], on=[*unit, "setting", "seed_key"])
    values = ids.merge(problems[["run_id", "eval_task", "k", "problem_id", "value"]], on="run_id")
    return values.rename(columns={"seed_key": "seed"})[REFIT_COLUMNS]


def refit_metric_values(runs: pd.DataFrame, metrics: pd.DataFrame, replicates: dict, unit: list[str]) -> pd.DataFrame:
    """REFIT_METRIC_COLUMNS: for each delete-one-seed replicate of the choice, the training metrics of the runs it
    would test, one mean over the steps per run and metric (as a claim on a training metric reads a run)."""
    if metrics.empty or not replicates:
        return pd.DataFrame(columns=REFIT_METRIC_COLUMNS)
    per_run = metrics.drop(columns=["step"], errors="ignore").groupby("run_id").mean(numeric_only=True)
    long = per_run.reset_index().melt(id_vars="run_id", var_name="eval_task", value_name="value")
    long = long.dropna(subset=["value"]).assign(k=0, problem_id="run")
    values = _refit_values(runs, long, replicates, unit).rename(columns={"eval_task": "metric"})
    return values[REFIT_METRIC_COLUMNS].reset_index(drop=True)


def _keep_runs(data, runs: pd.DataFrame, keep: pd.Series) -> None:
    """Filter every frame of `data` to the kept runs."""
    data.runs = runs[keep].drop(columns=["setting", "validation", "seed_key"]).reset_index(drop=True)
    kept = set(data.runs["run_id"])
    data.problems = data.problems[data.problems["run_id"].isin(kept)]
    if not data.metrics.empty:
        data.metrics = data.metrics[data.metrics["run_id"].isin(kept)]
    if not data.eval_curve.empty:
        data.eval_curve = data.eval_curve[data.eval_curve["run_id"].isin(kept)]


def _notes(data, runs, cols, val_tasks, k: int, choices: dict, baseline, tuning_seeds) -> None:
    """How the settings were chosen; in-sample choices; arms swept over a grid other than their baseline's."""
    if not choices:
        return
    how = (
        f"on seeds {', '.join(map(str, tuning_seeds))} held apart (not tested)"
        if tuning_seeds
        else (
            "for each seed on the other seeds (leave-one-seed-out), so a lucky run never chooses its own setting, "
            "and the tests' seed variance is the delete-one-seed jackknife of that choice"
        )
    )
    data.notes.append(
        f"each arm's {', '.join(cols)} chosen on its validation task ({', '.join(sorted(val_tasks))}, pass@{k}) "
        f"{how}; the settings table says which setting each seed's test value comes from"
    )
    alone = sorted({key[0] for (key, _), (_, method) in choices.items() if method == IN_SAMPLE})
    if alone:
        data.notes.append(f"{', '.join(alone)}: one seed, so its setting was chosen on the run it is tested on")
    grids = runs.groupby("arm")["setting"].agg(lambda s: tuple(sorted(set(s)))).to_dict()
    from benchctl.report.stats import baseline_pairs

    for arm, base in baseline_pairs(data, baseline):
        if arm in grids and base in grids and grids[arm] != grids[base]:
            data.notes.append(
                f"{arm} was swept over {len(grids[arm])} setting(s) ({'; '.join(grids[arm])}), its baseline {base} "
                f"over {len(grids[base])} ({'; '.join(grids[base])}): the comparison includes the gain from tuning "
                "one arm more than the other"
            )


def _sensitivity(at_k: pd.DataFrame, runs: pd.DataFrame, unit: list[str], choices: dict) -> pd.DataFrame:
    """Every (arm, setting, test task): validation and test scores (all seeds), seeds, and the seeds it served."""
    at_k = at_k[at_k["run_id"].isin(set(runs["run_id"]))]
    vals = runs.dropna(subset=["validation"]).drop_duplicates(unit).set_index(unit)["validation"]
    scores = at_k.groupby([*unit, "setting", "eval_task"]).agg(score=("value", "mean"), seeds=("seed_key", "nunique"))
    scores = scores.reset_index()
    on_val = at_k[at_k["eval_task"] == at_k["validation"]]
    val_scores = on_val.groupby([*unit, "setting"])["value"].mean().rename("validation_score").reset_index()
    rows = scores[~scores["eval_task"].isin(set(vals))].rename(columns={"score": "test_score"})
    rows = rows.merge(val_scores, on=[*unit, "setting"], how="left")
    served, methods = {}, {}
    for (key, seed), (setting, method) in choices.items():
        served.setdefault((key, setting), []).append(seed)
        methods[key] = method if methods.get(key, method) == method else f"{methods[key]}; {method}"
    keys = [tuple(r[c] for c in unit) for r in rows.to_dict("records")]
    rows["validation_task"] = [vals.get(kv if len(unit) > 1 else kv[0]) for kv in keys]
    seeds_of = [sorted(served.get((kv, s), [])) for kv, s in zip(keys, rows["setting"])]
    rows["chosen"] = [bool(s) for s in seeds_of]
    rows["chosen_for_seeds"] = [",".join(str(int(x)) if float(x).is_integer() else str(x) for x in s) for s in seeds_of]
    rows["method"] = [methods.get(kv, "") for kv in keys]
    columns = [*SETTINGS_COLUMNS, "chosen", "chosen_for_seeds", "method"] + (["task"] if "task" in unit else [])
    return rows[columns].sort_values(["arm", "eval_task", "setting"]).reset_index(drop=True)
