"""GPU memory before any work (docs/gpu.md#the-memory-preflight): the default `--micro-batch-tokens` chosen from the
model and the card, and one BenchctlError line, with the figures and the flag to change, for a run that cannot fit.

What one colocated run holds on the card (GiB = 2^30 bytes; N parameters, shapes from the model's config.json):

    rollout  trainer state 16N (fp32 weights, gradients, AdamW m and v) [+ 4N reference with --kl-coef]
             + vLLM's share F x card (`--gpu-memory-utilization`: its weights, activations, KV cache)
    update   trainer state [+ reference] + 2N bf16 casts of the weights (autocast, bf16 compute only)
             + activations of one micro-batch of B tokens: B x layers x (35h + 8I) bytes x ACTIVATION_CUDA
             + the chunked log-probs' blocks 3 x chunk x V x 4 + the head's gradient buffer 4Vh
             + the `update/param_change` snapshot 4N / stride + WORKSPACE + vLLM asleep (ENGINE_ASLEEP)

35h + 8I is the bytes per token per layer autograd saves, fitted on the CPU (docs/gpu.md "One step ... computed
from the shapes"); ACTIVATION_CUDA and WORKSPACE are fitted to the H100 measurement of Qwen2.5-Math-1.5B
(docs/gpu/update_h100.json: 46.5 GiB at B = 4096, 63.4 at 8192; 4.2 MiB per token against 3.35 computed). The
other rows of that file test it: SmolLM2-135M at 4096 / 16384 / 65536 tokens and the 1.5B model with KL and in fp32
(predicted / measured in docs/gpu.md; `benchmarks/gpu_memory_preflight.py` measures it again on any CUDA card).

The default B [our choice]: the largest power of two from 1,024 to 65,536 whose predicted update peak fits USABLE of
the free memory (the allocator reserved up to 1.12x what it allocated at 1.5B, 1.28x at SmolLM2's 65,536), at least
one row (`ROW_PROMPT_TOKENS` + max_tokens). On Qwen2.5-Math-1.5B and an 80 GB card this gives 4,096, the budget
docs/gpu.md recommends from the measurement. A given `--micro-batch-tokens` is kept, and refused only when its
predicted peak exceeds the free memory. On CPU nothing is checked and the default stays off (the one-batch path).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from benchctl.errors import BenchctlError

GIB = 2**30
ACTIVATION_CUDA = 4.2 / 3.35  # measured / CPU-fitted bytes per token, Qwen2.5-Math-1.5B on one H100
ACTIVATION_FP32 = 6.4 / 4.2  # fp32 compute against bf16: the same measurement's fp32 row (52.4 GiB at 4096)
WORKSPACE_GIB = 1.0  # the H100 1.5B peak less every term above (batch tensors, AdamW's temporaries, buffers)
ENGINE_ASLEEP_GIB = 2.0  # vLLM at sleep level 1: CUDA context and graphs (estimate, not measured)
ENGINE_MIN_GIB = 1.0  # beyond its weights, the least vLLM needs for activations and one sequence's KV cache
USABLE = 0.8  # share of the free memory the default's predicted update peak may use
BUDGETS = tuple(2**k for k in range(10, 17))  # 1,024 .. 65,536
ROW_PROMPT_TOKENS = 512  # prompt tokens assumed in the longest row [our choice: the math tasks' prompts are shorter]
EXACT_BELOW = 50_000_000  # `weights.param_stride`: the param_change snapshot is exact below, 1/64 above


@dataclass(frozen=True)
class Shape:
    """What the memory terms need from a causal LM's config."""

    params: int  # N, counted on the meta device (tied embeddings once)
    layers: int
    hidden: int
    intermediate: int
    vocab: int
    engine_bytes: int  # bytes per weight in vLLM's dtype "auto": the config's declared dtype (bf16: 2)


def model_shape(path: str) -> Shape:
    """The shape of the model at `path` (a folder or hub id) from its config alone: no weights are read."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(path)
        with torch.device("meta"):
            params = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    except (OSError, ValueError, KeyError) as exc:  # no config, an architecture transformers does not know
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise BenchctlError(f"--model {path}: cannot read its config for the memory preflight: {first}") from None
    text = config.get_text_config()
    hidden = int(text.hidden_size)
    declared = getattr(config, "dtype", None) or torch.float32
    return Shape(
        params=int(params),
        layers=int(text.num_hidden_layers),
        hidden=hidden,
        intermediate=int(getattr(text, "intermediate_size", None) or 4 * hidden),
        vocab=int(text.vocab_size),
        engine_bytes=torch.empty((), dtype=declared if isinstance(declared, torch.dtype) else torch.float32).itemsize,
    )


def update_terms(shape: Shape, tokens: int, *, bf16: bool, kl: bool, chunk: int) -> dict[str, float]:
    """The update's predicted peak (module docstring), term by term in GiB; `tokens` = one micro-batch."""
    n = shape.params
    per_token = shape.layers * (35 * shape.hidden + 8 * shape.intermediate) * ACTIVATION_CUDA
    per_token *= 1.0 if bf16 else ACTIVATION_FP32
    terms = {
        "trainer state 16N": 16 * n,
        "reference 4N": 4 * n if kl else 0,
        "bf16 casts 2N": 2 * n if bf16 else 0,
        f"activations of {tokens} tokens": tokens * per_token,
        "log-prob blocks": 3 * chunk * shape.vocab * 4 + 4 * shape.vocab * shape.hidden,
        "param_change snapshot": 4 * n / (1 if n < EXACT_BELOW else 64),
    }
    terms = {k: v / GIB for k, v in terms.items() if v}
    return {**terms, "workspace": WORKSPACE_GIB, "vLLM asleep": ENGINE_ASLEEP_GIB}


