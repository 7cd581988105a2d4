"""Bounded memory: log-probs and entropy computed in token chunks from the decoder's hidden states
equal the full-logits path in value and gradient, and micro-batches cut by a token budget add up to the
mini-batch's loss and gradient."""

import numpy as np
import pytest
import torch

from benchctl.losses import get_loss
from benchctl.losses.aggregation import aggregation_weights
from benchctl.trainers.batch import length_buckets, pack, token_budget_split
from benchctl.trainers.policy import (
    chunked_logprobs_entropy,
    completion_hidden,
    completion_logits,
    gather_logprobs,
    lm_head_weight,
    token_entropy,
)
from benchctl.trainers.weights import load_policy


def _random_batch(seed: int, rows: int, group: int = 1, max_prompt: int = 7, max_completion: int = 12):
    """`rows` rollouts, `group` consecutive rows per prompt, tokens from the tiny model's vocabulary."""
    rng = np.random.default_rng(seed)
    distinct = [list(rng.integers(5, 40, size=rng.integers(2, max_prompt + 1))) for _ in range(rows // group)]
    prompts = [p for p in distinct for _ in range(group)]
    completions = [list(rng.integers(5, 40, size=rng.integers(1, max_completion + 1))) for _ in range(rows)]
    return pack(prompts, completions, pad_id=0)


@pytest.mark.parametrize("chunk", [1, 7, 16, 50, 10_000])
def test_chunked_logprobs_and_entropy_equal_the_full_logits_path_with_gradients(chunk):
    torch.manual_seed(0)
    n, t, d, v = 3, 5, 8, 33  # N*T = 15: chunks 7 and 50 do not divide it
    hidden = torch.randn(n, t, d, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(v, d, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, v, (n, t))
    probe_lp, probe_ent = torch.randn(n, t, dtype=torch.float64), torch.randn(n, t, dtype=torch.float64)

    logits = hidden @ weight.t() / 0.7  # (N, T, V)
    full_lp, full_ent = gather_logprobs(logits, tokens), token_entropy(logits)
    grads_full = torch.autograd.grad((full_lp * probe_lp).sum() + (full_ent * probe_ent).sum(), (hidden, weight))

    lp, ent = chunked_logprobs_entropy(hidden, weight, tokens, 0.7, chunk_tokens=chunk)
    assert lp.dtype == torch.float32  # logits are computed in fp32 whatever the input dtype
    grads = torch.autograd.grad((lp * probe_lp).sum() + (ent * probe_ent).sum(), (hidden, weight))
    torch.testing.assert_close(lp.double(), full_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent.double(), full_ent, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads, grads_full):
        torch.testing.assert_close(got.double(), want, atol=1e-4, rtol=1e-4)


def test_chunked_forward_keeps_no_chunk_by_vocabulary_tensor_for_the_backward():
    """What autograd saves: the checkpointed chunks keep their inputs only, the plain path the (N*T, V) logits."""
    hidden = torch.randn(4, 16, 8, requires_grad=True)
    weight = torch.randn(1000, 8, requires_grad=True)
    tokens = torch.randint(0, 1000, (4, 16))
    saved = []

    def pack_hook(x):
        saved.append(x.numel())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack_hook, lambda x: x):
        chunked_logprobs_entropy(hidden, weight, tokens, 1.0, chunk_tokens=8)
    assert max(saved) < 64 * 1000  # nothing of N*T x V size (the weight itself is 8,000)
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, lambda x: x):
        logits = hidden @ weight.t()
        gather_logprobs(logits, tokens)
    assert max(saved) >= 64 * 1000


@pytest.mark.parametrize("group", [1, 4])  # per-row forward and the shared-prompt KV-cache path
def test_completion_hidden_through_the_head_gives_completion_logits(tiny_model, group):
    model = load_policy(str(tiny_model), "cpu").eval()
    batch = _random_batch(5, rows=8, group=group)
    with torch.no_grad():
        logits = completion_logits(model, batch, 0.8)  # (N, T, V)
        hidden = completion_hidden(model, batch)  # (N, T, D)
        weight = lm_head_weight(model)
        torch.testing.assert_close(hidden @ weight.t() / 0.8, logits, atol=1e-4, rtol=1e-4)
        lp, ent = chunked_logprobs_entropy(hidden, weight, batch.tokens, 0.8, chunk_tokens=13)
        torch.testing.assert_close(lp, gather_logprobs(logits, batch.tokens), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(ent, token_entropy(logits), atol=1e-4, rtol=1e-4)
    assert weight is model.get_input_embeddings().weight  # tied: one Parameter, both gradients


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


def test_chunked_hidden_path_gives_the_model_gradient_of_the_logits_path(tiny_model):
    model = load_policy(str(tiny_model), "cpu")
    batch = _random_batch(9, rows=8, group=4)
    probe = torch.randn(batch.tokens.shape, generator=torch.Generator().manual_seed(1)) * batch.mask
    model.zero_grad()
    (gather_logprobs(completion_logits(model, batch, 0.9), batch.tokens) * probe).sum().backward()
    want = _grads(model)
    model.zero_grad()
    hidden = completion_hidden(model, batch)
    lp, _ = chunked_logprobs_entropy(hidden, lm_head_weight(model), batch.tokens, 0.9, chunk_tokens=11)
    (lp * probe).sum().backward()
    for got, ref in zip(_grads(model), want):
        torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-3)


def _widths(batch, rows):
    piece = batch.rows(rows).trim()
    return len(rows) * piece.input_ids.shape[1]


@pytest.mark.parametrize("budget", [1, 20, 45, 100, 10_000])
def test_token_budget_split_partitions_rows_under_the_budget(budget):
    batch = _random_batch(2, rows=12, group=2)
    parts = token_budget_split(batch, budget)
    assert sorted(torch.cat(parts).tolist()) == list(range(12))
    for part in parts:
        assert len(part) == 1 or _widths(batch, part) <= budget  # a single row may exceed it
    if budget == 10_000:
        assert len(parts) == len(length_buckets(batch))  # a budget that binds nowhere changes nothing
    if budget == 1:
        assert len(parts) == 12


def test_micro_batch_losses_add_up_to_the_mini_batch_loss_and_gradient(tiny_model):
    model = load_policy(str(tiny_model), "cpu")
    batch = _random_batch(4, rows=12, group=3)
    gen = torch.Generator().manual_seed(3)
    adv = torch.randn(batch.tokens.shape, generator=gen) * batch.mask  # (N, T)
    old = -torch.rand(batch.tokens.shape, generator=gen)  # (N, T)
    nondeg = torch.ones(12, dtype=torch.bool)
    weights = aggregation_weights(batch.mask, "token-mean", nondeg, 16)  # over the WHOLE mini-batch

    def loss_of(rows):
        piece = batch.rows(rows).trim()
        t = piece.tokens.shape[1]
        hidden = completion_hidden(model, piece)
        lp, _ = chunked_logprobs_entropy(hidden, lm_head_weight(model), piece.tokens, 1.0, chunk_tokens=16)
        loss = get_loss("ppo_clip", clip_low=0.2, clip_high=0.28)
        return loss(lp, old[rows, :t], adv[rows, :t], piece.mask, weights[rows, :t])[0]

    model.zero_grad()
    whole = loss_of(torch.arange(12))
    whole.backward()
    want = _grads(model)
    model.zero_grad()
    parts = token_budget_split(batch, micro_batch_tokens=40)
    assert len(parts) > 2
    total = 0.0
    for rows in parts:
        loss = loss_of(rows)
        loss.backward()
        total += float(loss.detach())
    assert total == pytest.approx(float(whole), rel=1e-5, abs=1e-7)
    for got, ref in zip(_grads(model), want):
        torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-4)


