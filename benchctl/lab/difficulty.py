"""How hard a task's prompts are for a model: per-prompt pass rates from n samples each, by level.

`run_difficulty(DifficultyConfig(task="arith_mix", n=64))` samples `n` completions of each of the first `prompts`
problems of a split (default train: what RL trains on) at temperature 1 with no top-p (the sampling
`benchctl train` uses), grades them with the task, and returns per-prompt pass rates and a table by level:
prompts, mean pass rate, fraction under `low` (all-wrong groups are likely) and over `high` (all-right groups).

Sampling is plain torch with a KV cache [our choice: on the 2-core machine it draws 64 samples of 256 prompts in
about 20 s, where the vLLM CPU engine took about 15x longer]. It draws from the same distribution as the trainer's
rollouts (the untruncated softmax at temperature 1) on the same prompt (the chat template when the model has one),
not the same samples. Prompts are batched by token length
(no padding, so no attention mask is needed); the torch generator is seeded once from `seed`, so a result
repeats on one machine for the same configuration.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchctl.errors import BenchctlError, check_range
from benchctl.lab.common import opt

SAMPLES_PER_BATCH = 4096  # rows of one sampling batch (prompts x n) [our choice: ~0.1 s per token on 2 cores]
KV_BUDGET_BYTES = 2 << 30  # [our choice] KV cache of one sampling batch at most (batch_rows)
DEFAULT_MAX_TOKENS = 32  # when neither the config nor the task says


@dataclass(frozen=True)
class DifficultyConfig:
    """Options of `benchctl tasks difficulty`."""

    task: str = opt("arith_mix", "registered task name")
    model: str = opt("tiny-warm", "tiny-warm, tiny or smollm2-135m (built on first use), or a HF folder or run folder")
    split: str = opt("train", "split whose prompts are measured (tasks with splits); train is what RL trains on")
    prompts: int = opt(256, "first N problems of the split")
    n: int = opt(64, "samples per prompt")
    temperature: float = opt(1.0, "sampling temperature (the trainer's default rollout temperature is 1)")
    max_tokens: int | None = opt(None, "new tokens per sample; None -> the task's max_new_tokens, else 32")
    seed: int = opt(0, "task seed and sampling seed")
    low: float = opt(0.1, "a prompt is hard when its pass rate is under this")
    high: float = opt(0.9, "a prompt is easy when its pass rate is over this")

    def __post_init__(self) -> None:
        check_range("prompts", self.prompts, 1)
        check_range("n", self.n, 1)
        check_range("temperature", self.temperature, 0, low_open=True)
        if self.max_tokens is not None:
            check_range("max_tokens", self.max_tokens, 1)
        check_range("low", self.low, 0, 1)
        check_range("high", self.high, self.low, 1)


@dataclass
class DifficultyResult:
    """Per-prompt pass rates and the table by level (one row per level, then "all")."""

    config: DifficultyConfig
    model: str  # the resolved model folder
    levels: list[Any]  # (P,) each prompt's level (problem.meta["level"], else "-")
    pass_rates: np.ndarray  # (P,) fraction of the n samples graded correct
    mean_tokens: float  # generated tokens per completion, EOS included
    rows: list[dict[str, Any]] = field(default_factory=list)


def run_difficulty(cfg: DifficultyConfig) -> DifficultyResult:
    """Sample, grade and tabulate (see the module docstring)."""
    from benchctl.results.runs import resolve_model
    from benchctl.tasks import get_task

    task = _task(cfg, get_task)
    problems = task.load(limit=cfg.prompts)
    model = resolve_model(cfg.model).path
    max_tokens = cfg.max_tokens or getattr(task, "max_new_tokens", None) or DEFAULT_MAX_TOKENS
    texts, lengths = sample_completions(model, task, problems, cfg.n, max_tokens, cfg.temperature, cfg.seed)
    verdicts = task.grade([(problem, text) for problem, group in zip(problems, texts) for text in group])
    correct = np.array([v.correct for v in verdicts], dtype=float).reshape(len(problems), cfg.n)  # (P, n)
    levels = [problem.meta.get("level", "-") for problem in problems]
    rates = correct.mean(axis=1)  # (P,)
    result = DifficultyResult(cfg, model, levels, rates, float(np.mean(lengths)))
    result.rows = difficulty_rows(levels, rates, cfg.low, cfg.high)
    return result


def _task(cfg: DifficultyConfig, get_task):
    """The task on the chosen split (tasks without a split option: the task itself, for split=test only)."""
    import inspect

    from benchctl.tasks import task_class

    cls = task_class(cfg.task)
    if cls is None:
        return get_task(cfg.task)  # raises: the unknown name and the valid ones
    if "split" in inspect.signature(cls.__init__).parameters:
        return get_task(cfg.task, split=cfg.split, seed=cfg.seed, size=cfg.prompts)
    if cfg.split != "test":
        raise BenchctlError(f"task {cfg.task!r} has no split option; pass --split test to measure its problems")
    return get_task(cfg.task)


def difficulty_rows(levels: Sequence[Any], rates: np.ndarray, low: float, high: float) -> list[dict[str, Any]]:
    """One row per level (sorted) and one for all prompts: prompts, mean pass rate, fractions under/over."""
    groups: dict[Any, list[float]] = defaultdict(list)
    for level, rate in zip(levels, rates):
        groups[level].append(float(rate))
    keys = sorted(groups, key=str)
    rows = [_row(str(level), np.array(groups[level]), low, high) for level in keys]
    return [*rows, _row("all", np.asarray(rates, dtype=float), low, high)]


def _row(level: str, rates: np.ndarray, low: float, high: float) -> dict[str, Any]:
    return {
        "level": level,
        "prompts": int(rates.size),
        "mean_pass": float(rates.mean()),
        "under_low": float((rates < low).mean()),
        "over_high": float((rates > high).mean()),
    }


def sample_completions(
    model_dir: str, task, problems: Sequence, n: int, max_tokens: int, temperature: float, seed: int
) -> tuple[list[list[str]], list[int]]:
    """`n` sampled completions of each problem's prompt (`render_prompt`: the chat template when the tokenizer has
    one, as the trainer's engine renders it; decoded, special tokens dropped) and every sample's generated token
    count (EOS included): plain torch, KV cache, prompts batched by token length, `batch_rows` rows at a time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchctl.tasks.base import render_prompt

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    generator = torch.Generator().manual_seed(seed)
    prompts = [render_prompt(tokenizer, task, problem) for problem in problems]
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    by_length: dict[int, list[int]] = defaultdict(list)
    for index, ids in enumerate(encoded):
        by_length[len(ids)].append(index)
    texts: list[list[str]] = [[] for _ in prompts]
    lengths: list[int] = []
    for length, indices in by_length.items():
        per_batch = max(1, batch_rows(model.config, length + max_tokens) // n)
        for start in range(0, len(indices), per_batch):
            chunk = indices[start : start + per_batch]
            ids = torch.tensor([encoded[i] for i in chunk]).repeat_interleave(n, dim=0)  # (B, L), B = chunk x n
            tokens = _sample_batch(model, ids, max_tokens, temperature, tokenizer.eos_token_id, generator)
            for row, generated in enumerate(tokens):
                lengths.append(len(generated))
                texts[chunk[row // n]].append(tokenizer.decode(generated, skip_special_tokens=True))
    return texts, lengths


def batch_rows(config, tokens_per_row: int) -> int:
    """Rows of one sampling batch: `SAMPLES_PER_BATCH`, fewer where their KV cache (fp32 keys and values of every
    layer for `tokens_per_row` positions) would pass `KV_BUDGET_BYTES` (SmolLM2-135M: 46 KB a token, about 370
    rows of 124 tokens; the tiny model: 4 KB a token, the full 4,096)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    per_token = config.num_hidden_layers * 2 * kv_heads * head_dim * 4
    return max(1, min(SAMPLES_PER_BATCH, KV_BUDGET_BYTES // (per_token * tokens_per_row)))


def _sample_batch(model, ids, max_tokens: int, temperature: float, eos: int, generator) -> list[list[int]]:
    """Token ids generated for each row of `ids` (B, L), each cut after its first EOS."""
    import torch

    rows = ids.shape[0]
    out = torch.full((rows, max_tokens), eos, dtype=torch.long)  # (B, max_tokens)
    done = torch.zeros(rows, dtype=torch.bool)  # (B,)
    with torch.no_grad():
        step = model(input_ids=ids, use_cache=True, logits_to_keep=1)  # the prompt's logits: last position only
        for t in range(max_tokens):
            probs = torch.softmax(step.logits[:, -1] / temperature, dim=-1)  # (B, V)
            token = torch.multinomial(probs, 1, generator=generator)[:, 0]  # (B,)
            token = torch.where(done, torch.full_like(token, eos), token)
            out[:, t] = token
            done |= token == eos
            if bool(done.all()) or t + 1 == max_tokens:
                break
            step = model(input_ids=token[:, None], past_key_values=step.past_key_values, use_cache=True)
    generated = []
    for row in out.tolist():
        cut = row.index(eos) + 1 if eos in row else len(row)
        generated.append(row[:cut])
    return generated
