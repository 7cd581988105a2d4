"""Storage of a training run folder (`benchctl train`, one matrix cell): write and read, nothing else.

This module is the storage layer: it imports no trainer, engine, evaluation or report code, and the trainer,
the matrix and `benchctl report` / `replay` all call it.  Layout [our choice]:

    RUN/config.json                 {"kind": "benchctl-train-run", "config": {key: {"value": v, "source": s}}}
                                    s in flag|file|recipe|default|derived; keys in `CONFIG_KEYS`
    RUN/train_metrics.parquet       one row per step: `step` (int64, 1-based) then float64 columns with
                                    namespaced names (`METRIC_COLUMNS`, plus `est/<diagnostic>` ones)
    RUN/rollouts/part-NNNNN.parquet one part per step (NNNNN = the step), `ROLLOUT_SCHEMA`, one row per rollout
    RUN/checkpoints/step-NNNNNN/    checkpoints; RUN/checkpoints/latest is a text file naming the folder
    RUN/model/                      final HF model folder
    RUN/eval/step-NNNNNN/, RUN/eval/final/   `benchctl eval` folders (see `benchctl.results.store`)

Every file is written atomically (temporary name + rename), so a killed run leaves whole files only.  Because
a rollout part is named by its step, a resumed run simply rewrites the parts of the steps it redoes, and
`truncate_after(run, step)` drops anything logged after the checkpoint it resumes from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchctl.errors import BenchctlError
from benchctl.results.store import write_atomic, write_json, write_table

TRAIN_KIND = "benchctl-train-run"
METRICS_FILE = "train_metrics.parquet"
CONFIG_KEYS = (
    "model",
    "task",
    "estimator",
    "estimator_params",
    "estimator_label",
    "recipe",
    "group_size",
    "prompts_per_step",
    "steps",
    "lr",
    "loss_agg",
    "clip_low",
    "clip_high",
    "kl_coef",
    "seed",
    "max_tokens",
    "temperature",
)
METRIC_COLUMNS = (
    "reward/mean",
    "reward/std",
    "acr/all",
    "acr/all_wrong",
    "acr/all_correct",
    "adv/pos_sum",
    "adv/neg_sum",
    "adv/min",
    "adv/max",
    "policy/entropy",
    "policy/kl",
    "policy/clip_low",
    "policy/clip_high",
    "policy/grad_norm",
    "loss/total",
    "response/length_mean",
    "response/truncated",
    "logprob/engine_gap",
    "time/rollout",
    "time/reward",
    "time/advantage",
    "time/logprobs",
    "time/update",
    "time/sync",
    "time/eval",
    "time/step",
    "rollout/tokens",
    "rollout/tokens_total",
    "rollout/samples_total",
)  # documented order; `est/<name>` diagnostics go after `acr/*`, any other column at the end
ROLLOUT_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("group", pa.int32()),
        ("sample", pa.int32()),
        ("problem_id", pa.string()),
        ("reward", pa.float64()),
        ("advantage", pa.float64()),
        ("num_tokens", pa.int32()),
        ("finish_reason", pa.string()),
        ("completion", pa.string()),
    ]
)
_PART = re.compile(r"part-(\d{5,})\.parquet")


# ---- metrics ------------------------------------------------------------------------------------------------


def _metric_order(names: Sequence[str]) -> list[str]:
    known = [c for c in METRIC_COLUMNS if c in names]
    est = sorted(c for c in names if c.startswith("est/"))
    rest = [c for c in names if c not in known and c not in est and c != "step"]
    cut = METRIC_COLUMNS.index("adv/pos_sum")
    return (
        ["step"]
        + [c for c in known if METRIC_COLUMNS.index(c) < cut]
        + est
        + [c for c in known if METRIC_COLUMNS.index(c) >= cut]
        + rest
    )


def metrics_table(rows: Sequence[Mapping[str, float]]) -> pa.Table:
    """Per-step dicts ({"step": 1, "reward/mean": 0.4, ...}) -> the metrics table (step int64, others float64;
    a metric missing at some step is null there)."""
    names = list(dict.fromkeys(k for row in rows for k in row))
    if rows and "step" not in names:
        raise BenchctlError("every train metrics row needs a 'step'")
    cols = {}
    for name in _metric_order(names) if rows else ["step"]:
        values = [row.get(name) for row in rows]
        if name == "step":
            cols[name] = pa.array([int(v) for v in values], pa.int64())
        else:
            cols[name] = pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.table(cols)


def write_train_metrics(run: Path, rows: Sequence[Mapping[str, float]]) -> Path:
    """Write RUN/train_metrics.parquet (the whole file, atomically) from every step's metrics so far."""
    path = Path(run) / METRICS_FILE
    write_table(path, metrics_table(rows))
    return path


def read_train_metrics(run: Path) -> pa.Table | None:
    """RUN/train_metrics.parquet sorted by step, or None if the run has none yet."""
    path = Path(run) / METRICS_FILE
    if not path.is_file():
        return None
    table = _read(path)
    return table.sort_by("step")


