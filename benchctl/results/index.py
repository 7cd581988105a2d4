"""Storage: RESULTS/index.parquet, one row per run of a matrix (read by `benchctl report`, written by the matrix).

Schema (`INDEX_COLUMNS` in this order, then `est.<param>` per estimator hyperparameter, then status, reason):
    run              string  run folder, relative to the results folder when inside it, else absolute
    model, task, estimator, estimator_label, recipe     string (null where a run has none); estimator_label is
                     `Estimator.label` as in RUN/config.json (e.g. `a_grae(base=dr_grpo)`)
    arm              string  the matrix cell's arm (`Cell.arm`: the entry's label, its grid point and the loss,
                     e.g. `ha_dw(lambda_scale=1.5)`, `dapo`, `grpo+cispo`); null for a run outside a matrix.
                     An index written before this column had none: its estimator_label held the arm
                     (`benchctl.results.runinfo.read_index_runs` reads it so)
    group_size, seed int64
    est.<param>      float64 when every value is a number, bool when every value is a bool, else string
    status           string  one of `STATUSES`
    reason           string  why a run failed (null otherwise)
Written atomically (whole file), so a killed matrix leaves the previous index or the new one, never half.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchctl.errors import BenchctlError
from benchctl.results.store import RUN_KIND as EVAL_KIND
from benchctl.results.store import write_table
from benchctl.results.train_run import TRAIN_KIND

INDEX_FILE = "index.parquet"
INDEX_COLUMNS = ("run", "model", "task", "estimator", "estimator_label", "arm", "recipe", "group_size", "seed")
STATUSES = ("pending", "running", "done", "failed")
_TYPES = {"group_size": pa.int64(), "seed": pa.int64()}
BASE_COLUMNS = ("model", "task", "estimator", "estimator_label", "recipe", "group_size", "seed")


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def config_columns(values: Mapping[str, Any], kind: str = TRAIN_KIND) -> dict[str, Any]:
    """Flat configuration columns of a run: `BASE_COLUMNS` first, every other scalar key, then `est.<param>`
    for each estimator hyperparameter.  Eval runs: model is the folder's model name, seed the sampling seed."""
    cols: dict[str, Any] = {name: None for name in BASE_COLUMNS}
    if kind == EVAL_KIND:
        model = values.get("model_resolved") or values.get("model")
        cols["model"] = Path(str(model)).name if model else None
        tasks = values.get("tasks") or ([values["task"]] if values.get("task") else [])
        cols["task"] = ",".join(tasks) if tasks else None
    for key, value in values.items():
        if key == "estimator_params" or (kind == EVAL_KIND and key in ("model", "task", "tasks")):
            continue
        cols[key] = _scalar(value)
    params = values.get("estimator_params") or {}
    cols.update({f"est.{k}": _scalar(v) for k, v in sorted(params.items())})
    return cols


def index_row(
    results_dir: Path, run: Path, config: Mapping[str, Any], status: str, reason: str | None = None
) -> dict[str, Any]:
    """One index row for `run` from its flat config values ({"model": ..., "estimator_params": {...}, ...})."""
    if status not in STATUSES:
        raise BenchctlError(f"index status {status!r}; choose one of: {', '.join(STATUSES)}")
    cols = config_columns(config)
    run, results_dir = Path(run), Path(results_dir)
    try:
        rel = str(run.resolve().relative_to(results_dir.resolve()))
    except ValueError:
        rel = str(run.resolve())
    row = {"run": rel, **{k: cols.get(k) for k in INDEX_COLUMNS[1:]}}
    row.update({k: v for k, v in cols.items() if k.startswith("est.")})
    row.update(status=status, reason=reason)
    return row


def _column(name: str, values: list) -> pa.Array:
    if name in _TYPES:
        return pa.array([None if v is None else int(v) for v in values], _TYPES[name])
    present = [v for v in values if v is not None]
    if name.startswith("est.") and present and all(isinstance(v, bool) for v in present):
        return pa.array(values, pa.bool_())
    if (
        name.startswith("est.")
        and present
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    ):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def index_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows from `index_row` -> the index table (column order and types as in the module docstring)."""
    est = sorted({k for row in rows for k in row if k.startswith("est.")})
    names = [*INDEX_COLUMNS, *est, "status", "reason"]
    return pa.table({name: _column(name, [row.get(name) for row in rows]) for name in names})


def write_index(results_dir: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write RESULTS/index.parquet atomically from every run's row."""
    path = Path(results_dir) / INDEX_FILE
    write_table(path, index_table(rows))
    return path


def read_index(results_dir: Path) -> pa.Table:
    """RESULTS/index.parquet; BenchctlError when missing or unreadable."""
    path = Path(results_dir) / INDEX_FILE
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise BenchctlError(f"{path} is missing or unreadable ({type(exc).__name__})") from None
