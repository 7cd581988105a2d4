"""`benchctl train`: parse options, build a `TrainConfig` (defaults < recipe < --config file < flags), call
`benchctl.trainers.train`. Only options given on the command line count as flags (source `flag`)."""

from __future__ import annotations

from typing import Annotated

import typer

Opt = typer.Option
# issue 16: precision, bounded memory, rollout correction, the sync check, trackers (docs/gpu.md)
Dtype = Annotated[
    str | None, Opt("--dtype", help="Compute dtype: auto (bf16 on CUDA) | float32 | bfloat16; weights stay fp32.")
]
MicroBatchTokens = Annotated[
    int | None, Opt("--micro-batch-tokens", help="Rows x width per forward (bounded memory; default off).")
]
LogprobChunkTokens = Annotated[
    int | None, Opt("--logprob-chunk-tokens", help="Positions per vocabulary block (default 1024).")
]
GpuMemoryUtilization = Annotated[
    float | None, Opt("--gpu-memory-utilization", help="GPU share of the colocated vLLM (default 0.3).")
]
RolloutCorrection = Annotated[
    str | None,
    Opt("--rollout-correction", help="none | tis | seq-tis | mis | seq-mis | rs | seq-rs | geo-rs | icepop."),
]
RolloutCorrectionLow = Annotated[
    float | None, Opt("--rollout-correction-low", help="Lower ratio bound (default: the mode's).")
]
RolloutCorrectionHigh = Annotated[
    float | None, Opt("--rollout-correction-high", help="Upper ratio bound (default: the mode's).")
]
SyncCheck = Annotated[
    float | None, Opt("--sync-check", help="Max probe log-prob gap after a sync (fp32 1e-3, bf16 0.25; 0 off).")
]
ReportTo = Annotated[str | None, Opt("--report-to", help="none | tensorboard,wandb,trackio (a comma list).")]


def train_command(
    model: Annotated[str | None, Opt("--model", help="tiny (embedded), HF folder, hub id, or run folder.")] = None,
    task: Annotated[str | None, Opt("--task", help="Training task (default arith), or a JSON Lines task file.")] = None,
    estimator: Annotated[str | None, Opt("--estimator", help="Advantage estimator (benchctl estimators).")] = None,
    sets: Annotated[list[str] | None, Opt("--set", help="Estimator key=value (repeatable; base=NAME).")] = None,
    recipe: Annotated[str | None, Opt("--recipe", help="dapo | dr_grpo | gspo (spec §6).")] = None,
    config: Annotated[str | None, Opt("--config", help="YAML file of these settings; flags override it.")] = None,
    group_size: Annotated[int | None, Opt("--group-size", "-G", help="Rollouts per prompt (default 8).")] = None,
    prompts_per_step: Annotated[int | None, Opt("--prompts-per-step", help="Prompts per step (default 32).")] = None,
    steps: Annotated[int | None, Opt("--steps", help="Training steps (default 200).")] = None,
    token_budget: Annotated[int | None, Opt("--token-budget", help="Stop after this many rollout tokens.")] = None,
    lr: Annotated[float | None, Opt("--lr", help="AdamW learning rate (tiny: 3e-4, else 1e-6).")] = None,
    loss_agg: Annotated[
        str | None,
        Opt(
            "--loss-agg", help="seq-mean-token-mean | token-mean | seq-mean-token-sum-norm | token-mean-nondegenerate."
        ),
    ] = None,
    clip_low: Annotated[float | None, Opt("--clip-low", help="Lower ratio clip (default 0.2).")] = None,
    clip_high: Annotated[float | None, Opt("--clip-high", help="Upper ratio clip (default 0.2).")] = None,
    kl_coef: Annotated[float | None, Opt("--kl-coef", help="k3 KL coefficient to the initial policy.")] = None,
    epochs: Annotated[int | None, Opt("--epochs", help="Passes over each rollout batch.")] = None,
    mini_batches: Annotated[int | None, Opt("--mini-batches", help="Optimizer steps per epoch.")] = None,
    max_tokens: Annotated[int | None, Opt("--max-tokens", help="New tokens per rollout (arith: 8, else 1024).")] = None,
    temperature: Annotated[float | None, Opt("--temperature", help="Rollout temperature (default 1.0).")] = None,
    seed: Annotated[int | None, Opt("--seed", help="Seed (data order, sampling, mini-batches).")] = None,
    eval_every: Annotated[int | None, Opt("--eval-every", help="Held-out eval every N steps (0 = off).")] = None,
    eval_every_tokens: Annotated[
        int | None, Opt("--eval-every-tokens", help="Held-out eval every N rollout tokens (compute curves).")
    ] = None,
    eval_task: Annotated[str | None, Opt("--eval-task", help="Held-out task (default: the task's own).")] = None,
    allow_overlap: Annotated[
        bool | None, Opt("--allow-overlap", help="Run even if the eval task shares questions with training.")
    ] = None,
    save_every: Annotated[int | None, Opt("--save-every", help="Checkpoint every N steps (default 10).")] = None,
    data_dir: Annotated[str | None, Opt("--data-dir", envvar="BENCHCTL_DATA_DIR", help="Local data folder.")] = None,
    device: Annotated[str | None, Opt("--device", help="auto | cpu | cuda.")] = None,
    engine: Annotated[str | None, Opt("--engine", help="native (default) | verl: veRL data, config, launch.")] = None,
    dtype: Dtype = None,
    micro_batch_tokens: MicroBatchTokens = None,
    logprob_chunk_tokens: LogprobChunkTokens = None,
    gpu_memory_utilization: GpuMemoryUtilization = None,
    rollout_correction: RolloutCorrection = None,
    rollout_correction_low: RolloutCorrectionLow = None,
    rollout_correction_high: RolloutCorrectionHigh = None,
    sync_check: SyncCheck = None,
    report_to: ReportTo = None,
    out: Annotated[
        str | None, Opt("--out", help="Run folder (default results/train/<model>-<est>-G<G>-s<seed>).")
    ] = None,
    resume: Annotated[str | None, Opt("--resume", help="Continue RUN from its latest checkpoint.")] = None,
    progress: Annotated[bool, Opt("--progress/--no-progress", help="Live display on stderr (a terminal only).")] = True,
):
    """Train a policy with an advantage estimator on a task: rollouts from vLLM, clipped policy-gradient updates,
    live diagnostics, checkpoints and exact resume. Writes a run folder that `benchctl eval --model RUN` reads."""
    given = {k: v for k, v in locals().items() if v is not None and k not in ("sets", "config", "progress")}
    _run(given, sets, config, progress)


