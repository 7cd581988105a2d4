"""Tiny Qwen2 model (~0.8M parameters, character-level) for tests, demos and CPU training runs.

`build_tiny_model(out_dir, seed=0, sft_steps=...)` writes a local Hugging Face folder (config.json,
generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json) that loads with
`transformers.AutoModelForCausalLM` and with vLLM, without any download:

1. a byte-level tokenizer with no merges (`benchctl.models.chartok`): one token per ASCII character;
2. a Qwen2 config (4 layers, width 128, GQA 4/2 heads of size 32, MLP 384, tied embeddings, fp32,
   128 positions) initialised from `torch.manual_seed(seed)`;
3. supervised fine-tuning with plain torch on the train splits of `arith` and `arith_steps` (`sft_sources`;
   `train_problems` of each, interleaved), each one `task.prompt_text(problem) + task.reference_completion(problem) +
   <eos>` ("3+5+2=" "10"; "3+5+2:" "8,10=10"), loss on the completion and <eos> only [our choice], AdamW with linear
   warm-up then constant learning rate [our choice: no schedule depends on a budget that may be given in seconds] (or a
   linear decay to 0 over the last `decay_steps`). Test questions of either task are never seen
   (`benchctl.tasks.arith.split_of`). 200 steps of 64 [our choice]: as many arith sequences as builder 2's 100
   arith-only steps, and room to learn on both tasks: `benchctl eval --model tiny --tasks arith,arith_steps --k 1,8 --n
   8 --limit 200` gives pass@1 21.6% / 20.0%, pass@8 71.5% / 68.0% (arith / arith_steps); a sampler of our own (same
   T=0.6, top-p 0.95) gave pass@1 9.6% / 9.1% after 100 steps, 20.3% / 19.7% after 200 and 24.6% / 21.9% after 300
   (builder 2, arith only, 100 steps: 12.2% on the new arith test split).

SFT runs on one CPU thread [our choice]: float reductions then do not depend on the machine's core count, so
the weights are bit-identical for the same parameters on any CPU, and for a 0.8M-parameter model one thread is
also the fastest (about 80 ms per 64-sequence arith step; two threads on a loaded 2-core machine were 10x slower).
`sft_seconds` stops at a wall-clock budget instead of a step count and is therefore not reproducible.
`cached_tiny_model` (benchctl.models.cache) builds once per
parameter set for tests.

`EMBEDDED_MODELS` names the parameter sets `--model` accepts: `tiny` (the above) and `tiny-warm`, the RL testbed's
warm start (800 steps, the last 400 decaying, `arith_mix` level 1 added; about 110 s once).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.models.chartok import EOS, PAD, char_ids, char_vocab, save_char_tokenizer

BUILDER_VERSION = 4  # bump when the builder's output changes for the same parameters (cache key)
INFO_FILE = "benchctl_tiny.json"
# The embedded models `--model` accepts by name: TinyModelConfig options of each (built once, cached by them).
# `tiny`: the default, SFT'ed on the answer alone (arith) and on the same sums with the partial sums shown first
# (arith_steps); the demo's model. `tiny-warm` [our choice]: the RL testbed's model (docs/data.md, arith_mix): 800
# steps decaying to 0 over the last 400, also on arith_mix's level 1 (carry-free three-digit + digit), which it
# then solves near-deterministically while arith_mix's longer sums stay out of reach: a spread of difficulty.
EMBEDDED_MODELS: dict[str, dict] = {
    "tiny": {},
    "tiny-warm": {"sft_steps": 800, "decay_steps": 400, "sft_sources": ("arith", "arith_steps", "arith_mix:levels=1")},
}


@dataclass(frozen=True)
class TinyModelConfig:
    """Architecture, seed and SFT budget of the tiny model."""

    seed: int = field(default=0, metadata={"help": "torch seed for the initial weights and the SFT data order"})
    sft_steps: int = field(default=200, metadata={"help": "SFT optimizer steps (0 = random init only)"})
    sft_seconds: float | None = field(
        default=None, metadata={"help": "stop SFT after this many seconds instead (not reproducible)"}
    )
    batch_size: int = field(default=64, metadata={"help": "SFT sequences per step"})
    lr: float = field(default=3e-3, metadata={"help": "AdamW peak learning rate"})
    warmup_steps: int = field(default=50, metadata={"help": "linear learning-rate warm-up steps"})
    decay_steps: int = field(
        default=0, metadata={"help": "linear decay to 0 over the last N of sft_steps (not with sft_seconds)"}
    )
    sft_sources: tuple[str, ...] = field(
        default=("arith", "arith_steps"),
        metadata={"help": "tasks whose train splits SFT interleaves: 'name' or 'name:key=value' (arith_mix:levels=1)"},
    )
    hidden_size: int = field(default=128, metadata={"help": "model width; num_heads * 32 (CPU attention head size)"})
    num_layers: int = field(default=4, metadata={"help": "transformer blocks"})
    num_heads: int = field(default=4, metadata={"help": "query heads"})
    num_kv_heads: int = field(default=2, metadata={"help": "key/value heads (GQA), divides num_heads"})
    intermediate_size: int = field(default=384, metadata={"help": "MLP width"})
    max_position_embeddings: int = field(default=128, metadata={"help": "context length (vLLM max_model_len)"})
    train_problems: int = field(default=20000, metadata={"help": "train problems of each SFT task cycled by SFT"})

    def __post_init__(self) -> None:
        check_range("sft_steps", self.sft_steps, 0)
        if self.sft_seconds is not None:
            check_range("sft_seconds", self.sft_seconds, 0)
        check_range("batch_size", self.batch_size, 1)
        check_range("decay_steps", self.decay_steps, 0)
        if not self.sft_sources:
            raise BenchctlError("sft_sources must name at least one task")
        object.__setattr__(self, "sft_sources", tuple(self.sft_sources))  # a list from JSON -> the same key
        check_range("lr", self.lr, 0, low_open=True)
        check_range("train_problems", self.train_problems, 1)
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise BenchctlError(
                f"hidden_size={self.hidden_size} must be a multiple of num_heads={self.num_heads}, "
                f"and num_heads a multiple of num_kv_heads={self.num_kv_heads}"
            )


def qwen2_config(cfg: TinyModelConfig):
    """The `transformers.Qwen2Config` of the tiny model."""
    from transformers import Qwen2Config

    vocab = char_vocab()
    return Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True,
        use_sliding_window=False,
        pad_token_id=vocab[PAD],
        eos_token_id=vocab[EOS],
        bos_token_id=None,
        dtype="float32",
    )


def sft_sequences(cfg: TinyModelConfig) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, completion ids + <eos>) of the `sft_sources`' train problems, interleaved task by task."""
    from benchctl.tasks import get_task

    tasks = [
        get_task(name, split="train", seed=cfg.seed, size=cfg.train_problems, **options)
        for name, options in map(parse_source, cfg.sft_sources)
    ]
    eos = char_vocab()[EOS]
    seqs = []
    for problems in zip(*(task.load() for task in tasks)):
        for task, problem in zip(tasks, problems):
            seqs.append((char_ids(task.prompt_text(problem)), char_ids(task.reference_completion(problem)) + [eos]))
    return seqs


