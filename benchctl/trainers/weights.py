"""The policy's weights: loading the HF model, the state dict the engine loads, and `update/param_change`."""

from __future__ import annotations

import torch


def load_policy(path: str, device: str, dtype: torch.dtype | None = None):
    """The HF causal LM at `path` in training mode, its weights in `dtype`; None (the default): bf16 on CUDA [our
    choice, as veRL/TRL], fp32 on CPU. With the fp32 master weights of `compute_context` (docs/gpu.md#the-settings) pass
    `dtype=torch.float32` on every device: AdamW then steps fp32 weights and fp32 state, whatever the compute."""
    from transformers import AutoModelForCausalLM

    if dtype is None:
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
    model.config.use_cache = False
    model.train()
    return model


def engine_state_dict(model) -> dict[str, torch.Tensor]:
    """The policy's weights as the engine loads them (detached, same names as the HF checkpoint)."""
    return {name: tensor.detach() for name, tensor in model.state_dict().items()}


def param_snapshot(model, stride: int = 1) -> list[torch.Tensor]:
    """fp32 copies of every `stride`-th element of each trainable parameter (the "before" of `param_change`).

    stride 1 is exact and costs 4 bytes per weight; stride k keeps 1/k of them, a fixed subsample whose
    `param_change` estimates the full one (`tests/trainers/test_precision.py` measures the error)."""
    return [p.detach().reshape(-1)[::stride].float().clone() for p in model.parameters() if p.requires_grad]


def param_change(model, snapshot: list[torch.Tensor], stride: int = 1) -> torch.Tensor:
    """`update/param_change`: ||w_after - w_before|| / ||w_before|| over the (master) weights, a 0-d tensor.

    One parameter at a time, so no second full-size buffer is made; `snapshot` from `param_snapshot` with the
    same `stride`. A step that rounds away (bf16 weights at lr 1e-6) gives exactly 0."""
    num = torch.zeros((), dtype=torch.float64)
    den = torch.zeros((), dtype=torch.float64)
    params = [p for p in model.parameters() if p.requires_grad]
    for p, before in zip(params, snapshot, strict=True):
        now = p.detach().reshape(-1)[::stride].float()
        num += torch.linalg.vector_norm(now - before).double().cpu() ** 2
        den += torch.linalg.vector_norm(before).double().cpu() ** 2
    return (num.sqrt() / den.sqrt().clamp(min=1e-30)).float()


def param_stride(model, exact_below: int = 50_000_000) -> int:
    """`param_snapshot`'s stride for `update/param_change`: 1 (exact) below `exact_below` parameters, else 64
    (a fixed 1/64 subsample: 1/16 of a bf16 copy's memory on a 1.5B model, 94 MiB instead of 6 GiB)."""
    return 1 if sum(p.numel() for p in model.parameters()) < exact_below else 64
