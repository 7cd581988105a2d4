"""Length buckets: the update forwards rows grouped by length and trimmed of padding columns, and that changes
neither the log-probabilities, nor the loss, nor the gradient of a mini-batch; the split is the cheapest one."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from benchctl.trainers import batch as batching
from benchctl.trainers import loop
from benchctl.trainers.batch import length_buckets, pack
from benchctl.trainers.policy import completion_logits, gather_logprobs, sequence_logprobs


def _random_batch(seed: int, rows: int, max_prompt: int = 7, max_completion: int = 12, group: int = 1):
    """`rows` rollouts, `group` consecutive rows per prompt (a GRPO group)."""
    rng = np.random.default_rng(seed)
    distinct = [list(rng.integers(5, 40, size=rng.integers(2, max_prompt + 1))) for _ in range(rows // group)]
    prompts = [p for p in distinct for _ in range(group)]
    completions = [list(rng.integers(5, 40, size=rng.integers(1, max_completion + 1))) for _ in range(rows)]
    return pack(prompts, completions, pad_id=0)


def _cost(batch, buckets, overhead):
    """Tokens forwarded: each distinct prompt once per bucket, every row's completion, plus the overhead."""
    prompt = batch.attention_mask[:, : batch.prompt_width].sum(1)
    completion = batch.mask.sum(1).clamp(min=1)
    return sum(
        len(set(batch.prompt_index[b].tolist())) * int(prompt[b].max()) + len(b) * int(completion[b].max()) + overhead
        for b in buckets
    )


@pytest.mark.parametrize("seed", range(8))
def test_buckets_partition_the_rows_at_the_least_cost_of_any_contiguous_split(seed):
    rows, group = (8, 2) if seed % 2 else (7, 1)
    batch = _random_batch(seed, rows=rows, group=group)
    overhead = [0, 8, 30][seed % 3]
    buckets = length_buckets(batch, overhead)
    assert sorted(torch.cat(buckets).tolist()) == list(range(rows))
    prompt, completion = batch.attention_mask[:, : batch.prompt_width].sum(1).numpy(), batch.mask.sum(1).numpy()
    order = np.lexsort((batch.prompt_index.numpy(), prompt, completion))
    best = min(  # every split of the length-sorted rows into contiguous runs
        _cost(batch, [torch.as_tensor(order[i:j]) for i, j in zip((0, *cuts), (*cuts, rows))], overhead)
        for r in range(rows)
        for cuts in itertools.combinations(range(1, rows), r)
    )
    assert _cost(batch, buckets, overhead) == best


def test_a_large_overhead_keeps_one_bucket_and_no_overhead_separates_lengths():
    batch = _random_batch(0, rows=16)
    assert len(length_buckets(batch, overhead=10**9)) == 1
    for bucket in length_buckets(batch, overhead=0):  # each bucket: one completion length
        assert len(set(batch.mask[bucket].sum(1).tolist())) == 1


def test_trimmed_rows_have_the_log_probs_of_the_full_batch(tiny_model):
    from benchctl.trainers.weights import load_policy

    model = load_policy(str(tiny_model), "cpu").eval()
    batch = _random_batch(3, rows=10)
    with torch.no_grad():
        full = gather_logprobs(completion_logits(model, batch, 0.7), batch.tokens) * batch.mask
        for bucket in length_buckets(batch, overhead=0):
            piece = batch.rows(bucket).trim()
            t = piece.tokens.shape[1]
            assert t == int(batch.mask[bucket].sum(1).max()) and piece.tokens.shape[1] <= batch.tokens.shape[1]
            part = gather_logprobs(completion_logits(model, piece, 0.7), piece.tokens) * piece.mask
            torch.testing.assert_close(part, full[bucket, :t], atol=1e-5, rtol=1e-5)
            assert float(full[bucket, t:].abs().sum()) == 0.0
        torch.testing.assert_close(sequence_logprobs(model, batch, 0.7), full, atol=1e-5, rtol=1e-5)


