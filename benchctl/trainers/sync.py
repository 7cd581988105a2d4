"""The weight sync is verified (docs/gpu.md#the-weight-sync-is-verified): after every `engine.load_weights` (each step's
sync, a resumed run's restore) and once when a run is built, the trainer checks, independently of the sync code, that
the engine now computes with the policy's weights.

The probe is one fixed token sequence, built once per run: the task's first problem rendered as the engine
renders prompts, then its gold answer and EOS (at most `PROBE_ANSWER_TOKENS` answer tokens). The engine scores
every token after the first (`Engine.prompt_logprobs`: vLLM's prompt log-probs, one request, greedy, one token
generated, nothing random drawn) and so does the policy (`policy.forward_stats` under the run's compute dtype, no
gradient); both at temperature 1, since vLLM's prompt log-probs are of the raw logits whatever the sampling
temperature. The largest absolute gap must stay under a threshold set by the precision of the two sides:
`FP32_THRESHOLD` when the policy computes in fp32 and the engine holds fp32 weights, else `BF16_THRESHOLD`;
`--sync-check` overrides it (0 turns the check off). Over it, the run stops with one BenchctlError line.

Why absolute: the earlier alarm compared each step's engine/policy gap with its own recent median, so an engine
that never received a weight (a broken sync from step 1) had no good median to be compared with and never fired.

What it cannot see [limits]: a missed sync whose weight change moves no probe log-prob by more than the threshold
(with bf16 on either side, a step at lr 1e-6 on a 1.5B model is below the bf16 noise; a sync that stays broken is
caught once the policy has drifted by more than the threshold, i.e. after some steps, not at the first one), and
parameters the probe's tokens never touch (embedding rows of tokens not in it).
Cost: 7.8 ms per step on the tiny model, 4% of a 0.20 s step of 32 x 8 rollouts (2-core CPU, docs/gpu.md); one
engine request and one policy forward of the probe's length on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchctl.errors import BenchctlError

FP32_THRESHOLD = 1e-3  # nats; the tiny model's fp32 engine and fp32 policy agree to ~1e-5 (tests/trainers)
# nats; bf16 rounding moves single log-probs by up to ~0.1-0.25 (tests/trainers/test_chunked.py: bf16 autocast
# against fp32, max < 0.25), so a tighter bound would stop healthy bf16 runs
BF16_THRESHOLD = 0.25
PROBE_ANSWER_TOKENS = 8


@dataclass(frozen=True)
class Probe:
    """A fixed token sequence and the largest engine/policy log-prob gap allowed on it (0: not checked)."""

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
        threshold = FP32_THRESHOLD if compute_dtype == torch.float32 and engine_fp32 else BF16_THRESHOLD
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
    """The largest |engine - policy| log-prob on the probe after a sync (`sync/probe_gap`); BenchctlError when it
    exceeds the probe's threshold. `policy`: the trainer's `build.Policy` (model, pad_id, device, precision)."""
    from benchctl.trainers.device import threads

    if not probe.threshold:
        return float("nan")
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
