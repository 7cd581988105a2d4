"""`benchctl train --engine verl` and matrix cells with `engine: verl`: the same experiment as a veRL run.

`prepare(cfg)` writes, into RUN/verl/ (`VERL_DIR`):

    train.parquet, val.parquet   the task's problems in veRL's RL dataset schema (`dataset_rows`): data_source,
                                 prompt (chat list, the task's own messages), ability, reward_model {style: rule,
                                 ground_truth}, extra_info {index, split, task, task_kind, problem_id, question, meta}
    reward.py                    `reward.custom_reward_function.path`: grades with benchctl's graders
                                 (`benchctl.integrations.verl_reward.compute_score`)
    overrides.txt                the Hydra overrides of `verl.trainer.main_ppo`, one per line (`overrides`)
    launch.sh                    the command: VERL_USE_EXTERNAL_MODULES=benchctl.integrations.verl, the file
                                 logger at RUN/verl/metrics.jsonl (an earlier one moved to metrics.<time>.jsonl:
                                 veRL truncates it), python -m verl.trainer.main_ppo <overrides> "$@"
    launch.json                  the resolved benchctl config record (what `benchctl ingest verl` stores)

veRL writes its outputs next to them (metrics.jsonl, rollouts/<step>.jsonl, checkpoints/global_step_N/), so
`benchctl ingest verl RUN` turns the folder into a benchctl run.  `launch(cfg)` prepares, then runs launch.sh
when a Python with veRL sees a CUDA GPU (`runtime`; `BENCHCTL_VERL_PYTHON` names that Python, default: this
one) and ingests the result; otherwise it returns what to run on the cluster.

Mapping [our choice where veRL has no exact counterpart]: estimator -> `algorithm.adv_estimator=benchctl_<name>`
with `+algorithm.benchctl.<param>`; G -> rollout.n; prompts_per_step -> data.train_batch_size; steps ->
trainer.total_training_steps; loss_agg -> actor.loss_agg_mode (same names in veRL's `core_algos.agg_loss`), and
for seq-mean-token-sum-norm actor.loss_scale_factor = max_tokens (veRL's default divides by the longest response
of each micro-batch, benchctl and Dr.GRPO by the generation budget); clip_low/high -> actor.clip_ratio_low/high;
kl_coef -> use_kl_loss + kl_loss_coef with `low_var_kl` (k3, as benchctl; veRL clamps it to [-10, 10]);
max_grad_norm -> actor.optim.clip_grad (0 = off -> inf; veRL 0.9.1's engine ignores actor.grad_clip); ratio=sequence
-> policy_loss gspo; epochs -> ppo_epochs; mini_batches -> ppo_mini_batch_size = P / mini_batches (prompts; veRL
multiplies by rollout.n).  Not expressible in veRL's main_ppo and refused
(`check_supported`): token_budget (veRL stops by steps), dynamic_sampling (DAPO's filter_groups lives in
veRL's recipe folder, not main_ppo), loss_agg token-mean-nondegenerate, OAR (no token scores; RL-ZVP, DBB and
CoDaPO run, with trainer.use_v1=false: their entropies, prompt ids (extra_info.index) and old log-probs come from
RayPPOTrainer's old-log-prob pass, benchctl.integrations.verl), --resume
(rerun launch.sh: veRL resumes from RUN/verl/checkpoints itself), and the GPU-path settings (docs/gpu.md) not
mapped to veRL's (dtype float32, micro_batch_tokens, rollout_correction, report_to, sync_check).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError

VERL_DIR = "verl"
TRAIN_DATA, VAL_DATA = "train.parquet", "val.parquet"
REWARD_FILE, OVERRIDES_FILE, LAUNCH_FILE, LAUNCH_RECORD = "reward.py", "overrides.txt", "launch.sh", "launch.json"
METRICS_LOG, ROLLOUT_DIR, CHECKPOINT_DIR = "metrics.jsonl", "rollouts", "checkpoints"
SEGMENT = "metrics.$(date +%s).jsonl"  # an earlier launch's log, moved aside by launch.sh (`verl_ingest.log_segments`)
VERL_LOSS_AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
PYTHON_ENV = "BENCHCTL_VERL_PYTHON"
MODULE = "benchctl.integrations.verl"
HERE = "{HERE}"  # placeholder for the launch folder: $HERE in launch.sh, the absolute path in overrides.txt
PROMPT_MARGIN = 256  # [our choice] chat-template tokens on top of the longest prompt's characters


@dataclass(frozen=True)
class VerlLaunch:
    """What `launch` did: the run folder, the command, whether veRL ran here (and the run was ingested)."""

    run: Path
    folder: Path
    command: str  # what to run on the cluster (or what ran here)
    ran: bool
    reason: str = ""  # why it did not run here
    steps: int | None = None  # steps ingested (when it ran)
    interrupted: bool = False  # TrainResult-like, for the matrix runner

    @property
    def pending(self) -> str | None:
        """One line for a matrix index when veRL must still run on the cluster, else None."""
        if self.ran:
            return None
        then = f"then benchctl ingest verl {self.run}"
        return f"veRL not run here ({self.reason}): run {self.command} on the cluster, {then}"


# ---- what veRL can express ------------------------------------------------------------------------------------


def needs_old_log_prob_pass(est) -> bool:
    """Whether the estimator takes what the plug-in keeps from RayPPOTrainer's old-log-prob pass (entropies for
    token_scores "entropy", old log-probs for seq_logprob, the dataset index for prompt_ids), which veRL 0.9.1's
    default v1 trainer does not run: such a run sets trainer.use_v1=false."""
    return est.token_scores == "entropy" or bool({"prompt_ids", "seq_logprob"} & est.inputs)


def check_supported(plan) -> None:
    """One BenchctlError line for a setting veRL's main_ppo cannot reproduce (see the module docstring); `plan`:
    the run's `benchctl.trainers.plan.Plan`."""
    cfg, est = plan.cfg, plan.estimator
    refusals = [
        (cfg.token_budget is not None, "token_budget: veRL stops by steps; set steps instead"),
        (cfg.dynamic_sampling, "dynamic_sampling: DAPO's group filter is not part of verl.trainer.main_ppo"),
        (cfg.codapo_resample, "codapo_resample: CoDaPO's focus steps are not part of verl.trainer.main_ppo"),
        (plan.loss_agg not in VERL_LOSS_AGGS, f"loss_agg {plan.loss_agg}: veRL has {VERL_LOSS_AGGS}"),
        (
            est.token_scores not in (None, "entropy"),
            f"estimator {cfg.estimator}: veRL passes no per-token importance scores",
        ),
        (cfg.prompts_per_step % cfg.mini_batches != 0, "mini_batches must divide prompts_per_step in veRL"),
        (cfg.resume is not None, "--resume: rerun RUN/verl/launch.sh, veRL resumes from its own checkpoints"),
        (cfg.eval_every_tokens > 0, "eval_every_tokens: veRL validates on a step cadence; set eval_every"),
        (cfg.overlong_shaping, "overlong_shaping: not mapped to veRL's reward manager; set overlong_shaping: false"),
        (cfg.dtype == "float32", "dtype float32: veRL's FSDP actor computes in bf16 over fp32 weights (dtype auto)"),
        (
            cfg.micro_batch_tokens is not None,
            "micro_batch_tokens: veRL sizes its own micro-batches (ppo_micro_batch_size_per_gpu, use_dynamic_bsz)",
        ),
        (cfg.rollout_correction != "none", "rollout_correction: not mapped to veRL's rollout_is / rollout_rs"),
        (cfg.report_to != "none", "report_to: veRL logs through its own trainer.logger"),
        (cfg.sync_check is not None, "sync_check: the weight-sync probe is part of benchctl's trainer only"),
        (
            cfg.loss is not None,
            "loss: a named policy loss is not mapped to veRL's policy_loss.loss_mode; use clip_low / clip_high /"
            " ratio (vanilla or gspo)",
        ),
    ]
    for refused, why in refusals:
        if refused:
            raise BenchctlError(f"engine=verl cannot run {why}")


