"""Properties every policy loss must have, on random fp64 tensors with padding: plain policy gradient at ratio 1,
clipping exactly where the formula says, dual-clip bounds, padding ignored, autograd = finite differences,
micro-batch additivity, and `ppo_clip` / `gspo` equal to a direct transcription of the PPO / GSPO formulas."""

import pytest
import torch

from benchctl.losses import get_loss, registered_names
from benchctl.losses.aggregation import aggregation_weights
from benchctl.losses.registry import get_spec

AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
BATCH_COUPLED = {"clip_cov", "kl_cov"}  # token selection over the whole batch: not additive over micro-batches


def reference_loss(logp, old_logp, adv, weights, mask, *, clip_low, clip_high, ratio, kl_coef, ref_logp):
    """PPO (arXiv:1707.06347 Eq. 7) or GSPO (arXiv:2507.18071 Eq. 7) + kl_coef x k3 KL, written out in one place with
    the KL inside the aggregation: sum(W * (max(-A r, -A clip(r)) + kl_coef * k3)) (N, T) -> (loss, metrics)."""
    diff = (logp - old_logp) * mask  # (N, T)
    if ratio == "sequence":  # the length-normalised sequence log ratio, broadcast over the row's tokens
        diff = (diff.sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)).expand_as(diff)
    r = torch.exp(diff)
    pg = torch.maximum(-adv * r, -adv * torch.clamp(r, 1.0 - clip_low, 1.0 + clip_high))  # (N, T)
    tokens = mask.sum().clamp(min=1.0)
    low, high = (adv < 0) & (r < 1.0 - clip_low), (adv > 0) & (r > 1.0 + clip_high)
    kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1.0  # (N, T)
    loss = (weights * (pg + kl_coef * kl)).sum()
    return loss, {
        "loss/pg": (weights * pg).sum().detach(),
        "policy/clip_low": (low * mask).sum() / tokens,
        "policy/clip_high": (high * mask).sum() / tokens,
        "policy/kl": ((kl * mask).sum() / tokens).detach(),
        "loss/total": loss.detach(),
    }


