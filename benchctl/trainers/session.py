"""Everything a training run holds, built once (`open_session`): the one place where trainer state lives.

`Session` bundles the immutable parts (config, task, problems, estimator, engine, model, optimizer) with the
mutable `TrainState` (step, data position, counters, metrics so far). A resumed run restores the latest
checkpoint: policy weights, optimizer, scheduler, RNG and estimator state, TrainState; then it discards what
the killed run logged after that checkpoint and loads the policy's weights into the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.results import train_run
from benchctl.trainers import checkpoint
from benchctl.trainers.config import (
    TrainConfig,
    build_estimator,
    config_record,
    evaluates,
    loss_agg,
    resolved_lr,
    resolved_max_tokens,
    rollout_correction,
)
from benchctl.trainers.display import NullDisplay
from benchctl.trainers.trackers import Trackers


@dataclass
class TrainState:
    """What changes from step to step; saved whole in every checkpoint."""

    step: int = 0  # last finished step
    data_pos: int = 0  # prompts drawn so far (position in the seeded data order)
    tokens_total: int = 0  # rollout tokens generated so far
    samples_total: int = 0
    metrics: list[dict[str, float]] = field(default_factory=list)  # every finished step's metrics row


@dataclass
class Session:
    cfg: TrainConfig
    run: Path
    source: str  # the initial model (HF folder or hub id): engine start-up, reference policy, tokenizer files
    task: Any
    problems: list
    eval_task: str | None
    estimator: Any
    agg: str
    max_tokens: int
    device: str
    threads: int
    model: Any
    ref: Any
    optimizer: Any
    scheduler: Any
    engine: Any
    pad_id: int
    state: TrainState
    display: Any = field(default_factory=NullDisplay)
    stop_requested: bool = False
    compute_dtype: Any = None  # torch dtype of the policy's forward (`device.compute_context`); weights stay fp32
    correction: Any = None  # rollout_correction.RolloutCorrection
    probe: Any = None  # sync.Probe: the weight-sync check's fixed sequence and threshold
    param_stride: int = 1  # `weights.param_snapshot` stride of update/param_change
    trackers: Trackers = field(default_factory=lambda: Trackers([]))  # --report-to (a null object when none)


def train_task(name: str):
    """The training task: a JSON Lines file, or a registered task (its `train` split when it has one)."""
    from benchctl.tasks.overlap import training_task

    return training_task(name)


def eval_task_name(cfg: TrainConfig) -> str | None:
    """The held-out task (None when evaluation is off): `eval_task`, else the training task's `held_out_task`
    (arith -> arith's test split, math_train -> math500; none for gsm8k or a file: BenchctlError)."""
    from benchctl.tasks import get_task
    from benchctl.tasks.overlap import default_held_out

    if not evaluates(cfg):
        return None
    if cfg.eval_task is None:
        return default_held_out(cfg.task)
    get_task(cfg.eval_task)  # unknown names fail before any work
    return cfg.eval_task


def preflight(cfg: TrainConfig, eval_tasks=(), eval_limit: int | None = None, *, task=None, problems=None) -> None:
    """The refusals before any work (one BenchctlError line each):
    * a token-level estimator (`token_scores`, OAR) on a task whose completions are the answer alone
      (`shows_work` False, e.g. arith): it would equal its base estimator exactly;
    * an evaluation task sharing questions with the training task, unless `allow_overlap`: the run's own
      held-out task (`eval_task_name`, first `eval_limit` problems) and `eval_tasks` (first `eval_limit`; the
      matrix's final evaluation). `task`/`problems`: the training task and problems when already loaded."""
    from benchctl.tasks.overlap import check_held_out, questions

    task = task if task is not None else train_task(cfg.task)
    estimator = build_estimator(cfg)
    if estimator.token_scores is not None and not task.shows_work:
        raise BenchctlError(
            f"{estimator.label} reshapes the reasoning tokens before the answer, but {cfg.task!r} completions are "
            "the answer alone (no reasoning span: it would equal its base exactly); train it on a task that shows "
            "its work, e.g. --task arith_steps"
        )
    own = eval_task_name(cfg)
    pairs = ([(own, cfg.eval_limit)] if own else []) + [(name, eval_limit) for name in eval_tasks]
    if not pairs:
        return
    train = questions(problems) if problems is not None else None
    for name, limit in dict.fromkeys(pairs):
        check_held_out(
            cfg.task, name, data_dir=cfg.data_dir, limit=limit, allow_overlap=cfg.allow_overlap, train_questions=train
        )


def default_run_dir(cfg: TrainConfig, model_name: str, label: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.=-]+", "-", f"{model_name}-{label}-G{cfg.group_size}-s{cfg.seed}").strip("-")
    return Path("results") / "train" / slug


@lru_cache(maxsize=4)
def _order(seed: int, epoch: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n)


def draw(problems: list, seed: int, position: int):
    """Problem at `position` of the data order: one seeded permutation per pass over the problems."""
    epoch, index = divmod(position, len(problems))
    return problems[int(_order(seed, epoch, len(problems))[index])]


def _prepare_run(cfg: TrainConfig, estimator, model_ref) -> tuple[Path, int | None]:
    """Create the run folder with its config.json, or (on --resume) cut it back to its latest checkpoint."""
    run = Path(cfg.resume) if cfg.resume else Path(cfg.out or default_run_dir(cfg, model_ref.name, estimator.label))
    record = config_record(
        cfg,
        estimator_label=estimator.label,
        model_resolved=model_ref.path,
        run=str(run),
        loss_agg_resolved=loss_agg(cfg, estimator),
        max_tokens_resolved=resolved_max_tokens(cfg),
        eval_task_resolved=eval_task_name(cfg),
        lr_resolved=resolved_lr(cfg),
    )
    ckpt = train_run.latest_checkpoint_step(run) if cfg.resume else None
    if cfg.resume:
        train_run.discard_after(run, ckpt or 0)
        train_run.write_config(run, record)
    else:
        train_run.create_run(run, record)
    return run, ckpt


def open_session(cfg: TrainConfig) -> Session:
    """Load data, model, engine; create the run folder, or restore it from its latest checkpoint."""
    import torch

    from benchctl.engine import trainer_engine
    from benchctl.results.runs import resolve_model
    from benchctl.trainers.device import default_threads, resolve_device, resolve_dtype
    from benchctl.trainers.sync import build_probe, check_sync
    from benchctl.trainers.trackers import open_trackers
    from benchctl.trainers.weights import load_policy, param_stride

    estimator = build_estimator(cfg)
    eval_name = eval_task_name(cfg)
    task = train_task(cfg.task)
    problems = task.load(cfg.data_dir)
    preflight(cfg, task=task, problems=problems)  # refusals before the run folder is written
    model_ref = resolve_model(cfg.model)
    run, ckpt = _prepare_run(cfg, estimator, model_ref)
    device = resolve_device(cfg.device)
    weights = str(train_run.checkpoint_dir(run, ckpt) / "model") if ckpt else model_ref.path
    model = load_policy(weights, device, dtype=torch.float32)  # fp32 master weights, whatever the compute dtype
    ref = None
    if cfg.kl_coef > 0:
        ref = load_policy(model_ref.path, device, dtype=torch.float32).eval().requires_grad_(False)
    # fused AdamW [our choice]: one kernel for all parameters; on CPU 5-6x faster than the per-parameter loop on a
    # 25M model (benchmarks/train_vs_trl.py, as TRL's default adamw_torch_fused), same update rule.
    optimizer = torch.optim.AdamW(model.parameters(), lr=resolved_lr(cfg), weight_decay=cfg.weight_decay, fused=True)
    warmup = max(1, cfg.warmup_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    engine = trainer_engine(model_ref.path, device, cfg.gpu_memory_utilization)
    pad = engine.tokenizer.pad_token_id
    session = Session(
        cfg,
        run,
        model_ref.path,
        task,
        problems,
        eval_name,
        estimator,
        loss_agg(cfg, estimator),
        resolved_max_tokens(cfg),
        device,
        cfg.threads or default_threads(),
        model,
        ref,
        optimizer,
        scheduler,
        engine,
        engine.tokenizer.eos_token_id if pad is None else pad,
        TrainState(),
        compute_dtype=resolve_dtype(cfg.dtype, device),
        correction=rollout_correction(cfg),
        param_stride=param_stride(model),
    )
    session.probe = build_probe(engine, task, problems[0], session.compute_dtype, cfg.sync_check)
    if ckpt:
        restore(session, train_run.checkpoint_dir(run, ckpt))
    check_sync(session, ckpt or 0)  # the engine starts with the policy's weights (a resumed run: the restored ones)
    session.trackers = open_trackers(cfg.report_to, run, config=_tracker_config(cfg), resume_step=ckpt)
    return session


def _tracker_config(cfg: TrainConfig) -> dict:
    """The run's settings for wandb / trackio (JSON values)."""
    from benchctl.trainers.config import field_names

    values = {name: getattr(cfg, name) for name in field_names()}
    values["estimator_params"] = dict(cfg.estimator_params)
    return values


def restore(s: Session, path: Path) -> None:
    """Optimizer, scheduler, RNG, estimator and TrainState from checkpoint `path`; the engine gets the weights."""
    from benchctl.trainers.weights import engine_state_dict

    stored = checkpoint.load(path, optimizer=s.optimizer, scheduler=s.scheduler, estimator=s.estimator)
    s.state = TrainState(**stored)
    train_run.write_train_metrics(s.run, s.state.metrics)
    s.engine.load_weights(engine_state_dict(s.model))


def save_checkpoint(s: Session) -> Path:
    return checkpoint.save(
        s.run,
        s.state,
        model=s.model,
        source=s.source,
        optimizer=s.optimizer,
        scheduler=s.scheduler,
        estimator=s.estimator,
    )


def export_final_model(s: Session) -> Path:
    """RUN/model/: the final policy as an HF folder, built in a temporary sibling and renamed into place."""
    import os
    import shutil

    final = s.run / "model"
    scratch = s.run / f".model.{os.getpid()}.tmp"
    shutil.rmtree(scratch, ignore_errors=True)
    checkpoint.export_model(s.model, s.source, scratch)
    if final.exists():
        shutil.rmtree(final)
    os.replace(scratch, final)
    return final
