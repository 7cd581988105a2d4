"""`resolve(cfg) -> Plan`: everything a training run derives from its settings, worked out once, in one step.

A `TrainConfig` holds what was asked (each setting and where it came from); the `Plan` holds what the run does
with it: the estimator, the learning rate, the policy loss and its aggregation, the new tokens per rollout, DAPO's
overlong buffer, the held-out task and its k values, the rollout correction, and the settings that cannot act.
`build`, RUN/config.json (`record`), the veRL launch and the matrix's staleness rule read the Plan, so every default
is applied here and nowhere else, and a default that moves shows in the recorded values (`RESOLVED`).

`resolve` also makes every check that involves more than one setting, one BenchctlError line each, before any work
starts (each setting's own range and choices are in its metadata: `benchctl.fields.check_settings`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchctl.errors import BenchctlError

if TYPE_CHECKING:  # annotations only: the losses and the rollout correction load torch
    from benchctl.estimators import Estimator
    from benchctl.losses import Loss
    from benchctl.trainers.config import TrainConfig
    from benchctl.trainers.rollout_correction import RolloutCorrection

OVERLONG_RATIO = 0.2  # L_cache / L_max of DAPO §4.1 (4096 / 20480): the default buffer as a share of max_tokens

# A setting whose value the run resolves -> its resolved value's key in RUN/config.json (the staleness rule compares
# the resolved value where a record holds one: a run that took a default is judged by what the default gave it).
RESOLVED = {
    "lr": "lr_resolved",
    "loss": "loss_resolved",
    "loss_agg": "loss_agg_resolved",
    "max_tokens": "max_tokens_resolved",
    "overlong_buffer": "overlong_buffer_resolved",
    "eval_task": "eval_task_resolved",
}


@dataclass(frozen=True)
class Plan:
    """One training run as it will run: its settings (`cfg`) and every value derived from them (`resolve`)."""

    cfg: TrainConfig
    estimator: Estimator  # built once; carries its cross-step state through the run (saved in every checkpoint)
    lr: float  # AdamW's rate (`_learning_rate`)
    loss: Loss  # the policy loss from the registry (`benchctl.losses`)
    loss_agg: str  # its aggregation (`benchctl.losses.aggregation`, docs/training.md "Loss aggregation")
    max_tokens: int  # new tokens per rollout; also the constant of seq-mean-token-sum-norm (Dr.GRPO)
    overlong_buffer: int  # L_cache of DAPO Eq. 13 in tokens; 0 when overlong shaping is off
    eval_task: str | None  # the held-out task; None when the run does not evaluate while training
    eval_ks: tuple[int, ...]  # the held-out pass@k values
    correction: RolloutCorrection  # the engine/trainer mismatch correction
    inert: tuple[str, ...]  # `key=value` of settings chosen for this run that cannot act in it (`_inert_settings`)
    memory: dict | None = None  # on a GPU, the memory preflight's figures (`benchctl.trainers.memory.fit`), GiB


def resolve(cfg: TrainConfig) -> Plan:
    """The run's `Plan`; one BenchctlError line for an unknown name or an invalid combination of settings."""
    from benchctl.estimators import get_estimator
    from benchctl.trainers.trackers import parse_report_to

    correction = _correction(cfg)
    loss = _policy_loss(cfg)
    _check_loss(cfg)
    parse_report_to(cfg.report_to)
    max_tokens = _max_new_tokens(cfg)
    overlong_buffer = _overlong_buffer(cfg, max_tokens)
    eval_ks = _check_combinations(cfg, max_tokens, overlong_buffer)
    estimator = get_estimator(cfg.estimator, **dict(cfg.estimator_params))
    _check_estimator(cfg, estimator, overlong_buffer)
    _check_lora(cfg)
    inert = tuple(_inert_settings(cfg, loss, estimator))
    return Plan(
        cfg=cfg,
        estimator=estimator,
        lr=_learning_rate(cfg),
        loss=loss,
        loss_agg=_aggregation(cfg, loss, estimator),
        max_tokens=max_tokens,
        overlong_buffer=overlong_buffer,
        eval_task=_held_out_task(cfg),
        eval_ks=eval_ks,
        correction=correction,
        inert=inert,
    )