def check_chat_template(model_path: str) -> None:
    """veRL's RLHFDataset applies the tokenizer's chat template to `prompt` (and drops rows where it fails): a
    local model folder without one is refused (hub ids are checked by veRL itself)."""
    config = Path(model_path) / "tokenizer_config.json"
    if not config.is_file():
        return
    has = "chat_template" in json.loads(config.read_text(encoding="utf-8"))
    if not has and not any(Path(model_path).glob("chat_template.*")):
        raise BenchctlError(
            f"engine=verl: the tokenizer of {model_path} has no chat template, which veRL's RLHFDataset applies to "
            "every prompt; use a chat model"
        )


def launch_run_dir(cfg) -> Path:
    """`cfg.out`, else results/train/<model>-<estimator label>-G<G>-s<seed> (as the native trainer names it)."""
    if cfg.out:
        return Path(cfg.out)
    from benchctl.results.runs import resolve_model

    name = resolve_model(cfg.model).name
    slug = re.sub(r"[^A-Za-z0-9_.=-]+", "-", f"{name}-{cfg.estimator}-G{cfg.group_size}-s{cfg.seed}").strip("-")
    return Path("results") / "train" / slug


# ---- data ---------------------------------------------------------------------------------------------------


def _task(name: str, split: str | None):
    """(task, kind): a JSON Lines file (kind `file`) or a registered task, its `split` when it has splits."""
    import inspect

    from benchctl.tasks import get_task
    from benchctl.tasks.jsonl import JsonlMathTask, is_task_file

    if is_task_file(name):
        return JsonlMathTask(name), "file"
    task = get_task(name)
    if split and "split" in inspect.signature(type(task).__init__).parameters:
        return get_task(name, split=split), "registered"
    return task, "registered"