def batch(seed, n=6, t=9, spread=0.3, token_adv=True):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, t + 1, (n,), generator=g)
    lengths[0] = t
    mask = (torch.arange(t)[None, :] < lengths[:, None]).double()  # (N, T)
    logp = torch.log(torch.rand(n, t, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = (logp + spread * torch.randn(n, t, generator=g, dtype=torch.float64)).clamp(max=-1e-3)
    adv = torch.randn(n, t if token_adv else 1, generator=g, dtype=torch.float64).expand(n, t).clone()
    return logp, old, adv, mask


def value_and_grad(name, logp, old, adv, mask, agg, **params):
    lp = logp.clone().requires_grad_(True)
    torch.manual_seed(0)
    loss, metrics = get_loss(name, **params)(lp, old, adv, mask, agg)
    loss.backward()
    return loss.detach(), lp.grad, metrics


@pytest.mark.parametrize("name", [n for n in registered_names() if get_spec(n).inert_on_policy])
def test_at_ratio_one_the_gradient_is_plain_policy_gradient(name):
    logp, _, adv, mask = batch(1, token_adv=False)  # outcome advantages: GSPO/GMPO average A over the row
    _, want, _ = value_and_grad("gpg", logp, logp, adv, mask, "seq-mean-token-mean")
    _, got, _ = value_and_grad(name, logp, logp, adv, mask, "seq-mean-token-mean")
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("agg", AGGS)
def test_ppo_clip_at_ratio_one_is_minus_the_weighted_advantage(agg):
    logp, _, adv, mask = batch(2)
    loss, _, metrics = value_and_grad("ppo_clip", logp, logp, adv, mask, agg, c=3.0)
    weights = aggregation_weights(mask, agg, torch.ones(6, dtype=torch.bool), 9)
    assert float(loss) == pytest.approx(float(-(weights * adv).sum()), rel=1e-13)
    assert all(float(metrics[k]) == 0.0 for k in ("policy/clip_low", "policy/clip_high", "policy/dual_clip"))


def test_ppo_clip_cuts_the_gradient_exactly_where_the_ratio_leaves_the_range_in_the_advantages_direction():
    logp, old, adv, mask = batch(3, spread=0.5)
    _, grad, metrics = value_and_grad("ppo_clip", logp, old, adv, mask, "token-mean", clip_low=0.2, clip_high=0.28)
    r = torch.exp(logp - old)
    clipped = ((adv > 0) & (r > 1.28)) | ((adv < 0) & (r < 0.8))
    real = mask > 0
    assert bool((grad[clipped & real] == 0).all()) and 0 < int((clipped & real).sum()) < int(real.sum())
    want = -adv * r / mask.sum()  # d/dlogp of -A r under token-mean
    torch.testing.assert_close(grad[~clipped & real], want[~clipped & real])
    low = float(((adv < 0) & (r < 0.8) & real).sum() / real.sum())
    assert float(metrics["policy/clip_low"]) == pytest.approx(low)


def test_dual_clip_bounds_the_loss_of_negative_advantage_tokens_at_minus_a_c():
    logp, old, adv, mask = batch(4, spread=1.0)
    c = 1.5
    lp = logp.clone().requires_grad_(True)
    _, metrics = get_loss("ppo_clip", c=c)(lp, old, adv, mask, "token-mean")
    plain, _, _ = value_and_grad("ppo_clip", logp, old, adv, mask, "token-mean")
    dual, grad, _ = value_and_grad("ppo_clip", logp, old, adv, mask, "token-mean", c=c)
    r = torch.exp(logp - old)
    bound = (adv < 0) & (r > c) & (mask > 0)
    assert int(bound.sum()) > 0 and bool((grad[bound] == 0).all())
    per_token = torch.maximum(-adv * r, -adv * r.clamp(0.8, 1.2))
    per_token = torch.where(adv < 0, torch.minimum(per_token, -adv * c), per_token)
    assert float(dual) == pytest.approx(float((per_token * mask).sum() / mask.sum()), rel=1e-12)
    assert float(dual) < float(plain)
    assert float(metrics["policy/dual_clip"]) == pytest.approx(float(bound.sum() / mask.sum()))


@pytest.mark.parametrize("name", registered_names())
def test_padding_never_reaches_the_loss_or_gets_a_gradient(name):
    logp, old, adv, mask = batch(5)
    mask[3] = 0.0  # a row without a token as well
    pad = mask == 0
    g = torch.Generator().manual_seed(9)
    noisy = [x.clone() for x in (logp, old, adv)]
    for x in noisy:
        x[pad] = -torch.rand(int(pad.sum()), generator=g, dtype=torch.float64) * 5 - 0.01
    for agg in AGGS:
        clean = value_and_grad(name, logp, old, adv, mask, agg)
        dirty = value_and_grad(name, *noisy, mask, agg)
        assert torch.isfinite(clean[0]) and float(clean[0]) == pytest.approx(float(dirty[0]), rel=1e-12, abs=1e-15)
        torch.testing.assert_close(dirty[1][~pad], clean[1][~pad], rtol=1e-12, atol=1e-15)
        assert bool((dirty[1][pad] == 0).all())


# Losses with a stop-gradient weight w: d loss / d log pi_t = W_t x (their per-token derivative below), not the
# finite difference of the value (the weight moves with log pi in the value, not in the gradient).
def _sg_derivatives(logp, old, adv, mask):
    r = torch.exp(logp - old)
    p, p_old = torch.exp(logp), torch.exp(old)
    log_w = ((logp - old) * mask).sum(1, keepdim=True)
    phi = torch.where(adv >= 0, torch.exp(3.0 + 2.0 * log_w - 3.0 * torch.exp(log_w)),
                      torch.exp(2.0 + 3.0 * log_w - 2.0 * torch.exp(log_w)))  # fmt: skip
    s = torch.exp(((logp - old) * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True))  # (N, 1)
    abar = (adv * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True)  # (N, 1) TOPR's row advantage
    gspo_clipped = ((adv > 0) & (s > 1 + 4e-4)) | ((adv < 0) & (s < 1 - 3e-4))
    tv = torch.where(adv > 0, p - p_old <= 0.2, p - p_old >= -0.2)
    bkl = p_old * (old - logp) + (1 - p_old) * torch.log((1 - p_old + 1e-8) / (1 - p + 1e-8))
    kl = torch.where(adv > 0, (bkl <= 0.2) | (p <= p_old), (bkl <= 0.2) | (p >= p_old))
    return {
        "cispo": -r.clamp(max=5.0) * adv,
        "vespo": -phi * adv,
        "dppo_tv": -r.clamp(max=20.0) * adv * tv,
        "dppo_kl": -r.clamp(max=20.0) * adv * kl,
        "gspo_token": torch.where(gspo_clipped, 0.0, -adv * s),
        "up": torch.where(adv > 0, -adv, torch.where(r < 0.8, 0.0, -adv * r)),  # A <= 0: PPO's clip at 1 - 0.2
        "topr": -adv * torch.where(abar < 0, torch.exp(log_w.clamp(max=10.0)).clamp(0.0, 1.0), 1.0),  # row sign
    }


SG = ("cispo", "vespo", "dppo_tv", "dppo_kl", "gspo_token", "up", "topr")


@pytest.mark.parametrize("name", [n for n in registered_names() if n not in SG])
def test_autograd_equals_finite_differences(name):
    logp, old, adv, mask = batch(6, n=3, t=5)
    params = {"ratio": 0.3} if name in BATCH_COUPLED else {}
    loss = get_loss(name, **params)

    def f(lp):
        torch.manual_seed(0)  # clip_cov's draw
        return loss(lp, old, adv, mask, "token-mean")[0]

    assert torch.autograd.gradcheck(f, (logp.clone().requires_grad_(True),), eps=1e-7, atol=1e-6)


@pytest.mark.parametrize("name", SG)
def test_stop_gradient_losses_have_the_gradient_of_their_detached_weight(name):
    logp, old, adv, mask = batch(6, spread=0.5)
    _, grad, _ = value_and_grad(name, logp, old, adv, mask, "token-mean")
    want = _sg_derivatives(logp, old, adv, mask)[name] * mask / mask.sum()
    torch.testing.assert_close(grad, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", [n for n in registered_names() if n not in BATCH_COUPLED])
def test_micro_batches_with_the_mini_batchs_weights_add_up_to_the_mini_batch_loss(name):
    logp, old, adv, mask = batch(7)
    weights = aggregation_weights(mask, "token-mean", torch.ones(6, dtype=torch.bool), 9)  # over ALL rows
    whole, grad, _ = value_and_grad(name, logp, old, adv, mask, weights)
    parts, grads = 0.0, []
    for rows in (slice(0, 2), slice(2, 6)):
        value, g, _ = value_and_grad(name, logp[rows], old[rows], adv[rows], mask[rows], weights[rows])
        parts, grads = parts + float(value), grads + [g]
    assert parts == pytest.approx(float(whole), rel=1e-12)
    torch.testing.assert_close(torch.cat(grads), grad)


@pytest.mark.parametrize("ratio", ["token", "sequence"])
def test_ppo_clip_and_gspo_equal_the_formulas_written_out_with_kl_to_rounding(ratio):
    """The KL term is added after the aggregation by the registry (one fp64 rounding apart), inside it here."""
    logp, old, adv, mask = batch(8)
    ref = logp + 0.1
    weights = aggregation_weights(mask, "seq-mean-token-mean", torch.ones(6, dtype=torch.bool), 9)
    lp1, lp2 = logp.clone().requires_grad_(True), logp.clone().requires_grad_(True)
    want, wm = reference_loss(lp1, old, adv, weights, mask, clip_low=0.2, clip_high=0.28, ratio=ratio, kl_coef=0.05,
                              ref_logp=ref)  # fmt: skip
    name = "ppo_clip" if ratio == "token" else "gspo"
    got, gm = get_loss(name, clip_low=0.2, clip_high=0.28)(lp2, old, adv, mask, weights, kl_coef=0.05, ref_log_prob=ref)
    want.backward(), got.backward()
    assert float(got.detach()) == pytest.approx(float(want.detach()), rel=4e-16)
    torch.testing.assert_close(lp2.grad, lp1.grad, rtol=1e-15, atol=1e-17)
    assert all(float(gm[k]) == pytest.approx(float(wm[k]), rel=4e-16) for k in wm)


def test_gspo_and_gspo_token_agree_with_row_constant_advantages_and_differ_with_token_ones():
    for token_adv, same in ((False, True), (True, False)):
        logp, old, adv, mask = batch(10, token_adv=token_adv)
        a = value_and_grad("gspo", logp, old, adv, mask, "token-mean", clip_low=0.05, clip_high=0.05)
        b = value_and_grad("gspo_token", logp, old, adv, mask, "token-mean", clip_low=0.05, clip_high=0.05)
        assert torch.allclose(a[1], b[1], rtol=1e-12, atol=1e-15) is same
        assert float(a[0]) == pytest.approx(float(b[0]), rel=1e-12)  # equal values either way


def test_luspo_is_the_per_sequence_sum_of_gspos_token_losses_averaged_over_rows():
    logp, old, adv, mask = batch(11)
    got, _, _ = value_and_grad("luspo", logp, old, adv, mask, "seq-mean-token-mean")
    gspo_token_sum = value_and_grad("gspo", logp, old, adv, mask, "seq-mean-token-sum-norm")[0] * 9  # x T / 1
    assert float(got) == pytest.approx(float(gspo_token_sum), rel=1e-12)