# ---- the derived values -------------------------------------------------------------------------------------


def _max_new_tokens(cfg: TrainConfig) -> int:
    """`max_tokens`, else 8 for arith (answers are at most 3 characters + EOS), 16 for arith_steps (5 terms: 4
    partial sums of <= 2 digits, 3 commas, "=", 2 digits, EOS = 15), the task's own `max_new_tokens` where it
    declares one (arith_mix: 20) and 1024 otherwise."""
    if cfg.max_tokens is not None:
        return cfg.max_tokens
    from benchctl.tasks import task_class

    declared = getattr(task_class(cfg.task), "max_new_tokens", None)
    return {"arith": 8, "arith_steps": 16}.get(cfg.task, declared or 1024)


def _overlong_buffer(cfg: TrainConfig, max_tokens: int) -> int:
    """L_cache of DAPO Eq. 13 in tokens, 0 when overlong shaping is off: `overlong_buffer`, else 0.2 x max_tokens
    (DAPO §4.1: 4096 of 20480), at least 1."""
    if not cfg.overlong_shaping:
        return 0
    if cfg.overlong_buffer is not None:
        return cfg.overlong_buffer
    return max(1, round(OVERLONG_RATIO * max_tokens))


def _learning_rate(cfg: TrainConfig) -> float:
    """`lr`, else 1e-6 for a billion-parameter model (the usual RLVR rate: DAPO, Dr.GRPO) and, for the embedded tiny
    models, 3e-4 / sqrt(mini_batches) [our choice].

    3e-4 is the tiny model's rate for one update per rollout batch, measured on tiny/arith, 200 steps of 32 x 8:
    +16 to +19 points of held-out pass@1 on seeds 0, 1, 2; 5e-4 learned faster on one seed but collapsed on another
    (EOS unlearned, entropy 3.4). With n mini-batches each AdamW step sees 1/n of the batch, and Adam's square-root
    scaling rule (Malladi et al., NeurIPS 2022, arXiv:2205.10287) scales the rate by sqrt(1/n). Measured on the
    demo (DAPO's 16 updates a batch, 12 seeds, docs/training.md "Recipes"): at 3e-4 the policy over-sharpened (seed
    sd of pass@1 5.9 points, one run collapsed); at 3e-4 / 16 the ratio hardly moved (clip-higher bound on 0.0% of
    tokens: a DAPO mechanism inert); at 3e-4 / 4 the clips act (4.9% low, 0.7% high), seed sd 2.4 (GRPO: 2.7)."""
    if cfg.lr is not None:
        return cfg.lr
    from benchctl.models.tiny import EMBEDDED_MODELS

    return 3e-4 / math.sqrt(cfg.mini_batches) if cfg.model in EMBEDDED_MODELS else 1e-6


def _policy_loss(cfg: TrainConfig) -> Loss:
    """The run's policy loss from the registry (`benchctl.losses`): `cfg.loss` parsed, or, when None, the clipped
    surrogate of `ratio`, `clip_low` and `clip_high` (ppo_clip on the token ratio, gspo on the sequence ratio).
    An unknown name or parameter: one BenchctlError line naming the valid ones."""
    from benchctl.losses import get_loss, parse_loss

    if cfg.loss is not None:
        return parse_loss(cfg.loss)
    return get_loss("gspo" if cfg.ratio == "sequence" else "ppo_clip", clip_low=cfg.clip_low, clip_high=cfg.clip_high)


def _aggregation(cfg: TrainConfig, loss: Loss, estimator: Estimator) -> str:
    """`cfg.loss_agg`; else, for a `loss` that names its paper's aggregation (gspo: seq-mean-token-mean), that one;
    else the estimator's default aggregation (docs/training.md, "Loss aggregation")."""
    if cfg.loss_agg is not None:
        return cfg.loss_agg
    own = loss.loss_agg if cfg.loss is not None else None
    return own if own is not None else estimator.loss_agg


