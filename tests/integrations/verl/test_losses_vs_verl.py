"""Every policy loss veRL 0.9.1 ships equals veRL's function, imported (not transcribed), on identical random fp64
tensors with padding: loss value and gradient w.r.t. log_prob, for each aggregation veRL applies. Where we choose
otherwise (GSPO with token advantages, SAPO's fixed aggregation) the difference is asserted, not hidden.
The rollout correction's rejection modes keep what veRL's rejection keeps and, with the keep mask as the
aggregation mask, train like veRL's actor loss (pg + KL); its IS modes equal veRL's weights.
Runs in `.venv-verl`; skips where veRL is not installed.
"""

import pytest

pytest.importorskip(  # a module, not "verl": a folder named verl on sys.path would pass as a namespace
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` builds",
)

import torch  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_weights, compute_rollout_rejection_mask  # noqa: E402
from verl.workers.config.actor import ActorConfig, PolicyLossConfig  # noqa: E402

from benchctl.losses import get_loss  # noqa: E402
from benchctl.losses.aggregation import aggregation_weights  # noqa: E402
from benchctl.trainers.rollout_correction import RolloutCorrection, correction, correction_weights  # noqa: E402

AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
FP64 = {"rtol": 1e-12, "atol": 1e-14}
# veRL's seq-mean-token-mean and GMPO divide a row's sum by (|o_i| + 1e-8): relative 1e-8 / |o_i|
EPS8 = {"rtol": 1e-7, "atol": 1e-9}


def batch(seed, n=8, t=12, token_adv=True, spread=0.3):
    """log_prob (leaf), old_log_prob, advantages, response_mask (N, T) fp64; padding holds finite garbage."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, t + 1, (n,), generator=g)
    lengths[0] = t  # one full row, so the horizon T is reached
    mask = (torch.arange(t)[None, :] < lengths[:, None]).double()  # (N, T)
    logp = torch.log(torch.rand(n, t, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp + spread * torch.randn(n, t, generator=g, dtype=torch.float64)
    old = torch.minimum(old, torch.full_like(old, -1e-3))  # probabilities below 1 (DPPO's binary KL)
    adv = torch.randn(n, t if token_adv else 1, generator=g, dtype=torch.float64).expand(n, t).clone()
    pad = mask == 0
    logp[pad], old[pad], adv[pad] = -7.0, -2.0, 5.0  # garbage that must not reach the loss
    return logp.requires_grad_(True), old, adv, mask


def config(loss_mode, n, tokens, clip=(0.2, 0.2), c=3.0, **loss_kw):
    taus = {k: loss_kw.pop(k) for k in ("tau_pos", "tau_neg") if k in loss_kw}
    actor = ActorConfig(
        strategy="fsdp",
        ppo_mini_batch_size=n,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
        clip_ratio_low=clip[0],
        clip_ratio_high=clip[1],
        clip_ratio_c=c,
        policy_loss=PolicyLossConfig(loss_mode=loss_mode, **loss_kw),
        **taus,
    )
    actor.global_batch_info.update(global_batch_size=n, batch_num_tokens=tokens)  # as veRL's trainer sets them
    return actor


def verl_value_and_grad(loss_mode, cfg_kw, logp, old, adv, mask, agg, seed=0):
    lp = logp.detach().clone().requires_grad_(True)
    cfg = config(loss_mode, mask.shape[0], mask.sum(), **cfg_kw)
    torch.manual_seed(seed)
    loss, _ = core_algos.get_policy_loss_fn(loss_mode)(old, lp, adv, mask, agg, cfg)
    loss.backward()
    return loss.detach(), lp.grad


def ours_value_and_grad(name, params, logp, old, adv, mask, agg, seed=0):
    lp = logp.detach().clone().requires_grad_(True)
    torch.manual_seed(seed)
    loss, metrics = get_loss(name, **params)(lp, old, adv, mask, agg)
    loss.backward()
    return loss.detach(), lp.grad


def compare(name, params, loss_mode, cfg_kw, agg, seed, tol=FP64, token_adv=True):
    logp, old, adv, mask = batch(seed, token_adv=token_adv)
    ours = ours_value_and_grad(name, params, logp, old, adv, mask, agg, seed)
    ref = verl_value_and_grad(loss_mode, cfg_kw, logp, old, adv, mask, agg, seed)
    torch.testing.assert_close(ours[0], ref[0], **tol)
    torch.testing.assert_close(ours[1], ref[1], **tol)
    return float((ours[0] - ref[0]).abs()), float((ours[1] - ref[1]).abs().max())


# name, our params, veRL loss_mode, veRL config
CASES = [
    ("ppo_clip", {"clip_low": 0.2, "clip_high": 0.28, "c": 3.0}, "vanilla", {"clip": (0.2, 0.28), "c": 3.0}),
    ("ppo_clip", {"clip_low": 0.1, "clip_high": 0.1}, "vanilla", {"clip": (0.1, 0.1), "c": 1e12}),
    ("ppo_clip", {"clip_low": 0.2, "clip_high": 0.2, "c": 1.5}, "vanilla", {"clip": (0.2, 0.2), "c": 1.5}),
    ("gspo_token", {"clip_low": 0.03, "clip_high": 0.04}, "gspo", {"clip": (0.03, 0.04)}),
    ("cispo", {"clip_low": 0.2, "clip_high": 0.28}, "cispo", {"clip": (0.2, 0.28)}),
    ("cispo", {"clip_low": None, "clip_high": 0.5}, "cispo", {"clip": (1e12, 0.5)}),
    ("gpg", {}, "gpg", {}),
    ("dro", {"beta": 0.3}, "dro", {"dro_beta": 0.3}),
    ("dppo_tv", {"clip_low": 0.05, "clip_high": 0.1, "c": 1.3}, "dppo_tv", {"clip": (0.05, 0.1), "c": 1.3}),
    ("dppo_kl", {"clip_low": 0.01, "clip_high": 0.02, "c": 1.3}, "dppo_kl", {"clip": (0.01, 0.02), "c": 1.3}),
    (
        "clip_cov",
        {"ratio": 0.1, "lb": 0.0, "ub": 0.5},
        "clip_cov",
        {"clip_cov_ratio": 0.1, "clip_cov_lb": 0.0, "clip_cov_ub": 0.5},
    ),
    ("kl_cov", {"ratio": 0.1, "kl_coef": 0.5}, "kl_cov", {"kl_cov_ratio": 0.1, "ppo_kl_coef": 0.5}),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("name,params,loss_mode,cfg_kw", CASES, ids=IDS)
def test_loss_equals_verls_value_and_gradient(name, params, loss_mode, cfg_kw, agg):
    tol = EPS8 if agg == "seq-mean-token-mean" else FP64
    for seed in range(3):
        compare(name, params, loss_mode, cfg_kw, agg, seed, tol)


@pytest.mark.parametrize("name", ["dppo_tv", "dppo_kl"])
def test_dppo_default_truncation_is_the_dppo_codes_fallback_not_the_actor_configs(name):
    """benchctl's DPPO `c` defaults to 20, what veRL's DPPO losses read when the config has no clip_ratio_c (DPPO
    §5.4: a large threshold); veRL's ActorConfig sets 3.0 (dual-clip PPO's bound), so a veRL run of DPPO truncates at
    3 unless it sets actor.clip_ratio_c=20. Given 20, veRL equals benchctl's defaults."""
    import dataclasses
    import inspect

    from benchctl.losses.trust import DppoParams

    assert DppoParams().c == 20.0
    assert {f.name: f.default for f in dataclasses.fields(ActorConfig)}["clip_ratio_c"] == 3.0
    source = inspect.getsource(getattr(core_algos, f"compute_policy_loss_{name}"))
    assert 'config.get("clip_ratio_c", 20.0)' in source
    compare(name, {}, name, {"clip": (0.2, 0.2), "c": 20.0}, "token-mean", 0)


@pytest.mark.parametrize("agg", AGGS)
def test_gspo_equals_verls_gspo_when_advantages_are_constant_over_a_row(agg):
    tol = EPS8 if agg == "seq-mean-token-mean" else FP64
    for seed in range(3):
        compare("gspo", {"clip_low": 0.03, "clip_high": 0.04}, "gspo", {"clip": (0.03, 0.04)}, agg, seed, tol, False)


def test_gspo_differs_from_verls_gspo_token_form_with_token_advantages():
    logp, old, adv, mask = batch(1, token_adv=True)
    params, agg = {"clip_low": 0.03, "clip_high": 0.04}, "token-mean"
    ours = ours_value_and_grad("gspo", params, logp, old, adv, mask, agg)
    ref = verl_value_and_grad("gspo", {"clip": (0.03, 0.04)}, logp, old, adv, mask, agg)
    assert float((ours[1] - ref[1]).abs().max()) > 1e-3  # the documented choice: TRL's form, not veRL's


def test_sapo_equals_verl_under_seq_mean_token_mean_which_verl_always_applies():
    logp, old, adv, mask = batch(2)
    cfg = {"tau_pos": 1.0, "tau_neg": 1.05}
    for agg in AGGS:  # veRL ignores loss_agg_mode for SAPO
        ref = verl_value_and_grad("sapo", cfg, logp, old, adv, mask, agg)
        ours = ours_value_and_grad("sapo", {}, logp, old, adv, mask, "seq-mean-token-mean")
        torch.testing.assert_close(ours[0], ref[0], **EPS8)
        torch.testing.assert_close(ours[1], ref[1], **EPS8)
    other = ours_value_and_grad("sapo", {}, logp, old, adv, mask, "token-mean")
    assert float((other[0] - ref[0]).abs()) > 1e-6  # [our choice]: another aggregation is honoured


def test_gmpo_equals_verls_geo_mean_under_seq_mean_token_mean():
    for seed in range(3):
        for token_adv in (False, True):
            compare(
                "gmpo",
                {"clip_low": 0.4, "clip_high": 0.4},
                "geo_mean",
                {"clip": (0.4, 0.4)},
                "seq-mean-token-mean",
                seed,
                EPS8,
                token_adv,
            )


# ---- rollout correction: veRL 0.9.1 rollout_corr_helper (compute_rollout_rejection_mask, ..._correction_weights) --
REJECT = {"rs": "token_k1", "seq-rs": "seq_sum_k1", "geo-rs": "seq_mean_k1"}
# (mode, our low, our high, veRL threshold): ours bound rho, veRL's k1 options bound -log rho ("L_U" keeps
# 1/U <= rho <= 1/L), so ours (low, high) = veRL "{1/high}_{1/low}" and a single U = our default low 1/U
BOUNDS = [
    ("rs", None, 1.3, 1.3),
    ("rs", 0.8, 1.5, f"{1 / 1.5}_{1 / 0.8}"),
    ("seq-rs", None, 2.0, "0.5_2.0"),  # veRL's decoupled_seq_is_rs preset
    ("seq-rs", 0.5, 4.0, f"{1 / 4.0}_{1 / 0.5}"),
    ("geo-rs", None, 1.1, 1.1),
    ("geo-rs", 0.95, 1.2, f"{1 / 1.2}_{1 / 0.95}"),
]


def mismatch(seed, n=10, t=12):
    """(old, rollout) log-probs with a ~0.3-nat mismatch, plus `batch`'s log_prob, advantages, mask, reference."""
    logp, _, adv, mask = batch(seed, n, t)
    g = torch.Generator().manual_seed(100 + seed)
    old = logp.detach() + 0.15 * torch.randn(n, t, generator=g, dtype=torch.float64)
    rollout = old + 0.3 * torch.randn(n, t, generator=g, dtype=torch.float64) * mask
    ref = logp.detach() + 0.2 * torch.randn(n, t, generator=g, dtype=torch.float64)
    return logp, old, rollout, adv, mask, ref


@pytest.mark.parametrize("mode,low,high,threshold", BOUNDS)
def test_rejection_keep_mask_equals_verls_modified_response_mask(mode, low, high, threshold):
    for seed in range(4):
        _, old, rollout, _, mask, _ = mismatch(seed)
        ref_mask, _ = compute_rollout_rejection_mask(old - rollout, mask, REJECT[mode], threshold)
        keep = correction(old, rollout, mask, RolloutCorrection(mode, low, high)).keep
        torch.testing.assert_close(mask * keep, ref_mask.to(mask.dtype), rtol=0, atol=0)
        assert 0 < float((mask * (1 - keep)).sum()) < float(mask.sum())  # the bounds bind, not everywhere


def verl_training_loss(logp, old, adv, mask, ref, agg, kl_coef):
    """veRL 0.9.1's actor loss (workers/utils/losses.py ppo_loss): vanilla pg + kl_coef x agg(low_var_kl), on the
    rejection's response mask, with global_batch_size = the rows and batch_num_tokens = its kept tokens."""
    lp = logp.detach().clone().requires_grad_(True)
    cfg = config("vanilla", mask.shape[0], mask.sum(), clip=(0.2, 0.28), c=3.0)
    pg, _ = core_algos.get_policy_loss_fn("vanilla")(old, lp, adv, mask, agg, cfg)
    kl = core_algos.kl_penalty(lp, ref, "low_var_kl")
    loss = pg + kl_coef * core_algos.agg_loss(kl, mask, agg, **cfg.global_batch_info)
    loss.backward()
    return loss.detach(), lp.grad


def ours_training_loss(logp, old, adv, mask, ref, agg, kl_coef):
    """The trainer's path: one registry call with the aggregation weights of `mask` (ALL rows of the mini-batch)."""
    lp = logp.detach().clone().requires_grad_(True)
    weights = aggregation_weights(mask, agg, torch.ones(mask.shape[0], dtype=torch.bool), mask.shape[1])
    loss, _ = get_loss("ppo_clip", clip_low=0.2, clip_high=0.28, c=3.0)(
        lp, old, adv, mask, weights, kl_coef=kl_coef, ref_log_prob=ref
    )
    loss.backward()
    return loss.detach(), lp.grad


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("mode,low,high,threshold", BOUNDS)
def test_rejection_trains_like_verl_when_keep_is_the_aggregation_mask(mode, low, high, threshold, agg):
    tol = EPS8 if agg == "seq-mean-token-mean" else FP64
    for seed in range(3):
        logp, old, rollout, adv, mask, ref = mismatch(seed)
        ref_mask, _ = compute_rollout_rejection_mask(old - rollout, mask, REJECT[mode], threshold)
        want = verl_training_loss(logp, old, adv, ref_mask.to(mask.dtype), ref, agg, 0.1)
        corr = correction(old, rollout, mask, RolloutCorrection(mode, low, high))
        got = ours_training_loss(logp, old, adv * corr.weights, mask * corr.keep, ref, agg, 0.1)
        torch.testing.assert_close(got[0], want[0], **tol)
        torch.testing.assert_close(got[1], want[1], **tol)


def test_the_older_call_multiplying_advantages_by_keep_does_not_train_like_verl():
    logp, old, rollout, adv, mask, ref = mismatch(0)
    ref_mask, _ = compute_rollout_rejection_mask(old - rollout, mask, "seq_sum_k1", 2.0)
    want = verl_training_loss(logp, old, adv, ref_mask.to(mask.dtype), ref, "token-mean", 0.1)
    weights, _ = correction_weights(old, rollout, mask, RolloutCorrection("seq-rs"))
    got = ours_training_loss(logp, old, adv * weights, mask, ref, "token-mean", 0.1)
    assert float((got[0] - want[0]).abs()) > 1e-3 and float((got[1] - want[1]).abs().max()) > 1e-4


@pytest.mark.parametrize(
    "mode,low,high,level,threshold",
    [
        ("tis", None, 2.0, "token", 2.0),
        ("seq-tis", None, 2.0, "sequence", 2.0),
        ("icepop", None, None, "token", "0.5_5.0"),
    ],
)
def test_is_weights_equal_verls_rollout_is(mode, low, high, level, threshold):
    for seed in range(3):
        _, old, rollout, _, mask, _ = mismatch(seed)
        want, _ = compute_rollout_correction_weights(old - rollout, mask, level, threshold)
        corr = correction(old, rollout, mask, RolloutCorrection(mode, low, high))
        torch.testing.assert_close(corr.weights, want, **FP64)
        assert bool((corr.keep == 1).all())
