"""Read the report's inputs through the storage layer into tidy pandas frames (no statistics here).

Frames [our choice]:
* runs: one row per run: run_id, path, kind, status, every configuration column (`estimator_label`: the
  estimator's `Estimator.label`; `cell_arm`: the matrix cell's arm, index.parquet's `arm`), `arm` (the label of
  the run's group-by values) and `eval` (the eval folder used: a train run's eval/final, else its latest
  eval/step-N; an eval run's own folder; None when the run has no eval), `health` and `health_evidence`
  (`benchctl.report.health.classify` of the run's metrics and evaluations: ok, diverged, collapsed, stalled,
  entropy_decayed), `mechanism_acted_frac` and `inert_mechanisms` (`benchctl.report.health.mechanism_activity`
  of the run's `mechanism/<name>/acted` columns: the smallest fraction of steps on which a mechanism acted, NaN
  for a method without one; the comma-separated mechanisms under 5%);
* problems: run_id, eval_task, problem_id, k, value (that problem's unbiased pass@k in that run);
* metrics: run_id, step, then the run's train_metrics columns;
* eval_curve: run_id, step (-1 for a plain eval), tokens (rollout/tokens_total at that step), eval_task, pass@1,
  pass@1_se (its sampling standard error from the problems' n and c: `benchctl.report.health.eval_se`);
* asked: every run the inputs list after `--where`, whatever its status (failed, pending, ...), with its `arm`
  label: the seeds a comparison was asked for (`benchctl.report.lost_seeds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.errors import BenchctlError
from benchctl.report.config import ReportConfig, parse_where
from benchctl.report.health import classify, eval_se, mechanism_activity
from benchctl.results.runinfo import EVAL_KIND, eval_tasks, find_runs, read_eval_problems
from benchctl.results.train_run import list_evals, read_train_metrics

# The first of these any run has names the arm ("method"): a matrix cell's arm (index.parquet's `arm`, held as
# `cell_arm` beside the report's own `arm` label), else the estimator's label (a `benchctl train` run), else the model
# (a plain eval).  `--group-by arm` and `--where arm=...` name that column [our choice].
ARM_COLUMNS = ("cell_arm", "estimator_label", "model")
ARM = "arm"
VARYING = ("model", "recipe", "group_size")  # joined to the default group-by when they differ across runs
_SHORT = {"group_size": "G", "cell_arm": "", "estimator_label": "", "model": "", "estimator": ""}


@dataclass
class ReportData:
    """Everything the statistics and plots read (see the module docstring)."""

    runs: pd.DataFrame
    problems: pd.DataFrame
    metrics: pd.DataFrame
    eval_curve: pd.DataFrame
    group_by: tuple[str, ...]
    arm_column: str
    notes: list[str] = field(default_factory=list)
    settings: pd.DataFrame | None = None  # the swept-setting sensitivity (benchctl.report.tuning)
    asked: pd.DataFrame | None = None  # every run listed, any status, with `arm` (module docstring)
    refits: pd.DataFrame | None = None  # test values of each delete-one-seed re-choice (benchctl.report.tuning)
    refit_metrics: pd.DataFrame | None = None  # and the training metrics of its runs (benchctl.report.tuning)


def _runs_frame(config: ReportConfig) -> pd.DataFrame:
    refs = find_runs(config.inputs)
    rows = [
        {"run_id": i, "path": str(r.path), "kind": r.kind, "status": r.status, **dict(r.columns)}
        for i, r in enumerate(refs)
    ]
    frame = pd.DataFrame(rows).rename(columns={ARM: "cell_arm"})
    for text in config.where:
        cond = parse_where(text)
        cond = replace(cond, key=arm_column(frame) if cond.key == ARM else cond.key)
        if cond.key not in frame.columns:
            raise BenchctlError(
                f"--where {text!r}: unknown column {cond.key!r}; columns: "
                f"{', '.join(c for c in frame.columns if c not in ('run_id', 'kind'))}"
            )
        frame = frame[[cond.matches(None if pd.isna(v) else v) for v in frame[cond.key]]]
    if frame.empty:
        raise BenchctlError(f"no run left after --where {' '.join(config.where)}; {len(refs)} runs found")
    return frame.reset_index(drop=True)


def arm_column(runs: pd.DataFrame) -> str:
    """The first of ARM_COLUMNS that some run has (`model` when none has)."""
    return next((c for c in ARM_COLUMNS if c in runs and runs[c].notna().any()), "model")


def resolve_group_by(runs: pd.DataFrame, requested: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """(group-by columns, arm column).  Default: the arm column plus the VARYING columns that differ; `arm` in
    `requested` names the arm column."""
    arm = arm_column(runs)
    requested = tuple(arm if c == ARM else c for c in requested)
    if requested:
        bad = [c for c in requested if c not in runs.columns]
        if bad:
            raise BenchctlError(f"--group-by {bad[0]!r}: unknown column; columns: {', '.join(runs.columns)}")
        return tuple(requested), arm
    extra = [c for c in VARYING if c != arm and c in runs and runs[c].astype(str).nunique() > 1]
    return (arm, *extra), arm


def arm_label(row, group_by: tuple[str, ...]) -> str:
    """'ha_dw(lambda_scale=1.3) G=8': arm values first, other group-by columns as short=value."""
    parts = []
    for col in group_by:
        value = row.get(col)
        value = "-" if value is None or (isinstance(value, float) and np.isnan(value)) else value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        prefix = _SHORT.get(col, col)
        parts.append(f"{prefix}={value}" if prefix else str(value))
    return " ".join(parts)


def _eval_folder(path: Path, kind: str) -> Path | None:
    if kind == EVAL_KIND:
        return path
    evals = list_evals(path)
    return evals[-1][1] if evals else None


def _problem_rows(run_id: int, folder: Path, tasks: tuple[str, ...]) -> list[pd.DataFrame]:
    frames = []
    for task in eval_tasks(folder):
        if tasks and task not in tasks:
            continue
        table = read_eval_problems(folder, task).to_pandas()
        cols = [c for c in table.columns if c.startswith("pass@")]
        long = table.melt(id_vars=["problem_id"], value_vars=cols, var_name="k", value_name="value")
        long["k"] = long["k"].str.removeprefix("pass@").astype(int)
        long["run_id"], long["eval_task"] = run_id, task
        long["problem_id"] = long["problem_id"].astype(str)
        frames.append(long)
    return frames


def _eval_curve_rows(run_id: int, path: Path, kind: str, metrics: pd.DataFrame | None) -> list[dict]:
    folders = [(-1, path)] if kind == EVAL_KIND else [(s, p) for s, p in list_evals(path)]
    rows = []
    for step, folder in folders:
        if step is None:  # eval/final: after the last logged step
            step = int(metrics["step"].max()) if metrics is not None and len(metrics) else -1
        tokens = np.nan
        if metrics is not None and "rollout/tokens_total" in metrics and step >= 0:
            hit = metrics.loc[metrics["step"] <= step, "rollout/tokens_total"]
            tokens = float(hit.iloc[-1]) if len(hit) else 0.0  # step 0: before any rollout
        for task in eval_tasks(folder):
            table = read_eval_problems(folder, task)
            se = (
                eval_se(table.column("n").to_numpy(), table.column("c").to_numpy())
                if "c" in table.column_names
                else np.nan
            )
            p1 = table.column("pass@1").to_numpy()
            rows.append(
                {
                    "run_id": run_id,
                    "step": step,
                    "tokens": tokens,
                    "eval_task": task,
                    "pass@1": float(p1.mean()),
                    "pass@1_se": se,
                }
            )
    return rows


def _read_run(row, config: ReportConfig, notes: list[str]):
    path, kind, run_id = Path(row["path"]), row["kind"], row["run_id"]
    metrics = read_train_metrics(path) if kind != EVAL_KIND else None
    metrics = metrics.to_pandas() if metrics is not None else None
    folder = _eval_folder(path, kind)
    if folder is None:
        notes.append(f"{path}: no eval folder; only its training curves and cost are reported")
    elif kind != EVAL_KIND and folder.name != "final":
        notes.append(f"{path}: no eval/final; its pass@k comes from {folder.name}")
    problems = _problem_rows(run_id, folder, config.tasks) if folder is not None else []
    curve = _eval_curve_rows(run_id, path, kind, metrics)
    if metrics is not None:
        metrics.insert(0, "run_id", run_id)
    return (str(folder) if folder else None), problems, metrics, curve


def _health(row: dict, problems: list[pd.DataFrame], metrics: pd.DataFrame | None, curve: list[dict]):
    """The run's Health (benchctl.report.health) from what _read_run returned."""
    final = None
    if problems:
        final = pd.concat(problems).groupby(["eval_task", "k"], as_index=False)["value"].mean()
        final = final.rename(columns={"value": "pass@k"})
    tasks = tuple(row[c] for c in ("task", "eval_task_resolved") if isinstance(row.get(c), str))
    m = metrics.drop(columns="run_id") if metrics is not None else None
    return classify(m, pd.DataFrame(curve), final=final, tasks=tasks)


