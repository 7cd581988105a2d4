"""Storage: what kind of run a folder holds, its configuration as flat columns, and finding runs under paths.

Two kinds of run folder carry a `config.json` with a `kind` marker and a `config` record
`{key: {"value": v, "source": s}}`: `benchctl-eval-run` (`benchctl eval` / `grade`, `benchctl.results.store`)
and `benchctl-train-run` (`benchctl train`, a matrix cell; `benchctl.results.train_run`).  A results folder of
a matrix lists its runs in `index.parquet` (`benchctl.results.index`).  Imports only other storage modules
(store, train_run, index), none of which imports this one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchctl.errors import BenchctlError
from benchctl.results.index import config_columns, read_index
from benchctl.results.store import RUN_KIND as EVAL_KIND
from benchctl.results.store import write_json
from benchctl.results.train_run import TRAIN_KIND

KINDS = (EVAL_KIND, TRAIN_KIND)
# Configuration columns every run gets in the report / index (None where a kind has no such value).


@dataclass(frozen=True)
class RunConfig:
    """A run folder's config.json: its kind, the value and source of each key, and any other top-level keys."""

    path: Path
    kind: str
    values: Mapping[str, Any]
    sources: Mapping[str, str]
    extra: Mapping[str, Any] = field(default_factory=dict)


def write_run_config(folder: Path, kind: str, record: Mapping[str, Mapping[str, Any]], **extra) -> Path:
    """Write FOLDER/config.json = {"kind": kind, "config": record, **extra} atomically."""
    path = Path(folder) / "config.json"
    write_json(path, {"kind": kind, "config": dict(record), **extra})
    return path


def _load(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_run_config(folder: Path) -> RunConfig:
    """FOLDER/config.json of a train or eval run; BenchctlError naming the folder otherwise."""
    folder = Path(folder)
    data = _load(folder / "config.json")
    if data is None or data.get("kind") not in KINDS:
        raise BenchctlError(f"{folder} is not a benchctl run folder (no config.json with kind {' or '.join(KINDS)})")
    record = data.get("config") or {}
    values = {k: v.get("value") if isinstance(v, dict) else v for k, v in record.items()}
    sources = {k: v.get("source", "?") if isinstance(v, dict) else "?" for k, v in record.items()}
    extra = {k: v for k, v in data.items() if k not in ("kind", "config")}
    return RunConfig(folder, data["kind"], values, sources, extra)


@dataclass(frozen=True)
class RunRef:
    """One run found under the report's inputs: its folder, kind, flat configuration, status in the index."""

    path: Path
    kind: str
    columns: Mapping[str, Any]
    status: str = "done"


def _ref(folder: Path, status: str = "done") -> RunRef:
    cfg = read_run_config(folder)
    return RunRef(folder, cfg.kind, config_columns(cfg.values, cfg.kind), status)


def _walk_runs(root: Path) -> list[Path]:
    """Run folders under `root` (not descending into a run: RUN/eval/final is part of RUN)."""
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        data = _load(here / "config.json")
        if data is not None and data.get("kind") in KINDS:
            found.append(here)
            dirnames[:] = []
        else:
            dirnames.sort()
    return found


def find_runs(paths: Iterable[Path | str]) -> list[RunRef]:
    """Runs named by `paths`: a run folder (train or eval), a results folder with index.parquet (its rows, any
    status), or any folder holding run folders below it.  Order: as given, then folder order; no duplicates."""
    refs: dict[Path, RunRef] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise BenchctlError(f"{path}: no such run or results folder")
        if (path / "index.parquet").is_file():
            found = read_index_runs(path)
        elif (path / "config.json").is_file():
            found = [_ref(path)]
        else:
            found = [_ref(p) for p in _walk_runs(path)]
            if not found:
                raise BenchctlError(
                    f"{path} holds no run folder (config.json with kind {' or '.join(KINDS)}) and no index.parquet"
                )
        for ref in found:
            refs.setdefault(ref.path.resolve(), ref)
    return list(refs.values())


def eval_tasks(eval_folder: Path) -> list[str]:
    """Tasks evaluated in a `benchctl eval` folder (sub-folders holding problems.parquet), sorted."""
    return sorted(p.parent.name for p in Path(eval_folder).glob("*/problems.parquet"))


def read_eval_problems(eval_folder: Path, task: str):
    """EVAL/<task>/problems.parquet: problem_id, n, c, mean, pass@k and maj@k columns per k."""
    path = Path(eval_folder) / task / "problems.parquet"
    if not path.is_file():
        raise BenchctlError(f"{path}: missing; tasks in {eval_folder}: {', '.join(eval_tasks(eval_folder)) or 'none'}")
    return pq.read_table(path)


def read_index_runs(results_dir: Path) -> list[RunRef]:
    """The index's rows as RunRefs (run path resolved against the results folder); columns: the run's config.json
    (when readable) updated with the index row, so a failed run without a config.json is still listed.  The
    estimator_label stays config.json's (`Estimator.label`); an index without an `arm` column (written before it
    had one) held the arm in its estimator_label, which becomes the row's `arm`."""
    out = []
    for row in read_index(results_dir).to_pylist():
        path = Path(row.pop("run"))
        path = path if path.is_absolute() else Path(results_dir) / path
        status = row.pop("status") or "done"
        row.pop("reason", None)
        if "arm" not in row:
            row["arm"] = row.pop("estimator_label", None)
        try:
            cfg = read_run_config(path)
            own = config_columns(cfg.values, cfg.kind)
            label = {"estimator_label": own["estimator_label"]} if own.get("estimator_label") is not None else {}
            kind, columns = cfg.kind, {**own, **row, **label}
        except BenchctlError:
            kind, columns = TRAIN_KIND, row
        out.append(RunRef(path, kind, columns, status))
    return out