def dataset_rows(task, kind: str, problems, split: str) -> list[dict]:
    """veRL RL dataset rows (veRL's data_preprocess/gsm8k.py schema) for benchctl problems; `extra_info` carries
    what the reward function needs to grade with benchctl's grader of `task`."""
    source = str(task.path) if kind == "file" else task.name
    return [
        {
            "data_source": task.name,
            "prompt": [dict(m) for m in task.messages(p)],
            "ability": task.kind,
            "reward_model": {"style": "rule", "ground_truth": p.gold},
            "extra_info": {
                "index": i,
                "split": split,
                "task": source,
                "task_kind": kind,
                "problem_id": p.id,
                "question": p.question,
                "meta": json.dumps(dict(p.meta), sort_keys=True, default=str),
            },
        }
        for i, p in enumerate(problems)
    ]


def write_dataset(path: Path, rows: list[dict]) -> None:
    import pyarrow as pa

    from benchctl.results.store import write_table

    write_table(Path(path), pa.Table.from_pylist(rows))


def task_data(cfg) -> tuple[list[dict], list[dict]]:
    """(train rows, val rows): the training task's train split (its `train_pool`, as the native trainer's); validation
    on `eval_task` or the task's default (test) split, first `eval_limit` problems (a task file without eval_task:
    its own first problems)."""
    from benchctl.trainers.build import training_pool

    task, kind = _task(cfg.task, "train")
    every = task.load(data_dir=cfg.data_dir)
    train = training_pool(every, cfg.train_pool, cfg.seed, cfg.task)
    if cfg.eval_task is None and kind == "file":
        val_task, val_kind, val = task, kind, every[: cfg.eval_limit]
    else:
        val_task, val_kind = _task(cfg.eval_task or cfg.task, None)
        val = val_task.load(data_dir=cfg.data_dir, limit=cfg.eval_limit)
    if len(train) < cfg.prompts_per_step:
        raise BenchctlError(f"task {cfg.task} has {len(train)} problems, fewer than prompts_per_step")
    return dataset_rows(task, kind, train, "train"), dataset_rows(val_task, val_kind, val, "test")