def card_memory(device: str) -> tuple[float, float]:
    """(free, total) GiB of the CUDA device the policy will use, before anything of this run is on it."""
    import torch

    try:
        free, total = torch.cuda.mem_get_info(torch.device(device))
    except (RuntimeError, AssertionError) as exc:  # no driver, no device, a CPU-only torch
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise BenchctlError(f"device={device!r}: no usable CUDA device ({first}); use --device cpu or auto") from None
    return free / GIB, total / GIB


def _fmt(terms: dict[str, float]) -> str:
    return " + ".join(f"{k} {v:.1f}" for k, v in terms.items()) + f" = {sum(terms.values()):.1f} GiB"


def fit(plan, model_path: str, device: str):
    """`plan` for this card: its config's `micro_batch_tokens` chosen when unset (source 'derived', so RUN/config.json
    shows it) and the figures in `Plan.memory`; one BenchctlError line (exit 2) when the run cannot fit. On a
    device other than CUDA, `plan` unchanged."""
    import torch

    from benchctl.trainers.device import resolve_compute_dtype

    if torch.device(device).type != "cuda":
        return plan
    cfg, shape = plan.cfg, model_shape(model_path)
    free, total = card_memory(device)
    head = f"--model {cfg.model} ({shape.params / 1e9:.2f}B parameters) does not fit this GPU ({free:.1f} GiB free"
    head += f" of {total:.1f}):"
    rollout = _check_rollout(cfg, shape, free, total, head)
    bf16 = resolve_compute_dtype(cfg.dtype, device) == torch.bfloat16
    row = ROW_PROMPT_TOKENS + plan.max_tokens

    def peak(budget: int) -> dict[str, float]:
        return update_terms(shape, max(budget, row), bf16=bf16, kl=cfg.kl_coef > 0, chunk=cfg.logprob_chunk_tokens)

    budget = cfg.micro_batch_tokens or _default_budget(peak, row, free)
    terms = peak(budget)
    if sum(terms.values()) > free:
        smaller = _default_budget(peak, row, free)
        if cfg.micro_batch_tokens and sum(peak(smaller).values()) <= free:
            fix = f"lower --micro-batch-tokens to {smaller}"
        else:
            fix = "lower --max-tokens" + (", set --kl-coef 0" if cfg.kl_coef > 0 else "") + ", or use a larger GPU"
        what = f"one micro-batch of {max(budget, row)} tokens" if cfg.micro_batch_tokens else f"one row of {row} tokens"
        raise BenchctlError(f"{head} the update with {what} needs {_fmt(terms)}; {fix}")
    memory = {"card_gib": total, "free_gib": free, "params": shape.params, "rollout_gib": rollout}
    memory |= {"update_gib": sum(terms.values()), "micro_batch_tokens": budget}
    if cfg.micro_batch_tokens:
        return dataclasses.replace(plan, memory=memory)
    sources = {**cfg.sources, "micro_batch_tokens": "derived"}
    return dataclasses.replace(
        plan, cfg=dataclasses.replace(cfg, micro_batch_tokens=budget, sources=sources), memory=memory
    )


def _default_budget(peak, row: int, free: float) -> int:
    """The largest of `BUDGETS` (at least one row) whose predicted peak fits USABLE of `free`; else one row (`fit`
    then checks that it fits `free`)."""
    fits = [b for b in BUDGETS if b >= row and sum(peak(b).values()) <= USABLE * free]
    return max(fits) if fits else row


def _check_rollout(cfg, shape: Shape, free: float, total: float, head: str) -> float:
    """The rollout's predicted peak (trainer state [+ reference] + vLLM's share), GiB; BenchctlError when it or the
    trainer state with vLLM's weights alone exceeds `free`."""
    state = {"trainer state 16N": 16 * shape.params / GIB}
    if cfg.kl_coef > 0:
        state["reference 4N"] = 4 * shape.params / GIB
    engine_min = shape.params * shape.engine_bytes / GIB + ENGINE_MIN_GIB
    least = {**state, "vLLM's weights and 1 GiB": engine_min}
    if sum(least.values()) > free:
        raise BenchctlError(
            f"{head} {_fmt(least)} before any rollout (16 bytes a parameter: fp32 weights, gradients and AdamW's two"
            " moments); use --engine verl (FSDP over several GPUs) or a smaller model"
        )
    share = cfg.gpu_memory_utilization * total
    need = {**state, f"vLLM's share {cfg.gpu_memory_utilization:g} x {total:.1f}": share}
    if sum(need.values()) > free:
        most = math.floor(100 * (free - sum(state.values())) / total) / 100
        raise BenchctlError(f"{head} the rollout needs {_fmt(need)}; lower --gpu-memory-utilization to {most:g}")
    if share < engine_min:
        least_share = math.ceil(100 * engine_min / total) / 100
        raise BenchctlError(
            f"--gpu-memory-utilization {cfg.gpu_memory_utilization:g} gives vLLM {share:.1f} GiB of this GPU's"
            f" {total:.1f}, too little for --model {cfg.model}'s weights and 1 GiB ({engine_min:.1f} GiB); raise"
            f" --gpu-memory-utilization to {least_share:g}"
        )
    return sum(need.values())