def parse_source(source: str) -> tuple[str, dict[str, str]]:
    """'arith_mix:levels=1' -> ("arith_mix", {"levels": "1"}); 'arith' -> ("arith", {})."""
    name, _, rest = source.partition(":")
    options = {}
    for part in filter(None, rest.split(";")):
        key, eq, value = part.partition("=")
        if not eq:
            raise BenchctlError(f"tiny-model SFT source {source!r}: options are key=value, e.g. arith_mix:levels=1")
        options[key.strip()] = value.strip()
    return name.strip(), options


def sft_batches(cfg: TinyModelConfig, generator):
    """Endless (input_ids, labels) batches of `sft_sequences`, padded right; labels -100 on prompt/pad."""
    import torch

    vocab = char_vocab()
    seqs = sft_sequences(cfg)
    width = max(len(p) + len(a) for p, a in seqs)
    ids = torch.full((len(seqs), width), vocab[PAD], dtype=torch.long)  # (N, T)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)  # (N, T)
    for row, (prompt, answer) in enumerate(seqs):
        ids[row, : len(prompt) + len(answer)] = torch.tensor(prompt + answer)
        labels[row, len(prompt) : len(prompt) + len(answer)] = torch.tensor(answer)
    while True:
        order = torch.randperm(len(seqs), generator=generator)
        for start in range(0, len(seqs) - cfg.batch_size + 1, cfg.batch_size):
            rows = order[start : start + cfg.batch_size]
            used = int((labels[rows] != -100).nonzero()[:, 1].max()) + 1  # columns past it are padding in every row
            yield ids[rows, :used], labels[rows, :used]  # (B, T') each


