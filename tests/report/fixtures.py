"""Small hand-made run folders (train runs with evals, plain eval folders, a results folder with an index),
written through the storage layer only (no trainer, no engine)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from benchctl.results import store, tables
from benchctl.results.index import INDEX_FILE, index_row, write_index
from benchctl.results.runinfo import write_run_config
from benchctl.results.store import RUN_KIND as EVAL_KIND
from benchctl.results.store import write_table
from benchctl.results.train_run import (
    TRAIN_KIND,
    eval_dir,
    mark_latest_checkpoint,
    rollout_table,
    write_rollouts,
    write_train_metrics,
)


def record(values: dict, source: str = "flag") -> dict:
    return {k: {"value": v, "source": source} for k, v in values.items()}


def write_eval(folder: Path, task: str, correct: dict[str, list[bool]], ks=None, model="m", seed=0) -> None:
    """An eval folder in the exact `benchctl eval` layout from per-problem verdict lists (ks: powers of two <= n)."""
    n_min = min(len(v) for v in correct.values())
    ks = ks or tuple(k for k in (1, 2, 4, 8, 16) if k <= n_min)
    write_run_config(
        folder,
        EVAL_KIND,
        record({"model": model, "tasks": [task], "ks": list(ks), "seed": seed}),
        identity={"model": model},
    )
    stats = {
        pid: tables.ProblemStats(len(v), int(sum(v)), tuple(str(i) for i in range(len(v))), tuple(v))
        for pid, v in correct.items()
    }
    ids = list(correct)
    problems = tables.problem_table(ids, stats, ks)
    store.write_table(folder / task / "problems.parquet", problems)
    store.write_table(
        folder / task / "summary.parquet",
        tables.summary_table(problems, ks, task=task, model=model, resamples=50, confidence=0.95, seed=0),
    )
    store.write_overall_summary(folder)


def train_config(estimator: str, seed: int, group_size: int = 4, params=None, label=None) -> dict:
    return {
        "model": "tiny",
        "task": "arith",
        "estimator": estimator,
        "estimator_params": params or {},
        "estimator_label": label or estimator,
        "recipe": None,
        "group_size": group_size,
        "prompts_per_step": 2,
        "steps": 3,
        "lr": 1e-5,
        "loss_agg": "token_mean",
        "clip_low": 0.2,
        "clip_high": 0.28,
        "kl_coef": 0.0,
        "seed": seed,
        "max_tokens": 16,
        "temperature": 1.0,
    }


def write_train_run(
    run: Path,
    config: dict,
    correct: dict[str, list[bool]],
    steps: int = 3,
    tokens_per_step: int = 100,
    task: str = "arith",
    rng_seed: int = 0,
    metrics: dict[str, list[float]] | None = None,
) -> None:
    """A train run: config, per-step metrics and rollouts, a checkpoint pointer, and eval/final.  `metrics`:
    column -> one value per step, replacing (or adding to) the default metric rows."""
    write_run_config(run, TRAIN_KIND, record(config))
    rng = np.random.default_rng(rng_seed)
    G, P = config["group_size"], config["prompts_per_step"]
    rows = []
    for step in range(1, steps + 1):
        rewards = (rng.random((P, G)) < 0.5).astype(float)  # (P, G)
        adv = rewards - rewards.mean(axis=1, keepdims=True)  # (P, G)
        write_rollouts(
            run,
            step,
            rollout_table(
                step,
                [f"p{step}-{p}" for p in range(P)],
                rewards,
                adv,
                np.full((P, G), 5),
                ["stop"] * (P * G),
                ["x"] * (P * G),
            ),
        )
        rows.append(
            {
                "step": step,
                "reward/mean": float(rewards.mean()),
                "acr/all": 0.0,
                "est/anchor": 0.1 * step,
                "time/rollout": 2.0,
                "time/update": 1.0,
                "time/step": 3.5,
                "rollout/tokens": tokens_per_step,
                "rollout/tokens_total": tokens_per_step * step,
                "rollout/samples_total": P * G * step,
                "policy/entropy": 1.0 / step,
                "response/length_mean": 5.0,
            }
        )
    for col, values in (metrics or {}).items():
        for row, value in zip(rows, values, strict=True):
            row[col] = value
    write_train_metrics(run, rows)
    mark_latest_checkpoint(run, steps)
    write_eval(eval_dir(run), task, correct, model=run.name, seed=config["seed"])


def write_matrix(results: Path, cells: list[tuple], steps: int = 3, old_index: bool = False) -> list[Path]:
    """cells: [(name, train config, per-problem verdicts[, metrics override])] -> RESULTS/runs/<name> +
    RESULTS/index.parquet.  A config's `arm` (default: its estimator_label) goes to the index only, as the matrix
    writes it; `old_index`: an index as written before its `arm` column (its estimator_label held the arm)."""
    paths, rows = [], []
    for i, (name, config, correct, *metrics) in enumerate(cells):
        run = results / "runs" / name
        own = {k: v for k, v in config.items() if k != "arm"}
        write_train_run(run, own, correct, steps=steps, rng_seed=i, metrics=metrics[0] if metrics else None)
        paths.append(run)
        arm = config.get("arm", config["estimator_label"])
        row = index_row(results, run, {**own, "arm": arm}, "done")
        rows.append({k: v for k, v in row.items() if k != "arm"} | {"estimator_label": arm} if old_index else row)
    if old_index:
        write_table(results / INDEX_FILE, pa.Table.from_pylist(rows))
    else:
        write_index(results, rows)
    return paths
