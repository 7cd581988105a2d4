"""What a training run is built from, and `build(cfg)` that builds it: the typed pieces the loop passes around.

    Sampler    engine, task, problems in their seeded order, sampling settings, reward shaping   (rollout, reward)
    Policy     model, reference, optimizer, scheduler, device, precision, cores                  (loss, update, sync)
    Objective  aggregation, clip range, ratio, KL coefficient, rollout correction             (loss)
    RunFolder  RUN/: config.json, metrics, rollouts, checkpoints (`benchctl.trainers.run_folder`) (log, resume)
    TrainState the counters a step advances (step, data position, tokens, samples)             (every step)

plus the estimator (`est.advantages`, the one registry call) and the sync probe. Every value derived from the
settings comes from the run's `Plan` (`benchctl.trainers.plan.resolve`, the first thing `build` does). `build` also
holds the refusals made before any file is written (`preflight`) and the seeded data order (`training_pool`, `draw`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.trainers import run_folder
from benchctl.trainers.config import TrainConfig, field_names
from benchctl.trainers.plan import Plan, record, resolve
from benchctl.trainers.run_folder import RunFolder, TrainState
from benchctl.trainers.trackers import Trackers

if TYPE_CHECKING:  # annotations only: torch, transformers and vLLM load when a run is built
    import torch
    from transformers import PreTrainedModel

    from benchctl.engine import Engine, SamplingConfig
    from benchctl.estimators import Estimator
    from benchctl.losses import Loss as PolicyLoss
    from benchctl.results.runs import ResolvedModel
    from benchctl.tasks.base import Task
    from benchctl.trainers.rollout_correction import RolloutCorrection
    from benchctl.trainers.sync import Probe


@dataclass(frozen=True)
class Sampler:
    """What the rollout reads: the engine, the task and its problems in their seeded order, how many prompts a
    step draws and how they are sampled (DAPO's dynamic sampling: up to `max_rounds` rounds), and the reward's
    overlong shaping (DAPO Eq. 13, `shaping.overlong_penalty`; penalty 0: off) and verifier noise (`reward_flip`)."""

    engine: Engine  # in-process vLLM
    task: Task  # render, grade
    problems: list  # the problems trained on (`training_pool`: all, or the run's `train_pool`)
    sampling: SamplingConfig  # n = G, temperature, top_p, max_tokens, seed, logprobs
    seed: int  # the data order's seed
    prompts_per_step: int
    dynamic_sampling: bool
    max_rounds: int  # 1 without dynamic sampling
    overlong_buffer: int
    overlong_penalty: float
    reward_flip: float = 0.0  # a noisy verifier: probability of flipping each correctness reward (control arms)
    focus_quantile: float | None = None  # CoDaPO's resampling (`trainers.focus`): the value quantile kept; None: off
    focus_repeat: int = 4  # CoDaPO's resampling: groups per kept question on a focus step

    def prompts(self, start: int, count: int) -> list:
        """Problems at positions start .. start+count-1 of the seeded data order."""
        return [draw(self.problems, self.seed, pos) for pos in range(start, start + count)]


@dataclass(frozen=True)
class Policy:
    """The trained model and what its update needs: the frozen reference (KL term; None without), AdamW and its
    warm-up schedule, the device, the forward's precision over fp32 master weights, the cores, the pad token, and
    the source model (tokenizer files of every export). Complete when built (`build_policy`)."""

    model: PreTrainedModel  # causal LM, fp32 weights
    ref: PreTrainedModel | None  # the initial model, frozen; None when kl_coef = 0
    optimizer: torch.optim.Optimizer  # AdamW
    scheduler: torch.optim.lr_scheduler.LRScheduler  # linear warm-up
    source: str  # the initial model (HF folder or hub id)
    device: str
    compute_dtype: torch.dtype  # of the forward (`device.compute_context`)
    threads: int
    pad_id: int  # the source tokenizer's pad token, else its EOS (as the engine's tokenizer of the same folder)
    param_stride: int = 1  # `weights.param_snapshot` stride of update/param_change


@dataclass(frozen=True)
class Objective:
    """The objective the update minimises: the policy loss from the registry (`benchctl.losses`: ppo_clip, gspo,
    cispo, ...), its aggregation (`benchctl.losses.aggregation`), the k3 KL coefficient to the reference, and
    the rollout correction of the engine/trainer mismatch."""

    policy_loss: PolicyLoss  # loss(logp, old_logp, adv, mask, weights, kl_coef=, ref_log_prob=)
    agg: str
    kl_coef: float
    max_tokens: int  # the constant of seq-mean-token-sum-norm (Dr.GRPO)
    correction: RolloutCorrection

    def active_rows(self, token_adv, mask):
        """Rows (N,) whose loss can be non-zero: some real token with a non-zero advantage, or any row when KL is on.

        A row with A = 0 on every token has l_pg = max(-0 r, -0 clip(r)) = 0 and zero gradient, so leaving it out
        of the forward pass changes neither the loss nor the gradient (the aggregation weights count every row).
        token_adv, mask: (N, T)."""
        import torch

        if self.kl_coef > 0.0:
            return torch.ones(token_adv.shape[0], dtype=torch.bool, device=token_adv.device)
        return ((token_adv != 0) & (mask > 0)).any(dim=1)  # (N,)


def train_task(name: str):
    """The training task: a JSON Lines file, or a registered task (its `train` split when it has one)."""
    from benchctl.tasks.overlap import training_task

    return training_task(name)


def preflight(plan: Plan, eval_tasks=(), eval_limit: int | None = None, *, task=None, problems=None) -> None:
    """The refusals before any work (one BenchctlError line each):
    * a token-level estimator (`token_scores`, OAR) on a task whose completions are the answer alone
      (`shows_work` False, e.g. arith): it would equal its base estimator exactly;
    * an evaluation task sharing questions with the training task, unless `allow_overlap`: the run's own
      held-out task (`Plan.eval_task`, first `eval_limit` problems) and `eval_tasks` (first `eval_limit`; the
      matrix's final evaluation);
    * a `train_pool` larger than the training task.
    `task`/`problems`: the training task and the problems trained on (its `training_pool`) when already loaded."""
    from benchctl.tasks.overlap import check_held_out, questions
    from benchctl.trainers.scores import ANSWER_SPAN

    cfg, estimator = plan.cfg, plan.estimator
    task = task if task is not None else train_task(cfg.task)
    if problems is None and cfg.train_pool is not None:  # a pool larger than the task is refused here
        problems = training_pool(task.load(cfg.data_dir), cfg.train_pool, cfg.seed, cfg.task)
    if estimator.token_scores in ANSWER_SPAN and not task.shows_work:
        raise BenchctlError(
            f"{estimator.label} reshapes the reasoning tokens before the answer, but {cfg.task!r} completions are "
            "the answer alone (no reasoning span: it would equal its base exactly); train it on a task that shows "
            "its work, e.g. --task arith_steps"
        )
    own = plan.eval_task
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
    """Problem at `position` of the data order: one seeded permutation per pass over the problems (an epoch)."""
    epoch, index = divmod(position, len(problems))
    return problems[int(_order(seed, epoch, len(problems))[index])]


def training_pool(problems: list, size: int | None, seed: int, task: str = "the task") -> list:
    """The problems a run trains on (`--train-pool N`): all (None), or the N that the run's data order without a
    pool draws first (the first N of its seeded epoch-0 permutation), in the task's order. `draw` then cycles
    through them in epochs, a new seeded permutation each, so every prompt comes back once an epoch (DBB's
    per-prompt history, arXiv:2603.18444, trains 4 epochs). BenchctlError when N exceeds the task's problems."""
    if size is None:
        return problems
    if size > len(problems):
        raise BenchctlError(
            f"train_pool={size} exceeds the {len(problems)} training problems of {task}; valid: 1..{len(problems)},"
            " or none for all"
        )
    return [problems[int(i)] for i in sorted(_order(seed, 0, len(problems))[:size])]


def prepare_folder(plan: Plan, model_ref: ResolvedModel) -> RunFolder:
    """The run folder: created with its config.json (every setting with its source, the Plan's resolved values and
    the model), or (on --resume) cut back to its latest checkpoint."""
    cfg = plan.cfg
    default = default_run_dir(cfg, model_ref.name, plan.estimator.label)
    path = Path(cfg.resume) if cfg.resume else Path(cfg.out or default)
    run = {"model_resolved": model_ref.path, "model_source": model_ref.source, "run": str(path)}
    return run_folder.open_run(path, record(plan, **run), resume=bool(cfg.resume))


class Parts(NamedTuple):
    """What `train` is built from (`build`): each piece holds one kind of thing; `state` is the only one a step
    replaces."""

    folder: RunFolder
    state: TrainState
    sampler: Sampler
    policy: Policy
    loss: Objective
    estimator: Estimator  # the one registry call, with its cross-step state
    probe: Probe  # the weight-sync check's fixed sequence and threshold
    trackers: Trackers  # --report-to (a null object when none)
    plan: Plan  # the values derived from the settings (the held-out task and its k values, ...)


def build(cfg: TrainConfig) -> Parts:
    """Load data, model and engine; create the run folder, or restore the run from its latest checkpoint."""
    from benchctl.engine import trainer_engine
    from benchctl.results.runs import resolve_model
    from benchctl.trainers import memory
    from benchctl.trainers.device import resolve_device
    from benchctl.trainers.sync import build_probe, check_sync
    from benchctl.trainers.trackers import open_trackers
    from benchctl.trainers.weights import engine_state_dict

    plan = resolve(cfg)
    task = train_task(cfg.task)
    problems = training_pool(task.load(cfg.data_dir), cfg.train_pool, cfg.seed, cfg.task)
    preflight(plan, task=task, problems=problems)  # refusals before the run folder is written
    model_ref = resolve_model(cfg.model)
    device = resolve_device(cfg.device)
    plan = memory.fit(plan, model_ref.path, device)  # on a GPU: micro_batch_tokens for the card, or a refusal
    folder = prepare_folder(plan, model_ref)
    policy = build_policy(plan, model_ref.path, run_folder.checkpoint_weights(folder.path, folder.resume_step), device)
    engine = trainer_engine(model_ref.path, device, cfg.gpu_memory_utilization)
    sampler = build_sampler(plan, engine, task, problems)
    loss = Objective(
        policy_loss=plan.loss,
        agg=plan.loss_agg,
        kl_coef=cfg.kl_coef,
        max_tokens=plan.max_tokens,
        correction=plan.correction,
    )
    probe = build_probe(engine, task, problems[0], policy.compute_dtype, cfg.sync_check)
    state = TrainState()
    if folder.resume_step:
        state = run_folder.restore(folder, policy=policy, estimator=plan.estimator)
        engine.load_weights(engine_state_dict(policy.model))
    check_sync(engine, policy, probe, state.step)  # the engine starts with the policy's weights
    trackers = open_trackers(cfg.report_to, folder.path, config=_tracker_config(cfg), resume_step=folder.resume_step)
    return Parts(folder, state, sampler, policy, loss, plan.estimator, probe, trackers, plan)


def build_policy(plan: Plan, source: str, weights: Path | None, device: str) -> Policy:
    """The policy from `weights` (a checkpoint's model/ folder; None: the initial model `source`) in fp32 master
    weights, its frozen reference when there is a KL term, AdamW with a linear warm-up, and the pad token of
    `source`'s tokenizer (the files the engine loads its tokenizer from)."""
    import torch
    from transformers import AutoTokenizer

    from benchctl.trainers.device import default_threads, resolve_compute_dtype
    from benchctl.trainers.weights import load_policy, load_trainable, lora_settings, param_stride

    cfg = plan.cfg
    model = load_trainable(source, weights, device, lora_settings(cfg))  # fp32, whatever the compute dtype
    ref = None
    if cfg.kl_coef > 0:
        ref = load_policy(source, device, dtype=torch.float32).eval().requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]  # all, or a LoRA policy's adapters
    # fused AdamW [our choice]: one kernel for all parameters; on CPU 5-6x faster than the per-parameter loop on a
    # 25M model (benchmarks/train_vs_trl.py, as TRL's default adamw_torch_fused), same update rule.
    optimizer = torch.optim.AdamW(trainable, lr=plan.lr, weight_decay=cfg.weight_decay, fused=True)
    warmup = max(1, cfg.warmup_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    tokenizer = AutoTokenizer.from_pretrained(source)
    pad = tokenizer.eos_token_id if tokenizer.pad_token_id is None else tokenizer.pad_token_id
    return Policy(
        model=model,
        ref=ref,
        optimizer=optimizer,
        scheduler=scheduler,
        source=source,
        device=device,
        compute_dtype=resolve_compute_dtype(cfg.dtype, device),
        threads=cfg.threads or default_threads(),
        pad_id=pad,
        param_stride=param_stride(model),
    )


def build_sampler(plan: Plan, engine, task, problems: list) -> Sampler:
    """The rollout's settings: G samples per prompt at the run's temperature, with log-probs, seeded by the run."""
    from benchctl.engine import SamplingConfig

    cfg = plan.cfg
    sampling = SamplingConfig(
        n=cfg.group_size,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=plan.max_tokens,
        seed=cfg.seed,
        logprobs=True,
    )
    return Sampler(
        engine=engine,
        task=task,
        problems=problems,
        sampling=sampling,
        seed=cfg.seed,
        prompts_per_step=cfg.prompts_per_step,
        dynamic_sampling=cfg.dynamic_sampling,
        max_rounds=cfg.max_sampling_rounds if cfg.dynamic_sampling else 1,
        overlong_buffer=plan.overlong_buffer,
        overlong_penalty=cfg.overlong_penalty,
        reward_flip=cfg.reward_flip,
        focus_quantile=cfg.codapo_percentile if cfg.codapo_resample else None,
        focus_repeat=cfg.codapo_repeat,
    )


def _tracker_config(cfg: TrainConfig) -> dict:
    """The run's settings for wandb / trackio (JSON values)."""
    values = {name: getattr(cfg, name) for name in field_names()}
    values["estimator_params"] = dict(cfg.estimator_params)
    return values