def run_sft(model, cfg: TinyModelConfig) -> dict:
    """Plain-torch SFT of `model` in place; returns metrics (steps, seconds, first/last loss)."""
    import torch

    generator = torch.Generator().manual_seed(cfg.seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # [our choice] see module docstring: reproducible and fastest for 0.8M params
    try:
        return _sft_loop(model, cfg, generator)
    finally:
        torch.set_num_threads(threads)


def _sft_loop(model, cfg: TinyModelConfig, generator) -> dict:
    """The optimisation loop of `run_sft` (runs single-threaded)."""
    import torch

    optim = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda step: lr_factor(cfg, step))
    model.train()
    start, losses, step = time.perf_counter(), [], 0
    batches = sft_batches(cfg, generator)
    while True:
        elapsed = time.perf_counter() - start
        done = elapsed >= cfg.sft_seconds if cfg.sft_seconds is not None else step >= cfg.sft_steps
        if done:
            break
        input_ids, labels = next(batches)
        loss = model(input_ids=input_ids, labels=labels).loss
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        losses.append(loss.detach())
        step += 1
    model.eval()
    tail = torch.stack(losses[-20:]).mean().item() if losses else float("nan")
    head = losses[0].item() if losses else float("nan")
    return {
        "sft/steps": step,
        "sft/seconds": time.perf_counter() - start,
        "sft/first_loss": head,
        "sft/last_loss": tail,
    }


def lr_factor(cfg: TinyModelConfig, step: int) -> float:
    """Learning-rate multiplier of optimizer step `step` (0-based): linear warm-up, constant, then (step-count builds)
    linear decay to 0 over the last `decay_steps`."""
    factor = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
    if cfg.sft_seconds is None and cfg.decay_steps:
        factor = min(factor, (cfg.sft_steps - step) / cfg.decay_steps)
    return factor


def build_tiny_model(out_dir: Path | str, *, config: TinyModelConfig | None = None, **options) -> Path:
    """Build, SFT and save the tiny model into `out_dir`; `options` override `TinyModelConfig` fields.

    Example: `build_tiny_model("tiny", sft_steps=100, seed=0)`. Returns `out_dir` as a Path.
    """
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    cfg = resolve_config(config, options)
    out = Path(out_dir)
    begin = time.perf_counter()
    torch.manual_seed(cfg.seed)
    model = Qwen2ForCausalLM(qwen2_config(cfg))
    metrics = run_sft(model, cfg)
    model.save_pretrained(str(out), safe_serialization=True)
    vocab = char_vocab()
    GenerationConfig(eos_token_id=vocab[EOS], pad_token_id=vocab[PAD]).save_pretrained(str(out))
    save_char_tokenizer(out, cfg.max_position_embeddings)
    info = {
        "builder_version": BUILDER_VERSION,
        "config": asdict(cfg),
        "parameters": sum(p.numel() for p in model.parameters()),
        "build_seconds": time.perf_counter() - begin,
        **metrics,
    }
    (out / INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return out


def resolve_config(config: TinyModelConfig | None, options: dict) -> TinyModelConfig:
    """`config` (or the defaults) with `options` applied; unknown option names raise BenchctlError."""
    from dataclasses import fields, replace

    valid = {f.name for f in fields(TinyModelConfig)}
    bad = sorted(set(options) - valid)
    if bad:
        raise BenchctlError(f"unknown tiny-model option(s) {', '.join(bad)}; valid: {', '.join(sorted(valid))}")
    return replace(config or TinyModelConfig(), **options)