def _held_out_task(cfg: TrainConfig) -> str | None:
    """The held-out task (None when evaluation is off): `eval_task`, else the training task's `held_out_task`
    (arith -> arith's test split, math_train -> math500; none for gsm8k or a file: BenchctlError)."""
    from benchctl.tasks import get_task
    from benchctl.tasks.overlap import default_held_out

    if not cfg.evaluates:
        return None
    if cfg.eval_task is None:
        return default_held_out(cfg.task)
    get_task(cfg.eval_task)  # unknown names fail before any work
    return cfg.eval_task


def _correction(cfg: TrainConfig) -> RolloutCorrection:
    """The run's `RolloutCorrection` (BenchctlError naming the modes for an unknown one, or bad bounds)."""
    from benchctl.trainers.rollout_correction import MODES, RolloutCorrection

    if cfg.rollout_correction not in MODES:
        raise BenchctlError(
            f"rollout_correction={cfg.rollout_correction!r} is not valid; choose one of: {', '.join(MODES)}"
        )
    return RolloutCorrection(cfg.rollout_correction, cfg.rollout_correction_low, cfg.rollout_correction_high)


# ---- the checks across settings -----------------------------------------------------------------------------


def _check_loss(cfg: TrainConfig) -> None:
    """A named loss carries its own parameters: clip_low / clip_high / ratio given by a flag or a file as well
    would be silently ignored, so they are refused (a recipe's values are its defaults and stay)."""
    if cfg.loss is None:
        return
    given = [k for k in ("ratio", "clip_low", "clip_high") if cfg.sources.get(k) in ("flag", "file")]
    if given:
        raise BenchctlError(
            f"loss={cfg.loss!r} carries its own parameters; {given[0]} is a parameter of the default loss only:"
            f" give it inside the loss, e.g. --loss 'ppo_clip(clip_high=0.28)' (benchctl losses show NAME)"
        )


def _check_combinations(cfg: TrainConfig, max_tokens: int, overlong_buffer: int) -> tuple[int, ...]:
    """Mini-batches within the rows, dynamic sampling with groups, untruncated sampling, DAPO's buffer below
    max_tokens and k <= n; returns the held-out k values."""
    rows = cfg.group_size * cfg.prompts_per_step
    if cfg.mini_batches > rows:
        raise BenchctlError(
            f"mini_batches={cfg.mini_batches} exceeds the {rows} rollouts per step (prompts_per_step x group_size)"
        )
    if cfg.codapo_resample and cfg.dynamic_sampling:  # a focus step re-rolls kept questions, DAPO's refills new ones
        raise BenchctlError("codapo_resample cannot run beside dynamic_sampling; valid: one of the two, or neither")
    if cfg.dynamic_sampling and cfg.group_size < 2:
        raise BenchctlError("dynamic_sampling needs group_size >= 2 (a group of one is always degenerate)")
    if cfg.top_p < 1.0:  # the policy would have to be truncated the same way (docs/gpu.md); refused instead
        raise BenchctlError(
            f"top_p={cfg.top_p} < 1 cannot train: the policy's log-probs are of the untruncated distribution, so the"
            " importance ratio and the engine/policy gap would be off by the nucleus mass; use top_p=1"
        )
    if overlong_buffer >= max_tokens:
        raise BenchctlError(
            f"overlong_buffer={overlong_buffer} must be below max_tokens={max_tokens} (DAPO Eq. 13 penalises only the"
            " last overlong_buffer tokens before max_tokens)"
        )
    from benchctl.results.kspec import parse_ks

    ks = parse_ks(str(cfg.eval_k))
    if cfg.evaluates and max(ks) > cfg.eval_n:
        raise BenchctlError(f"eval_k={max(ks)} > eval_n={cfg.eval_n}: pass@k needs k <= n")
    return ks