def test_chunked_path_under_bf16_autocast_recomputes_in_bf16_and_stays_near_fp32(tiny_model):
    """The checkpointed chunks recompute under the forward's autocast state: the backward runs and the values
    stay within bf16 rounding of the fp32 path."""
    from benchctl.trainers.device import compute_context

    model = load_policy(str(tiny_model), "cpu")
    batch = _random_batch(6, rows=8, group=4)
    weight = lm_head_weight(model)
    with torch.no_grad():
        fp32, _ = chunked_logprobs_entropy(completion_hidden(model, batch), weight, batch.tokens, 1.0, 9)
    model.zero_grad()
    with compute_context(torch.bfloat16, "cpu"):
        hidden = completion_hidden(model, batch)
        lp, ent = chunked_logprobs_entropy(hidden, weight, batch.tokens, 1.0, chunk_tokens=9)
    assert lp.dtype == torch.float32  # the head GEMM ran in bf16 (gap below), the log-softmax in fp32
    ((lp + 0.1 * ent) * batch.mask).sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())
    gap = (lp.detach() - fp32).abs() * batch.mask
    assert 0.0 < float(gap.max()) < 0.25  # bf16 logits: ~3 significant digits
    assert float(gap.sum() / batch.mask.sum()) < 0.02


@pytest.mark.parametrize("budget,chunk", [(30, 5), (10_000, 1024)])
def test_chunked_sequence_logprobs_equal_sequence_logprobs(tiny_model, budget, chunk):
    from benchctl.trainers.policy import chunked_sequence_logprobs, sequence_logprobs

    model = load_policy(str(tiny_model), "cpu").eval()
    batch = _random_batch(8, rows=10, group=2)
    logp, entropy = chunked_sequence_logprobs(model, batch, 0.7, micro_batch_tokens=budget, chunk_tokens=chunk)
    torch.testing.assert_close(logp, sequence_logprobs(model, batch, 0.7), atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        full = token_entropy(completion_logits(model, batch, 0.7)) * batch.mask
    torch.testing.assert_close(entropy, full, atol=1e-4, rtol=1e-4)
    assert not logp.requires_grad
