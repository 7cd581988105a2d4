"""The policy's weights: loading the HF model (full, or LoRA adapters on a frozen base), the state dict the engine
loads (adapters merged in), and `update/param_change`.

LoRA (Hu et al., arXiv:2106.09685, Eq. 3): each targeted linear map W (d_out, d_in) computes h = W x + s B A x with
A (r, d_in), B (d_out, r), s = alpha / r; W is frozen, A and B are trained (peft's `LoraConfig`, A Kaiming-uniform and
B = 0 at init, so the adapted model starts as the base). The engine has no adapters: `engine_state_dict` sends the
merged weight W + s (B @ A) under the base's own names, computed into new tensors, so the trainer's model (base and
adapters) is never mutated (peft's `merge_and_unload` would fold them in place). Schulman et al. (Thinking Machines,
"LoRA Without Regret", 2025, §"Reinforcement learning") report rank 1 matching full fine-tuning in policy-gradient
RL: the default rank here is 1 when LoRA is on (`--lora-rank`), alpha 32 and every linear layer but the LM head, the
settings of that note [our choice of defaults].
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

ADAPTER_DIR = "adapter"  # a LoRA policy's adapters (peft folder) inside its exported model/ folder (checkpoint.py)


@dataclass(frozen=True)
class LoraSettings:
    """A LoRA policy's adapters: rank r, alpha (scale s = alpha / r) and the targeted modules."""

    rank: int
    alpha: float
    targets: str  # "all-linear" (peft: every linear layer but the LM head) or a comma list of module names

    def peft_config(self):
        from peft import LoraConfig

        targets = self.targets if self.targets == "all-linear" else [t.strip() for t in self.targets.split(",")]
        return LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=targets, lora_dropout=0.0, bias="none")


def lora_settings(cfg) -> LoraSettings | None:
    """The run's `LoraSettings` from `--lora-rank/--lora-alpha/--lora-targets`; None for full fine-tuning (rank 0)."""
    if not getattr(cfg, "lora_rank", 0):
        return None
    return LoraSettings(cfg.lora_rank, float(cfg.lora_alpha), cfg.lora_targets)


def load_trainable(source: str, checkpoint: Path | None, device: str, lora: LoraSettings | None):
    """The trained model in fp32: full fine-tuning loads `checkpoint` (a checkpoint's model/ folder) or `source`;
    LoRA wraps the frozen `source` in fresh adapters, or in the checkpoint's own (`checkpoint/adapter`, exact)."""
    if lora is None:
        return load_policy(str(checkpoint or source), device, dtype=torch.float32)
    from peft import PeftModel, get_peft_model

    base = load_policy(source, device, dtype=torch.float32)
    if checkpoint is None:
        model = get_peft_model(base, lora.peft_config())
    else:
        model = PeftModel.from_pretrained(base, str(Path(checkpoint) / ADAPTER_DIR), is_trainable=True)
    model.train()
    return model


def is_lora(model) -> bool:
    from peft import PeftModel

    return isinstance(model, PeftModel)


def merged_state_dict(model) -> dict[str, torch.Tensor]:
    """The base's weights with every LoRA layer merged, W + s (B @ A), under the base model's names; new tensors,
    the model untouched. `model`: a peft model with one adapter."""
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    merged = {}
    for prefix, module in base.named_modules():
        if isinstance(module, LoraLayer):
            (adapter,) = module.active_adapters
            a, b = module.lora_A[adapter].weight, module.lora_B[adapter].weight  # (r, d_in), (d_out, r)
            delta = (b @ a) * module.scaling[adapter]  # (d_out, d_in): peft's own merge, operand for operand
            merged[f"{prefix}.weight"] = (module.base_layer.weight + delta).detach()
    out = {}
    for name, tensor in base.state_dict().items():
        if ".lora_" in name:
            continue
        name = name.replace(".base_layer.", ".")
        out[name] = merged.get(name, tensor.detach())
    return out


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
    """The policy's weights as the engine loads them (detached, same names as the HF checkpoint); a LoRA policy's
    adapters merged into its base (`merged_state_dict`)."""
    if is_lora(model):
        return merged_state_dict(model)
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