def _check_estimator(cfg: TrainConfig, estimator: Estimator, overlong_buffer: int) -> None:
    """The estimator is defined for this G and this run's rewards: its declared `min_group_size`, then one call on a
    probe batch shaped like the run's ((2, G): one mixed and one all-wrong group; shaped when overlong shaping is on),
    which raises what a real step would (e.g. passk's k > G, binary rewards under shaping) before any work. The
    probe runs on a copy: the run's estimator starts its cross-step state untouched."""
    import numpy as np

    if cfg.group_size < estimator.min_group_size:
        raise BenchctlError(
            f"group_size={cfg.group_size}: {estimator.label} is group-relative (its advantage compares the rollouts"
            f" of one prompt) and needs group_size >= {estimator.min_group_size}"
        )
    probe = np.zeros((2, cfg.group_size))
    probe[0, 0] = 1.0
    if overlong_buffer:  # DAPO Eq. 13: correctness + a penalty in [-overlong_penalty, 0]
        probe[0, :2] -= cfg.overlong_penalty * np.array([0.5, 1.0])
    try:
        copy.deepcopy(estimator).advantages(probe)
    except BenchctlError as exc:
        if not overlong_buffer:
            raise
        raise BenchctlError(
            f"{estimator.label} cannot train on shaped rewards (correctness + overlong penalty): {exc}; set"
            " overlong_shaping: false"
        ) from None


# ---- settings that cannot act -------------------------------------------------------------------------------


def _check_lora(cfg: TrainConfig) -> None:
    """LoRA adapters (`lora_rank` > 0) are trained by the native trainer only: the veRL launch does not pass them."""
    if cfg.lora_rank and cfg.engine != "native":
        raise BenchctlError(
            f"--lora-rank {cfg.lora_rank} needs --engine native (the {cfg.engine} launch trains the full model); "
            "use --engine native or --lora-rank 0"
        )


def _inert_settings(cfg: TrainConfig, loss: Loss, estimator: Estimator) -> list[str]:
    """Settings chosen for this run (not defaults) that cannot act in it, as `key=value` items: a clip range or the
    sequence ratio with one optimizer step per rollout batch (the importance ratio is then exactly 1), overlong
    buffer/penalty with shaping off, an estimator whose every effect dynamic sampling filters out, the log-prob
    chunk without micro-batches, and rollout-correction bounds without a correction."""
    given = lambda k: cfg.sources.get(k, "default") != "default"  # noqa: E731 - set by a recipe, file or flag
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    chosen = [k for k in ("clip_low", "clip_high") if given(k) or getattr(cfg, k) != defaults[k]]
    out = []
    one_step = cfg.epochs * cfg.mini_batches == 1
    if cfg.loss is not None:  # the named loss has its own parameters: a recipe's clip range does not reach it
        out += [f"{k}={getattr(cfg, k)}" for k in (["ratio"] if cfg.ratio == "sequence" else []) + chosen]
        out += [f"loss={cfg.loss}"] if one_step and loss.spec.inert_on_policy else []
    elif one_step:
        out += [f"{k}={getattr(cfg, k)}" for k in (["ratio"] if cfg.ratio == "sequence" else []) + chosen]
    if not cfg.overlong_shaping:
        out += [f"{k}={getattr(cfg, k)}" for k in ("overlong_buffer", "overlong_penalty") if given(k)]
    if not cfg.codapo_resample:
        out += [f"{k}={getattr(cfg, k)}" for k in ("codapo_percentile", "codapo_repeat") if given(k)]
    if cfg.dynamic_sampling and _degenerate_only(estimator):
        out.append(f"estimator={cfg.estimator}")
    if cfg.micro_batch_tokens is None and given("logprob_chunk_tokens"):
        out.append(f"logprob_chunk_tokens={cfg.logprob_chunk_tokens}")
    if cfg.rollout_correction == "none":
        out += [f"{k}={getattr(cfg, k)}" for k in ("rollout_correction_low", "rollout_correction_high") if given(k)]
    return out


def _degenerate_only(estimator: Estimator) -> list[str]:
    """Names in the estimator's chain (modifier, base, ...) that declare they act only on degenerate groups."""
    names = []
    while estimator is not None:
        names += [estimator.name] if estimator.spec.degenerate_only else []
        estimator = estimator.base
    return names


