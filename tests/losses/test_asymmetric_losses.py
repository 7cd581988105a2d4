"""UP and TOPR (benchctl.losses.asymmetric): equal to transcriptions of the reference implementations to 1e-12 on
random fp64 batches with padding (TRL PR #6579's UPTrainer._compute_loss at huggingface/trl commit d841558, veRL PR
#7022's compute_policy_loss_up, veRL PR #6986's compute_policy_loss_topr at verl-project/verl commit a578c2f), and
the properties that define them: positive advantages keep the plain policy gradient however far off-policy, negative
ones get the trust region / the taper, and each logs the evidence that it acted."""

import pytest
import torch
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.losses import get_loss, parse_loss
from benchctl.losses.aggregation import aggregation_weights

FP64 = {"rtol": 1e-12, "atol": 1e-14}


def batch(seed, n=8, t=12, token_adv=False, spread=0.5):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, t + 1, (n,), generator=g)
    lengths[0] = t
    mask = (torch.arange(t)[None, :] < lengths[:, None]).double()  # (N, T)
    logp = torch.log(torch.rand(n, t, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp + spread * torch.randn(n, t, generator=g, dtype=torch.float64)
    adv = torch.randn(n, t if token_adv else 1, generator=g, dtype=torch.float64).expand(n, t).clone()
    return logp, old, adv, mask


def grad_of(fn, logp):
    lp = logp.clone().requires_grad_(True)
    value = fn(lp)
    value.backward()
    return value.detach(), lp.grad


def ours(name, params, agg, logp, old, adv, mask):
    return grad_of(lambda lp: get_loss(name, **params)(lp, old, adv, mask, agg)[0], logp)


# ---- transcriptions of the reference code (their per-token losses; aggregation as the reference applies it) ----


def trl_up_per_token(per_token_logps, old_per_token_logps, advantages, epsilon_low, epsilon_high, delta):
    """TRL PR #6579 UPTrainer._compute_loss, importance_sampling_level='token', no KL/masks (commit d841558)."""
    coef_1 = torch.exp(per_token_logps - old_per_token_logps)
    anchored_log_ratio = per_token_logps - per_token_logps.detach()
    up_per_token_loss = -anchored_log_ratio.exp() * advantages
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    if delta is not None:
        coef_1 = torch.clamp(coef_1, max=delta)
    clipped_per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
    return torch.where(advantages > 0, up_per_token_loss, clipped_per_token_loss)


def verl_up_per_token(log_prob, old_log_prob, advantages, clip_ratio_low, clip_ratio_high, clip_ratio_c):
    """veRL PR #7022 compute_policy_loss_up as a public note on the PR quotes it (the PR diff was not available):
    self-anchored REINFORCE for A > 0, GRPO clip + dual-clip otherwise."""
    ratio = torch.exp(log_prob - old_log_prob)
    r_tilde = torch.exp(log_prob - log_prob.detach())
    pg_losses_pos = -advantages * r_tilde
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    pg_losses3 = -advantages * clip_ratio_c
    clip_pg_losses2 = torch.min(pg_losses3, clip_pg_losses1)
    pg_losses_neg = torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    return torch.where(advantages > 0, pg_losses_pos, pg_losses_neg)


def verl_topr_per_token(old_log_prob, log_prob, advantages, response_mask, ratio_lower=0.0, ratio_upper=1.0):
    """veRL PR #6986 compute_policy_loss_topr (commit a578c2f), before its seq-mean-token-mean agg_loss."""
    negative_approx_kl = log_prob - old_log_prob
    seq_lengths = torch.sum(response_mask, dim=-1).clamp(min=1)
    seq_log_ratio = torch.sum(negative_approx_kl * response_mask, dim=-1) / seq_lengths
    seq_ratio = torch.exp(torch.clamp(seq_log_ratio, max=10.0))
    seq_advantages = torch.sum(advantages * response_mask, dim=-1) / seq_lengths
    taper_weights = torch.where(
        seq_advantages >= 0, torch.ones_like(seq_ratio), torch.clamp(seq_ratio, min=ratio_lower, max=ratio_upper)
    ).detach()
    return -advantages * log_prob * taper_weights.unsqueeze(-1)


def weighted(per_token, mask, agg):
    return (
        aggregation_weights(mask, agg, torch.ones(mask.shape[0], dtype=torch.bool), mask.shape[1]) * per_token
    ).sum()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("delta", [None, 1.6, 4.0])
def test_up_equals_trls_up_trainer_under_its_token_mean(seed, delta):
    logp, old, adv, mask = batch(seed, token_adv=seed % 2 == 1)
    ref = grad_of(lambda lp: weighted(trl_up_per_token(lp, old, adv, 0.2, 0.28, delta), mask, "token-mean"), logp)
    got = ours("up", {"clip_low": 0.2, "c": delta}, "token-mean", logp, old, adv, mask)
    torch.testing.assert_close(got[0], ref[0], **FP64)
    torch.testing.assert_close(got[1], ref[1], **FP64)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_up_with_c_3_equals_verls_up_loss(seed, agg):
    logp, old, adv, mask = batch(seed, spread=1.0)
    ref = grad_of(lambda lp: weighted(verl_up_per_token(lp, old, adv, 0.2, 0.28, 3.0), mask, agg), logp)
    got = ours("up", {"clip_low": 0.2, "c": 3.0}, agg, logp, old, adv, mask)
    torch.testing.assert_close(got[0], ref[0], **FP64)
    torch.testing.assert_close(got[1], ref[1], **FP64)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (0.1, 2.0)])
