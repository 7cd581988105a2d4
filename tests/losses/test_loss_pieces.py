"""The loss pieces against hand computations on small tensors (docs/contract.md §6; PPO/DAPO/GSPO/k3), and the
trainer's default loss (`ppo_clip` with a KL term) on them."""

import math

import pytest
import torch

from benchctl.losses import get_loss
from benchctl.losses._common import clipped_surrogate, k3_kl, log_ratio
from benchctl.losses.aggregation import aggregation_weights

# 3 rows: lengths 2, 3, 1 (T = 3); row 2 belongs to a degenerate group.
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
LOSS = torch.tensor([[1.0, 2.0, 99.0], [3.0, 4.0, 5.0], [6.0, 99.0, 99.0]])  # 99 on padding must not count
NONDEG = torch.tensor([True, True, False])


def aggregate(mode, max_tokens=4):
    return float((aggregation_weights(MASK, mode, NONDEG, max_tokens) * LOSS).sum())


def test_seq_mean_token_mean_is_mean_of_per_sequence_means():
    assert aggregate("seq-mean-token-mean") == pytest.approx(((1 + 2) / 2 + (3 + 4 + 5) / 3 + 6 / 1) / 3)


def test_token_mean_divides_by_all_real_tokens():
    assert aggregate("token-mean") == pytest.approx((1 + 2 + 3 + 4 + 5 + 6) / 6)


def test_seq_mean_token_sum_norm_divides_by_rows_times_max_tokens():
    assert aggregate("seq-mean-token-sum-norm", max_tokens=4) == pytest.approx((1 + 2 + 3 + 4 + 5 + 6) / (3 * 4))


def test_token_mean_nondegenerate_ignores_degenerate_groups():
    assert aggregate("token-mean-nondegenerate") == pytest.approx((1 + 2 + 3 + 4 + 5) / 5)


def test_token_mean_nondegenerate_of_an_all_degenerate_batch_is_zero():
    w = aggregation_weights(MASK, "token-mean-nondegenerate", torch.zeros(3, dtype=torch.bool), 4)
    assert float(w.sum()) == 0.0


def test_unknown_aggregation_is_rejected():
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        aggregation_weights(MASK, "sum", NONDEG, 4)


def test_clipped_surrogate_matches_ppo_by_hand():
    # ratios 0.5, 1.0, 1.5 with A = +1 and A = -1; clip (0.2, 0.28)
    log_r = torch.log(torch.tensor([[0.5, 1.0, 1.5], [0.5, 1.0, 1.5]]))
    adv = torch.tensor([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    loss, low, high = clipped_surrogate(log_r, adv, 0.2, 0.28)
    # A>0: max(-r, -clip(r)) = -min(r, clip(r)): 0.5 -> -0.5, 1 -> -1, 1.5 -> -1.28
    # A<0: max(r, clip(r)): 0.5 -> 0.8, 1 -> 1, 1.5 -> 1.5
    torch.testing.assert_close(loss, torch.tensor([[-0.5, -1.0, -1.28], [0.8, 1.0, 1.5]]))
    assert high.tolist() == [[False, False, True], [False, False, False]]
    assert low.tolist() == [[False, False, False], [True, False, False]]


def test_gspo_sequence_ratio_is_length_normalised_sum_broadcast():
    logp = torch.tensor([[-1.0, -2.0, 0.0]])
    old = torch.tensor([[-1.5, -1.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    seq = log_ratio(logp, old, mask, "sequence")
    torch.testing.assert_close(seq, torch.tensor([[-0.25, -0.25, -0.25]]))  # ((0.5) + (-1.0)) / 2
    torch.testing.assert_close(log_ratio(logp, old, mask, "token"), torch.tensor([[0.5, -1.0, 0.0]]))


def test_k3_kl_is_zero_at_equal_policies_and_matches_formula():
    logp = torch.tensor([-1.0, -2.0])
    ref = torch.tensor([-1.0, -1.5])
    kl = k3_kl(logp, ref)
    assert kl[0] == 0.0
    assert float(kl[1]) == pytest.approx(math.exp(0.5) - 0.5 - 1)


def test_ppo_clip_on_policy_gradient_is_minus_weighted_advantage():
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.7]], requires_grad=True)
    adv = torch.tensor([[2.0, 2.0], [-1.0, -1.0]])
    mask = torch.ones(2, 2)
    w = aggregation_weights(mask, "token-mean", torch.ones(2, dtype=torch.bool), 2)
    loss, metrics = get_loss("ppo_clip", clip_low=0.2, clip_high=0.2)(logp, logp.detach(), adv, mask, w)
    loss.backward()
    assert float(loss) == pytest.approx(-(2 + 2 - 1 - 1) / 4)
    torch.testing.assert_close(logp.grad, torch.tensor([[-0.5, -0.5], [0.25, 0.25]]))
    assert float(metrics["policy/clip_low"]) == 0.0


def test_the_kl_term_adds_kl_coef_times_k3_under_the_same_weights():
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.0, -1.5]])
    mask = torch.ones(1, 2)
    w = aggregation_weights(mask, "token-mean", torch.ones(1, dtype=torch.bool), 2)
    zero = torch.zeros(1, 2)
    ppo = get_loss("ppo_clip", clip_low=0.2, clip_high=0.2)
    loss, metrics = ppo(logp, logp, zero, mask, w, kl_coef=0.1, ref_log_prob=ref)
    assert float(loss) == pytest.approx(0.1 * (math.exp(0.5) - 0.5 - 1) / 2)
    assert float(metrics["policy/kl"]) == pytest.approx((math.exp(0.5) - 0.5 - 1) / 2)