def load_report_data(config: ReportConfig) -> ReportData:
    """Find, filter and read every run; BenchctlError when nothing reportable is left."""
    runs = _runs_frame(config)
    notes = [f"{r.path}: status {r.status}, skipped" for r in runs.itertuples() if r.status != "done"]
    asked, runs = runs, runs[runs["status"] == "done"].reset_index(drop=True)
    if runs.empty:
        raise BenchctlError("no finished run (status done) among the inputs")
    group_by, arm = resolve_group_by(runs, config.group_by)
    runs["arm"] = [arm_label(r, group_by) for r in runs.to_dict("records")]
    asked = asked.assign(arm=[arm_label(r, group_by) for r in asked.to_dict("records")])
    problems, metrics, curve, folders, health, activity = [], [], [], [], [], []
    for row in runs.to_dict("records"):
        folder, p, m, c = _read_run(row, config, notes)
        folders.append(folder)
        problems += p
        metrics += [m] if m is not None else []
        curve += c
        health.append(_health(row, p, m, c))
        activity.append(mechanism_activity(m))
    runs["eval"] = folders
    runs["health"] = [h.state for h in health]
    runs["health_evidence"] = [h.evidence for h in health]
    runs["mechanism_acted_frac"] = [a.acted_frac for a in activity]
    runs["inert_mechanisms"] = [",".join(a.inert) for a in activity]
    empty = pd.DataFrame(columns=["run_id", "eval_task", "problem_id", "k", "value"])
    problems = pd.concat(problems, ignore_index=True) if problems else empty
    if config.ks:
        problems = problems[problems["k"].isin(config.ks)]
    return ReportData(
        runs,
        problems,
        pd.concat(metrics, ignore_index=True) if metrics else pd.DataFrame(),
        pd.DataFrame(curve),
        group_by,
        arm,
        notes,
        asked=asked,
    )