def test_topr_mean_level_equals_verls_topr_loss(seed, bounds):
    """veRL's agg_loss divides a row's sum by |o_i| + 1e-8 (relative 1e-8/|o_i|, the losses tests' EPS8); the per-token
    losses are aggregated here by the same seq-mean-token-mean weights for both, so they agree to 1e-12."""
    logp, old, adv, mask = batch(seed, token_adv=seed % 2 == 1)
    agg = "seq-mean-token-mean"
    ref = grad_of(lambda lp: weighted(verl_topr_per_token(old, lp, adv, mask, *bounds), mask, agg), logp)
    params = {"ratio_low": bounds[0], "ratio_high": bounds[1], "ratio_level": "mean"}
    got = ours("topr", params, agg, logp, old, adv, mask)
    torch.testing.assert_close(got[0], ref[0], **FP64)
    torch.testing.assert_close(got[1], ref[1], **FP64)


def test_up_keeps_the_plain_gradient_of_positive_tokens_however_far_off_policy():
    logp, old, adv, mask = batch(11, spread=2.0, token_adv=True)
    _, grad = ours("up", {}, "token-mean", logp, old, adv, mask)
    plain = -adv * mask / mask.sum()  # d/dlogp of -A log pi under token-mean
    r = torch.exp(logp - old)
    pos, far = (adv > 0) & (mask > 0), r > 1.2
    assert int((pos & far).sum()) > 0
    torch.testing.assert_close(grad[pos], plain[pos], **FP64)
    _, ppo = ours("ppo_clip", {"clip_low": 0.2, "clip_high": 0.2}, "token-mean", logp, old, adv, mask)
    neg = (adv <= 0) & (mask > 0)
    torch.testing.assert_close(grad[neg], ppo[neg], **FP64)  # A <= 0: GRPO's clip exactly
    assert bool((ppo[pos & far] == 0).all())  # where PPO cut the gradient, UP keeps it


def test_topr_weights_negative_rows_by_the_truncated_trajectory_ratio_and_positive_rows_by_one():
    logp, old, adv, mask = batch(12, spread=0.3)
    _, grad = ours("topr", {}, "seq-mean-token-mean", logp, old, adv, mask)
    rho = torch.exp(((logp - old) * mask).sum(dim=1, keepdim=True))  # the paper's pi(y|x) / mu(y|x)
    w = torch.where(adv[:, :1] < 0, rho.clamp(0.0, 1.0), torch.ones_like(rho))  # (N, 1)
    want = -w * adv * mask / (mask.sum(dim=1, keepdim=True) * mask.shape[0])
    torch.testing.assert_close(grad, want, **FP64)
    assert 0 < int(((rho < 1) & (adv[:, :1] < 0)).sum()) and int(((rho > 1) & (adv[:, :1] > 0)).sum()) > 0


def test_topr_sum_and_mean_levels_differ_off_policy_and_agree_on_policy():
    logp, old, adv, mask = batch(13)
    a = ours("topr", {}, "token-mean", logp, old, adv, mask)[1]
    b = ours("topr", {"ratio_level": "mean"}, "token-mean", logp, old, adv, mask)[1]
    assert float((a - b).abs().max()) > 1e-5  # token-mean gradients are ~1e-2 here
    on_a = ours("topr", {}, "token-mean", logp, logp, adv, mask)
    on_b = ours("gpg", {}, "token-mean", logp, logp, adv, mask)
    torch.testing.assert_close(on_a[0], on_b[0], **FP64)  # on-policy TOPR is REINFORCE, value and gradient
    torch.testing.assert_close(on_a[1], on_b[1], **FP64)


@pytest.mark.parametrize("name", ["up", "topr"])
def test_mechanism_acts_off_policy_and_not_on_policy(name):
    logp, old, adv, mask = batch(15, spread=1.0)
    rho = ((logp - old) * mask).sum(dim=1)
    tapered = (adv[:, 0] < 0) & (rho < 0)  # (N,) negative rows whose ratio fell below 1
    beyond = (adv > 0) & (torch.exp(logp - old) > 1.2) & (mask > 0)  # (N, T) positive tokens past the clip
    assert bool(tapered.any()) and bool(beyond.any())
    loss = get_loss(name)
    _, off = loss(logp, old, adv, mask, "token-mean")
    _, on = loss(logp, logp, adv, mask, "token-mean")
    assert loss.mechanisms({k: float(v) for k, v in off.items()}) == {name: 1.0}
    assert loss.mechanisms({k: float(v) for k, v in on.items()}) == {name: 0.0}
    assert get_loss("ppo_clip").mechanisms({}) == {}


@pytest.mark.parametrize(
    "spec, message",
    [
        ("up(clip_low=1.0)", "clip_low=1.0"),
        ("up(c=0.5)", "c=0.5"),
        ("topr(ratio_low=2)", "ratio_high=1.0"),
        ("topr(ratio_low=-1)", "ratio_low=-1.0"),
        ("topr(ratio_level=token)", "choose one of: sum, mean"),
    ],
)
def test_out_of_range_hyperparameters_are_one_line_errors_and_exit_2(spec, message):
    with pytest.raises(BenchctlError, match=message) as info:
        parse_loss(spec)
    assert "\n" not in str(info.value)
    result = CliRunner().invoke(app, ["losses", "show", spec])
    assert result.exit_code == 2 and "Traceback" not in result.output