def test_a_shared_prompt_forward_gives_the_per_row_log_probs_and_gradient(tiny_model):
    """Checked in float64, where summation order cannot decide the outcome on any CPU: in float32 the two paths add
    the same terms in another order and 11 of 821,760 gradient elements differed by up to 7.9e-5 on an AMD EPYC.
    transformers computes the rotary cos/sin in float32 even for a float64 model, so agreement is bounded by float32
    rounding of those (measured 7e-8 of the largest gradient): the tolerance is 1e-6 of it."""
    from benchctl.trainers.weights import load_policy

    batch = _random_batch(7, rows=12, group=4)
    assert batch.prompt_index.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    results = []
    for share in (False, True):
        model = load_policy(str(tiny_model), "cpu").to(torch.float64)
        logp = gather_logprobs(completion_logits(model, batch, 0.7, share_prompts=share), batch.tokens) * batch.mask
        (logp * torch.linspace(-1, 1, 12, dtype=torch.float64)[:, None]).sum().backward()
        results.append((logp.detach(), torch.cat([p.grad.flatten() for p in model.parameters()])))
    (per_row, grad_per_row), (shared, grad_shared) = results
    scale = float(grad_per_row.abs().max())
    assert scale > 0
    torch.testing.assert_close(shared, per_row, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(grad_shared, grad_per_row, atol=1e-6 * scale, rtol=0)


@pytest.mark.parametrize("agg", ["seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm"])
def test_bucketed_minibatch_has_the_loss_metrics_and_gradient_of_one_forward(tiny_model, monkeypatch, agg):
    from benchctl.losses import get_loss
    from benchctl.trainers.build import Objective
    from benchctl.trainers.rollout_correction import RolloutCorrection
    from benchctl.trainers.weights import load_policy

    batch = _random_batch(5, rows=12, group=3)
    adv = torch.linspace(-1.0, 1.0, 12)[:, None].expand_as(batch.mask).contiguous()
    nondeg = torch.ones(12, dtype=torch.bool)
    old = torch.randn(batch.mask.shape) * 0.1 - 3.0  # off-policy: some ratios are clipped
    results = []
    for split in (False, True):
        if not split:
            monkeypatch.setattr(batching, "length_buckets", lambda b: [torch.arange(b.tokens.shape[0])])
        else:
            monkeypatch.setattr(batching, "length_buckets", lambda b: length_buckets(b, overhead=0))
        model = load_policy(str(tiny_model), "cpu")
        cfg = SimpleNamespace(
            temperature=1.0, clip_low=0.2, clip_high=0.28, ratio="token", kl_coef=0.0, max_grad_norm=0
        )
        cfg.micro_batch_tokens = None
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        policy = SimpleNamespace(model=model, optimizer=opt, compute_dtype=torch.float32, device="cpu")
        loss = Objective(get_loss("ppo_clip", clip_high=0.28), agg, 0.0, 12, RolloutCorrection())
        rows, active = torch.arange(12), torch.ones(12, dtype=torch.bool)
        sums = loop._minibatch_step(cfg, policy, loss, batch, batch.mask, rows, active, adv, nondeg, old, None)
        results.append((sums, torch.cat([p.grad.flatten() for p in model.parameters()])))
    (one, grad_one), (split, grad_split) = results
    assert set(one) == set(split)
    for key in one:
        assert split[key] == pytest.approx(one[key], rel=1e-5, abs=1e-7), key
    assert 0 < one["policy/clip_low"] + one["policy/clip_high"] < 1
    torch.testing.assert_close(grad_split, grad_one, atol=1e-6, rtol=1e-4)
    assert grad_one.abs().sum() > 0


def test_entropy_and_gap_measurement_is_the_same_in_buckets_or_one_forward(tiny_model, monkeypatch):
    from benchctl.trainers.runtime import PhaseTimer
    from benchctl.trainers.weights import load_policy

    batch = _random_batch(6, rows=12, group=3)
    engine_lp = torch.randn(batch.mask.shape) * 0.1 - 2.0
    model = load_policy(str(tiny_model), "cpu")
    cfg = SimpleNamespace(temperature=1.0, group_size=3, micro_batch_tokens=None)
    policy = SimpleNamespace(model=model, compute_dtype=torch.float32, device="cpu")
    measured = []
    for split in (False, True):
        buckets = (lambda b: length_buckets(b, overhead=0)) if split else (lambda b: [torch.arange(b.tokens.shape[0])])
        monkeypatch.setattr(batching, "length_buckets", buckets)
        adv = torch.linspace(-1.0, 1.0, 12)[:, None].expand_as(batch.mask).contiguous()
        measured.append(loop.measure(cfg, policy, batch, engine_lp, adv, PhaseTimer())[0])
    for key, value in measured[0].items():
        assert measured[1][key] == pytest.approx(value, rel=1e-5), key
    assert measured[0]["policy/entropy"] > 0 and measured[0]["logprob/engine_gap"] > 0