def _read(path: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as exc:
        raise BenchctlError(f"{path} is unreadable ({type(exc).__name__}: {exc})") from None


# ---- rollouts -----------------------------------------------------------------------------------------------


def rollout_table(
    step: int,
    problem_ids: Sequence[str],
    rewards,
    advantages,
    num_tokens,
    finish_reasons: Sequence[str],
    completions: Sequence[str],
) -> pa.Table:
    """One step's rollouts in `ROLLOUT_SCHEMA` from (P, G)-shaped arrays/lists (group p = problem_ids[p]);
    finish_reasons / completions are (P, G) nested lists or flat lists of P*G in row-major order."""
    r = np.asarray(rewards, dtype=np.float64)  # (P, G)
    if r.ndim != 2 or len(problem_ids) != r.shape[0]:
        raise BenchctlError(f"rewards must be (P, G) with P = len(problem_ids); got {r.shape}, {len(problem_ids)}")
    P, G = r.shape
    a = np.asarray(advantages, dtype=np.float64).reshape(P, G)  # (P, G)
    toks = np.asarray(num_tokens, dtype=np.int64).reshape(P, G)  # (P, G)
    flat = lambda x: [v for row in x for v in row] if x and isinstance(x[0], (list, tuple)) else list(x)  # noqa: E731
    reasons, texts = flat(finish_reasons), flat(completions)
    if len(reasons) != P * G or len(texts) != P * G:
        raise BenchctlError(f"finish_reasons and completions need P*G = {P * G} entries")
    cols = {
        "step": np.full(P * G, step, np.int64),
        "group": np.repeat(np.arange(P, dtype=np.int32), G),
        "sample": np.tile(np.arange(G, dtype=np.int32), P),
        "problem_id": np.repeat(np.asarray(problem_ids), G),
        "reward": r.reshape(-1),
        "advantage": a.reshape(-1),
        "num_tokens": toks.reshape(-1),
        "finish_reason": reasons,
        "completion": texts,
    }
    return pa.table({k: pa.array(v, ROLLOUT_SCHEMA.field(k).type) for k, v in cols.items()}, schema=ROLLOUT_SCHEMA)


def write_rollouts(run: Path, step: int, table: pa.Table) -> Path:
    """Write one step's rollouts as RUN/rollouts/part-<step>.parquet (atomic; replaces a redone step's part)."""
    if table.schema != ROLLOUT_SCHEMA:
        table = table.select(ROLLOUT_SCHEMA.names).cast(ROLLOUT_SCHEMA)
    path = Path(run) / "rollouts" / f"part-{step:05d}.parquet"
    write_table(path, table)
    return path


def rollout_parts(run: Path) -> list[tuple[int, Path]]:
    """[(step, part path)] in step order."""
    found = [
        (int(m.group(1)), p) for p in (Path(run) / "rollouts").glob("part-*.parquet") if (m := _PART.fullmatch(p.name))
    ]
    return sorted(found)


def iter_rollout_steps(run: Path, columns: list[str] | None = None) -> Iterator[tuple[int, pa.Table]]:
    """Yield (step, that step's rollouts sorted by group then sample), one part in memory at a time."""
    for step, path in rollout_parts(run):
        table = _read(path, columns)
        order = [(c, "ascending") for c in ("step", "group", "sample") if c in table.column_names]
        yield step, table.sort_by(order) if order else table


def read_rollouts(run: Path, columns: list[str] | None = None) -> pa.Table:
    """Every logged rollout (all parts concatenated, step order); an empty `ROLLOUT_SCHEMA` table if none."""
    tables = [t for _, t in iter_rollout_steps(run, columns)]
    if not tables:
        schema = ROLLOUT_SCHEMA if columns is None else pa.schema([ROLLOUT_SCHEMA.field(c) for c in columns])
        return schema.empty_table()
    return pa.concat_tables(tables)


# ---- checkpoints, evals, resume ----------------------------------------------------------------------------


def checkpoint_dir(run: Path, step: int) -> Path:
    """RUN/checkpoints/step-NNNNNN."""
    return Path(run) / "checkpoints" / f"step-{step:06d}"


def mark_latest_checkpoint(run: Path, step: int) -> None:
    """Point RUN/checkpoints/latest (a text file, written atomically) at step-NNNNNN."""
    name = checkpoint_dir(run, step).name
    write_atomic(Path(run) / "checkpoints" / "latest", lambda tmp: tmp.write_text(name + "\n"))


def latest_checkpoint_step(run: Path) -> int | None:
    """The step RUN/checkpoints/latest names, or None when there is no checkpoint."""
    latest = Path(run) / "checkpoints" / "latest"
    if not latest.is_file():
        return None
    match = re.fullmatch(r"step-(\d+)", latest.read_text().strip())
    if match is None:
        raise BenchctlError(f"{latest} does not name a step-NNNNNN folder")
    return int(match.group(1))


def eval_dir(run: Path, step: int | None = None) -> Path:
    """RUN/eval/step-NNNNNN (periodic eval) or RUN/eval/final (step None)."""
    return Path(run) / "eval" / ("final" if step is None else f"step-{step:06d}")


def list_evals(run: Path) -> list[tuple[int | None, Path]]:
    """[(step, folder)] of the run's evals holding a config.json, step order, `final` (step None) last."""
    root = Path(run) / "eval"
    steps = sorted(
        (int(m.group(1)), p)
        for p in root.glob("step-*")
        if (m := re.fullmatch(r"step-(\d+)", p.name)) and (p / "config.json").is_file()
    )
    final = [(None, root / "final")] if (root / "final" / "config.json").is_file() else []
    return steps + final


def truncate_after(run: Path, step: int) -> None:
    """Resume support: drop metric rows and rollout parts of steps > `step` (logged after the checkpoint)."""
    metrics = read_train_metrics(run)
    if metrics is not None and len(metrics):
        kept = metrics.filter(pc.less_equal(metrics["step"], step))
        if len(kept) != len(metrics):
            write_table(Path(run) / METRICS_FILE, kept)
    for part_step, path in rollout_parts(run):
        if part_step > step:
            path.unlink(missing_ok=True)


# ---- run folder life cycle (the trainer's side) -------------------------------------------------------------


def create_run(run: Path, record: Mapping[str, Mapping]) -> None:
    """Start RUN/config.json; an existing non-empty folder is refused and left untouched."""
    run = Path(run)
    if run.exists() and (not run.is_dir() or any(run.iterdir())):
        hint = "continue it with --resume" if (run / "config.json").is_file() else "choose another --out"
        raise BenchctlError(f"run folder {run} already exists and is not empty; {hint}")
    write_config(run, record)


def write_config(run: Path, record: Mapping[str, Mapping]) -> None:
    """RUN/config.json = {"kind": TRAIN_KIND, "config": record}, atomically (also after a resume changed it)."""
    write_json(Path(run) / "config.json", {"kind": TRAIN_KIND, "config": dict(record)})


def read_config(run: Path) -> dict[str, dict]:
    """{key: {"value", "source"}} of a training run's RUN/config.json (a bare value reads as source "?")."""
    import json

    from benchctl.results.store import RUN_KIND as EVAL_KIND

    path = Path(run) / "config.json"
    if not path.is_file():
        raise BenchctlError(f"{run} is not a training run folder (no config.json)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("kind") not in (EVAL_KIND, TRAIN_KIND):
        raise BenchctlError(
            f"{Path(run)} is not a benchctl run folder (no config.json with kind {EVAL_KIND} or {TRAIN_KIND})"
        )
    if data["kind"] != TRAIN_KIND:
        raise BenchctlError(f"{run} is not a benchctl training run (config.json kind is not {TRAIN_KIND})")
    return {
        k: {"value": v.get("value"), "source": v.get("source", "?")}
        if isinstance(v, dict)
        else {"value": v, "source": "?"}
        for k, v in (data.get("config") or {}).items()
    }


def checkpoint_scratch(run: Path, step: int) -> Path:
    """An empty temporary sibling of checkpoints/step-N to build the checkpoint in."""
    import os
    import shutil

    path = checkpoint_dir(run, step).with_name(f".step-{step:06d}.{os.getpid()}.tmp")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def commit_checkpoint(run: Path, scratch: Path, step: int, keep: int = 2) -> Path:
    """Rename a finished scratch folder to checkpoints/step-N, point `latest` at it, keep the newest `keep`."""
    import os
    import shutil

    final = checkpoint_dir(run, step)
    if final.exists():
        shutil.rmtree(final)
    os.replace(scratch, final)
    mark_latest_checkpoint(run, step)
    done = sorted(p for p in final.parent.glob("step-*") if re.fullmatch(r"step-\d+", p.name))
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def discard_after(run: Path, step: int) -> None:
    """Resume: drop everything a killed run logged after checkpoint `step` (metrics, rollouts, evals,
    newer checkpoint folders, half-written temporaries: checkpoints, RUN/model/, atomic file writes)."""
    import shutil

    truncate_after(run, step)
    # RUN/.model.<pid>.tmp (final-model export) and the temporaries of atomic file writes
    for scratch in [*Path(run).glob(".*.tmp"), *(Path(run) / "rollouts").glob(".*.tmp")]:
        shutil.rmtree(scratch, ignore_errors=True) if scratch.is_dir() else scratch.unlink(missing_ok=True)
    for folder in (Path(run) / "eval", Path(run) / "checkpoints"):
        for path in folder.glob("*"):
            match = re.fullmatch(r"step-(\d+)", path.name)
            if (match and int(match.group(1)) > step) or path.name.endswith(".tmp"):
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
