"""The per-step gradient-variance proxy (`metrics.variance_proxy`, veRL 0.9.1's compute_variance_proxy_metrics)."""

import numpy as np
import pytest
import torch

from benchctl.trainers.metrics import variance_proxy


def test_w_score_is_the_squared_norm_of_the_log_probs_logit_gradient():
    torch.manual_seed(0)
    logits = torch.randn(5, 11, dtype=torch.float64, requires_grad=True)
    tokens = torch.tensor([0, 3, 7, 10, 2])
    for i in range(5):
        (grad,) = torch.autograd.grad(torch.log_softmax(logits[i], -1)[tokens[i]], logits)
        pi = torch.softmax(logits[i], -1)
        w = 1 - 2 * pi[tokens[i]] + (pi**2).sum()
        assert float(grad.pow(2).sum()) == pytest.approx(float(w), rel=1e-12)


def test_total_power_signal_and_noise_follow_the_definitions():
    logp = np.log(np.array([[0.5, 0.25, 1.0], [0.8, 1.0, 1.0]]))
    sum_sq = np.array([[0.5, 0.3, 1.0], [0.7, 1.0, 1.0]])
    adv = np.array([[1.0, 1.0, 0.0], [-2.0, -2.0, -2.0]])
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # padding ignored
    out = variance_proxy(logp, sum_sq, adv, mask, grad_norm=0.5, rows=16)
    w = np.array([(1 - 1.0 + 0.5) + (1 - 0.5 + 0.3), 1 - 1.6 + 0.7])  # [1.3, 0.1]
    total = np.mean(np.array([1.0, 4.0]) * w)
    assert out["variance_proxy/expected_w"] == pytest.approx(w.mean())
    assert out["variance_proxy/expected_a_squared"] == pytest.approx(2.5)
    assert out["variance_proxy/total_power"] == pytest.approx(total)
    assert out["variance_proxy/signal"] == pytest.approx(0.25)
    assert out["variance_proxy/noise"] == pytest.approx((total - 0.25) / 15)


def test_zero_advantages_have_no_power_and_the_noise_is_floored_at_zero():
    logp, sum_sq = np.full((3, 2), np.log(0.5)), np.full((3, 2), 0.5)
    out = variance_proxy(logp, sum_sq, np.zeros((3, 2)), np.ones((3, 2)), grad_norm=1.0, rows=8)
    assert out["variance_proxy/total_power"] == 0.0 and out["variance_proxy/noise"] == 0.0