def config_warnings(plan: Plan) -> list[str]:
    """One line per setting that cannot act in this run (`Plan.inert`), saying why."""
    cfg, inert, lines = plan.cfg, plan.inert, []
    update = [s for s in inert if s.split("=")[0] in ("ratio", "clip_low", "clip_high")]
    if update and cfg.loss is not None:
        lines.append(f"{', '.join(update)} cannot act: loss={cfg.loss} has its own parameters")
    if f"loss={cfg.loss}" in inert:
        lines.append(
            f"loss={cfg.loss} acts like gpg here: with one optimizer step per rollout batch every ratio is 1, so its"
            " clip, gate or mask never binds; set mini_batches or epochs > 1"
        )
    if update and cfg.loss is None:
        lines.append(
            f"{', '.join(update)} cannot act: one optimizer step per rollout batch (epochs x mini_batches = 1) keeps"
            " the importance ratio at exactly 1; set mini_batches or epochs > 1"
        )
    if any(s.startswith("overlong_") for s in inert):
        lines.append("overlong_buffer / overlong_penalty have no effect: overlong_shaping is off")
    if any(s.startswith("codapo_") for s in inert):
        lines.append("codapo_percentile / codapo_repeat have no effect: codapo_resample is off")
    if any(s.startswith("logprob_chunk_tokens=") for s in inert):
        lines.append("logprob_chunk_tokens has no effect without micro_batch_tokens (the full-logits path)")
    if any(s.startswith("rollout_correction_") for s in inert):
        lines.append("rollout_correction_low / rollout_correction_high have no effect: rollout_correction is none")
    if f"estimator={cfg.estimator}" in inert:
        names = ", ".join(_degenerate_only(plan.estimator))
        lines.append(
            f"{names} acts only on degenerate groups, which dynamic sampling drops before the update: a void"
            f" combination ({cfg.estimator} trains on its plain advantages of the informative groups)"
        )
    return lines


# ---- the record and the staleness rule ----------------------------------------------------------------------


def record(plan: Plan, **run: Any) -> dict:
    """RUN/config.json's record: {key: {"value": v, "source": ...}} for every setting, then the Plan's resolved
    values and `run` (the model folder, the run folder, ...; source 'derived'; `run` wins over a Plan value)."""
    cfg = plan.cfg
    names = [f.name for f in dataclasses.fields(cfg) if f.name != "sources"]
    out = {name: {"value": getattr(cfg, name), "source": cfg.sources.get(name, "default")} for name in names}
    out["estimator_params"]["value"] = dict(cfg.estimator_params)
    derived = {
        "inert_settings": list(plan.inert),
        "estimator_label": plan.estimator.label,
        "lr_resolved": plan.lr,
        "loss_resolved": plan.loss.label,
        "loss_agg_resolved": plan.loss_agg,
        "max_tokens_resolved": plan.max_tokens,
        "overlong_buffer_resolved": plan.overlong_buffer,
        "eval_task_resolved": plan.eval_task,
        **({"memory_preflight": plan.memory} if plan.memory else {}),
        **run,
    }
    out.update({k: {"value": v, "source": "derived"} for k, v in derived.items()})
    return out


def first_difference(stored: dict, now: dict, keys) -> tuple[str, Any, Any] | None:
    """(key, stored value, value now) of the first of `keys` whose resolved value differs between two records
    (`record`), else None. A setting with a resolved value (`RESOLVED`) is compared by it where the stored record
    holds one, so a run that took a default is judged by the value the default gave it then and gives now; a key the
    stored record lacks (a run written before that setting or value was recorded) is not compared. A setting the stored
    run chose for its machine (source 'derived': `micro_batch_tokens` chosen for the card by `memory.fit`) is compared
    only when it is asked for now: the choice changes float rounding, not what is trained."""
    for key in keys:
        name = RESOLVED.get(key) if RESOLVED.get(key) in stored else key
        if name not in stored or name not in now:
            continue
        if stored[name].get("source") == "derived" and now[name].get("source", "default") == "default":
            continue
        have, want = _plain(stored[name].get("value")), _plain(now[name].get("value"))
        same = have == want or (_is_number(have) and _is_number(want) and math.isclose(have, want, rel_tol=1e-12))
        if not same:
            return name, have, want
    return None


def _plain(value: Any) -> Any:
    """The value as config.json holds it (tuples as lists, mappings with string keys)."""
    return json.loads(json.dumps(value, default=str))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