# ---- config and command -------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    """A Hydra override value: True/False, null, [json items], else str (inf stays `inf`, a Hydra float)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json.dumps(v) for v in value) + "]"
    return str(value)


def estimator_overrides(name: str, params: dict) -> list[str]:
    """`algorithm.adv_estimator=benchctl_<name>` and `+algorithm.benchctl.<key>=<value>` (nested dicts by key)."""
    out = [f"algorithm.adv_estimator=benchctl_{name}"]

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                walk(f"{prefix}.{key}", value[key])
        else:
            out.append(f"+algorithm.benchctl.{prefix}={_value(value)}")

    for key in sorted(params):
        walk(key, params[key])
    return out


def overrides(plan, model_path: str, n_train: int, max_prompt_length: int, name: str) -> list[str]:
    """Hydra overrides of `verl.trainer.main_ppo` for the run's `Plan` (paths under the placeholder `HERE`)."""
    cfg = plan.cfg
    P, G = cfg.prompts_per_step, cfg.group_size
    actor, agg = "actor_rollout_ref.actor", plan.loss_agg
    settings = {
        "algorithm.use_kl_in_reward": False,
        "data.train_files": f"{HERE}/{TRAIN_DATA}",
        "data.val_files": f"{HERE}/{VAL_DATA}",
        "data.train_batch_size": P,
        "data.max_prompt_length": max_prompt_length,
        "data.max_response_length": plan.max_tokens,
        "data.filter_overlong_prompts": True,
        "data.seed": cfg.seed,
        "actor_rollout_ref.model.path": model_path,
        f"{actor}.optim.lr": plan.lr,
        f"{actor}.optim.weight_decay": cfg.weight_decay,
        f"{actor}.optim.lr_warmup_steps": cfg.warmup_steps,
        f"{actor}.optim.clip_grad": cfg.max_grad_norm or math.inf,  # veRL 0.9.1 reads optim.clip_grad only
        f"{actor}.ppo_epochs": cfg.epochs,
        f"{actor}.ppo_mini_batch_size": P // cfg.mini_batches,
        f"{actor}.ppo_micro_batch_size_per_gpu": min(8, P * G // cfg.mini_batches),
        f"{actor}.loss_agg_mode": agg,
        **({f"{actor}.loss_scale_factor": plan.max_tokens} if agg == "seq-mean-token-sum-norm" else {}),
        f"{actor}.clip_ratio_low": cfg.clip_low,
        f"{actor}.clip_ratio_high": cfg.clip_high,
        f"{actor}.use_kl_loss": cfg.kl_coef > 0,
        f"{actor}.kl_loss_coef": cfg.kl_coef,
        f"{actor}.kl_loss_type": "low_var_kl",
        f"{actor}.entropy_coeff": 0,
        f"{actor}.policy_loss.loss_mode": "gspo" if cfg.ratio == "sequence" else "vanilla",
        f"{actor}.data_loader_seed": cfg.seed,
        f"{actor}.checkpoint.save_contents": ["model", "optimizer", "extra", "hf_model"],
        **_rollout_settings(cfg),
        **_trainer_settings(cfg, n_train, name),
    }
    if needs_old_log_prob_pass(plan.estimator):  # inputs the plug-in keeps from RayPPOTrainer (docs/scale-out.md)
        settings["trainer.use_v1"] = False
    params = dict(cfg.estimator_params)
    return estimator_overrides(cfg.estimator, params) + [f"{k}={_value(v)}" for k, v in settings.items()]


def _rollout_settings(cfg) -> dict[str, Any]:
    rollout = "actor_rollout_ref.rollout"
    return {
        f"{rollout}.name": "vllm",
        f"{rollout}.n": cfg.group_size,
        f"{rollout}.temperature": cfg.temperature,
        f"{rollout}.top_p": cfg.top_p,
        f"{rollout}.seed": cfg.seed,
        f"{rollout}.tensor_model_parallel_size": 1,
        f"{rollout}.gpu_memory_utilization": cfg.gpu_memory_utilization,
        f"{rollout}.log_prob_micro_batch_size_per_gpu": 8,
        f"{rollout}.val_kwargs.n": cfg.eval_n,
        f"{rollout}.val_kwargs.temperature": cfg.eval_temperature,
        f"{rollout}.val_kwargs.do_sample": True,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 8,
    }


def _trainer_settings(cfg, n_train: int, name: str) -> dict[str, Any]:
    P = cfg.prompts_per_step
    return {
        "reward.custom_reward_function.path": f"{HERE}/{REWARD_FILE}",
        "reward.custom_reward_function.name": "compute_score",
        "trainer.total_training_steps": cfg.steps,
        "trainer.total_epochs": math.ceil(cfg.steps / max(1, n_train // P)),  # veRL's loader drops the last batch
        "trainer.save_freq": cfg.save_every or cfg.steps,  # > 0, so the last step is saved (with hf_model)
        "trainer.test_freq": cfg.eval_every or -1,
        "trainer.val_before_train": cfg.eval_every > 0,
        "trainer.logger": ["console", "file"],
        "trainer.rollout_data_dir": f"{HERE}/{ROLLOUT_DIR}",
        "trainer.default_local_dir": f"{HERE}/{CHECKPOINT_DIR}",
        "trainer.project_name": "benchctl",
        "trainer.experiment_name": name,
        "trainer.n_gpus_per_node": 1,
        "trainer.nnodes": 1,
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": MODULE,
    }


def launch_script(items: list[str], run_name: str) -> str:
    """launch.sh: paths relative to the script's folder, extra overrides appended by "$@" (Hydra: last wins)."""
    lines = [
        "#!/usr/bin/env bash",
        f"# benchctl train --engine verl: {run_name}. Needs veRL 0.9.1 and benchctl (pip install --no-deps -e",
        '# benchctl; math tasks also "math-verify==0.9.0"). More GPUs: bash launch.sh trainer.n_gpus_per_node=8',
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        f"export VERL_USE_EXTERNAL_MODULES={MODULE}",
        f'export VERL_FILE_LOGGER_PATH="$HERE/{METRICS_LOG}"',
        "# veRL's FileLogger truncates its file: keep an earlier run's log as a segment benchctl ingest reads first",
        f'if [ -s "$VERL_FILE_LOGGER_PATH" ]; then mv "$VERL_FILE_LOGGER_PATH" "$HERE/{SEGMENT}"; fi',
        'exec "${PYTHON:-python3}" -m verl.trainer.main_ppo \\',
    ]
    for item in items:
        quoted = '"' + re.sub(r'([\\"$`])', r"\\\1", item).replace(HERE, "$HERE") + '"'
        lines.append(f"    {quoted} \\")
    lines.append('    "$@"')
    return "\n".join(lines) + "\n"


REWARD_SHIM = '''"""veRL's reward function (reward.custom_reward_function.path), written by benchctl: its graders."""

from benchctl.integrations.verl_reward import compute_score  # noqa: F401
'''


# ---- prepare, run -------------------------------------------------------------------------------------------


def prepare(cfg) -> tuple[Path, Path, list[str]]:
    """Write RUN/verl/ (module docstring); returns (run, folder, overrides with absolute paths)."""
    from benchctl.results.runs import resolve_model
    from benchctl.results.store import write_json
    from benchctl.trainers.plan import record, resolve

    plan = resolve(cfg)
    check_supported(plan)
    model = resolve_model(cfg.model)
    check_chat_template(model.path)  # refused, like check_supported, before a file is written
    run = launch_run_dir(cfg)
    folder = run / VERL_DIR
    folder.mkdir(parents=True, exist_ok=True)
    train, val = task_data(cfg)
    write_dataset(folder / TRAIN_DATA, train)
    write_dataset(folder / VAL_DATA, val)
    longest = max(len(m["content"]) for row in train + val for m in row["prompt"])
    items = overrides(plan, model.path, len(train), longest + PROMPT_MARGIN, run.name)
    (folder / REWARD_FILE).write_text(REWARD_SHIM)
    (folder / LAUNCH_FILE).write_text(launch_script(items, run.name))
    (folder / LAUNCH_FILE).chmod(0o755)
    absolute = [item.replace(HERE, str(folder.resolve())) for item in items]
    (folder / OVERRIDES_FILE).write_text("\n".join(absolute) + "\n")
    run_values = {"estimator_label": cfg.estimator, "model_resolved": model.path, "model_source": model.source}
    launch_record = record(plan, **run_values, run=str(run))
    write_json(folder / LAUNCH_RECORD, {"kind": "benchctl-verl-launch", "config": launch_record})
    return run, folder, absolute


def runtime(python: str | None = None) -> tuple[str, int, str]:
    """(python, CUDA GPUs it sees, reason it cannot run veRL or ""): `python` imports verl and torch and counts
    `torch.cuda.device_count()` in a child process (nothing heavy is imported here)."""
    python = python or os.environ.get(PYTHON_ENV) or sys.executable
    code = "import verl, torch; print(torch.cuda.device_count())"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return python, 0, f"{python} could not be started ({type(exc).__name__})"
    if out.returncode != 0:
        return python, 0, f"veRL is not importable by {python} (set {PYTHON_ENV} to a Python with verl==0.9.1)"
    gpus = int(out.stdout.split()[-1])
    return python, gpus, "" if gpus > 0 else f"no CUDA GPU visible to {python}"


def launch_command(folder: Path, python: str | None = None, gpus: int | None = None) -> list[str]:
    """argv of launch.sh (PYTHON picks the interpreter; `gpus` appends trainer.n_gpus_per_node)."""
    argv = ["bash", str(folder / LAUNCH_FILE)]
    if gpus:
        argv.append(f"trainer.n_gpus_per_node={gpus}")
    return argv if python is None else ["env", f"PYTHON={python}", *argv]


def finished(cfg, folder: Path) -> bool:
    """veRL already logged the run's last step in RUN/verl/metrics.jsonl (ran on the cluster)."""
    from benchctl.integrations.verl_ingest import read_metrics_log

    log = folder / METRICS_LOG
    return log.is_file() and any(row["step"] >= cfg.steps for row in read_metrics_log(log))


def launch(cfg) -> VerlLaunch:
    """Prepare RUN/verl/, then: veRL's outputs already complete -> ingest them; veRL and a GPU here -> run
    launch.sh (log in RUN/verl/launch.log) and ingest; otherwise return the command to run on the cluster."""
    from benchctl.integrations.verl_ingest import ingest

    run, folder, _ = prepare(cfg)
    shown = shlex.join(["bash", str(folder / LAUNCH_FILE)])
    if finished(cfg, folder):
        return VerlLaunch(run, folder, shown, True, steps=ingest(folder, run).steps)
    python, gpus, reason = runtime()
    if reason:
        return VerlLaunch(run, folder, shown, False, reason)
    argv = launch_command(folder, python, gpus)
    with open(folder / "launch.log", "ab") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        from benchctl.errors import KilledError
        from benchctl.matrix.failure import exit_status_cause

        cause = exit_status_cause(code)  # ended by a signal: a matrix retries the cell
        error, why = (KilledError, f" ({cause})") if cause else (BenchctlError, "")
        raise error(f"veRL exited with status {code}{why}; its log: {folder / 'launch.log'}")
    return VerlLaunch(run, folder, shlex.join(argv), True, steps=ingest(folder, run).steps)