def _run(given: dict, sets: list[str] | None, config: str | None, progress: bool) -> None:
    """Build the config (defaults < recipe < file < flags) and train natively, or launch it with veRL."""
    from benchctl.trainers import build_config, train
    from benchctl.trainers.config import config_warnings, parse_set, read_config_file
    from benchctl.trainers.display import make_display

    if sets:
        given["estimator_params"] = parse_set(sets)
    if not progress:
        given["progress"] = False
    cfg = build_config(read_config_file(config) if config else None, given)
    for line in config_warnings(cfg):  # settings that cannot act in this run (also in RUN/config.json)
        typer.echo(f"warning: {line}", err=True)
    if cfg.engine == "verl":
        from benchctl.integrations.verl_launch import launch

        return _launched(launch(cfg), cfg.eval_task or cfg.task)
    result = train(cfg, display=make_display(cfg.progress, f"train {cfg.estimator} on {cfg.task}", cfg.steps))
    _summary(result, cfg.eval_task or cfg.task)
    if result.interrupted:
        raise typer.Exit(130)


def _launched(launch, task: str) -> None:
    if launch.ran:
        typer.echo(f"veRL done: {launch.steps} steps ingested -> {launch.run}")
        typer.echo(f"evaluate it: benchctl eval --model {launch.run} --tasks {task} --k 1..16")
        return
    typer.echo(f"veRL data, config and launch command written to {launch.folder}; not run here: {launch.reason}")
    typer.echo("on the cluster (veRL 0.9.1 + benchctl, from this folder or a copy of it), run:")
    typer.echo(f"  {launch.command}")
    typer.echo(f"then: benchctl ingest verl {launch.folder} --out {launch.run}")


def _summary(result, task: str) -> None:
    last = result.metrics[-1] if result.metrics else {}
    evals = {k: v for k, v in last.items() if k.startswith("eval/pass@") and not k.endswith(("_low", "_high"))}
    parts = [f"{result.steps} steps", f"reward {last.get('reward/mean', float('nan')):.3f}"]
    parts += [f"{k[5:]} {v:.3f}" for k, v in evals.items()]
    state = "stopped (checkpoint written)" if result.interrupted else "done"
    typer.echo(f"{state}: {', '.join(parts)} -> {result.run}")
    typer.echo(f"evaluate it: benchctl eval --model {result.run} --tasks {task} --k 1..16")


def register(app: typer.Typer) -> None:
    """Add `train` to the root app."""
    app.command("train")(train_command)
