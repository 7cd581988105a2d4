"""Rollout correction: each mode's weights equal its peer's formula on the same random tensors, TRL's
(transcribed: its computation is inline in a trainer method, not importable) and veRL's (transcribed: veRL is
not installed here; tests/integrations/verl/test_losses_vs_verl.py imports veRL 0.9.1's functions in .venv-verl);
the metrics are the definitions they claim; multiplying the advantages by the weights is multiplying the
per-token clipped loss by them; a rejection's keep mask is what leaves the aggregation."""

import math

import pytest
import torch

from benchctl.errors import BenchctlError
from benchctl.losses._common import clipped_surrogate
from benchctl.trainers.rollout_correction import MODES, RolloutCorrection, correction, correction_weights


def _inputs(seed: int, n: int = 6, t: int = 9, scale: float = 0.4):
    gen = torch.Generator().manual_seed(seed)
    infer = -torch.rand(n, t, generator=gen) * 3  # (N, T) engine log-probs
    train = infer + torch.randn(n, t, generator=gen) * scale  # trainer's: a mismatch of ~scale nats
    lengths = torch.randint(1, t + 1, (n,), generator=gen)
    mask = (torch.arange(t)[None, :] < lengths[:, None]).float()  # (N, T) right-padded
    return train * mask, infer * mask, mask


# ---- TRL 1.16.0, trl/trainer/grpo_trainer.py lines 2660-2707 (GRPOTrainer._generate_and_score_completions),
# transcribed with self.* replaced by arguments; `old_per_token_logps` is the trainer's, `sampling_per_token_logps`
# vLLM's. Defaults from trl/trainer/grpo_config.py lines 925-960: correction on, mode "sequence_mask",
# clip_max 3.0, clip_min None.
def trl_is_ratio(old_per_token_logps, sampling_per_token_logps, completion_mask, mode, clip_min, clip_max):
    mask = completion_mask
    per_token_logps_diff = (old_per_token_logps - sampling_per_token_logps) * mask
    per_token_logps_diff = torch.nan_to_num(per_token_logps_diff, nan=0.0)
    sequence_level_is = mode in ["sequence_mask", "sequence_truncate"]
    if sequence_level_is:
        logps_diff = per_token_logps_diff.sum(dim=-1, keepdim=True)
    else:
        logps_diff = per_token_logps_diff
    ratio = torch.exp(logps_diff)
    if mode in ["sequence_truncate", "token_truncate"]:
        ratio = torch.clamp(ratio, min=clip_min, max=clip_max)
    elif mode in ["sequence_mask", "token_mask"]:
        min_val = clip_min if clip_min is not None else -math.inf
        max_val = clip_max if clip_max is not None else math.inf
        invalid = (ratio < min_val) | (ratio > max_val)
        ratio = ratio.masked_fill(invalid, value=0.0)
    return ratio  # (B, T) token modes, (B, 1) sequence modes; TRL multiplies it into per_token_loss


# ---- veRL, verl/trainer/ppo/rollout_corr_helper.py at volcengine/verl@0b4e2a814129c07f016787cbce476132ceb6c5cb
# (0.7.0.dev; its rejection bounded rho itself, which our bounds still do: 0.9.1's k1 options bound -log rho, the
# mapping is in the module docstring and tested against 0.9.1 in the veRL venv):
# compute_rollout_correction_weights (IS, truncation), compute_rollout_rejection_mask (RS) and
# compute_offpolicy_metrics (kl, k3_kl), transcribed without metrics/batch-normalisation; verl_F.masked_* from
# verl/utils/torch_functional.py.
SAFETY_BOUND = 20.0


def _masked_sum(values, mask, axis=None):
    return (values * mask).sum(axis=axis)


def _masked_mean(values, mask, axis=None):
    return (values * mask).sum(axis=axis) / (mask.sum(axis=axis) + 1e-8)


def verl_is_weights(log_ratio, response_mask, rollout_is, rollout_is_threshold):
    if rollout_is == "token":
        weights = torch.exp(torch.clamp(log_ratio, min=-SAFETY_BOUND, max=SAFETY_BOUND))
    else:  # "sequence"
        log_ratio_sum = _masked_sum(log_ratio, response_mask, axis=-1).unsqueeze(-1)
        weights = torch.exp(torch.clamp(log_ratio_sum, min=-SAFETY_BOUND, max=SAFETY_BOUND)).expand_as(log_ratio)
    weights = weights * response_mask
    return weights.clamp(max=rollout_is_threshold).detach()


def verl_rs_mask(log_ratio, response_mask, rollout_rs, rollout_rs_threshold, rollout_rs_threshold_lower=None):
    upper = rollout_rs_threshold
    lower = rollout_rs_threshold_lower if rollout_rs_threshold_lower is not None else 1.0 / upper
    if rollout_rs == "token":
        weights = torch.exp(torch.clamp(log_ratio, min=-SAFETY_BOUND, max=SAFETY_BOUND))
    elif rollout_rs == "sequence":
        log_ratio_sum = _masked_sum(log_ratio, response_mask, axis=-1).unsqueeze(-1)
        weights = torch.exp(torch.clamp(log_ratio_sum, min=-SAFETY_BOUND, max=SAFETY_BOUND)).expand_as(log_ratio)
    else:  # "geometric"
        log_ratio_mean = _masked_mean(log_ratio, response_mask, axis=-1).unsqueeze(-1)
        weights = torch.exp(torch.clamp(log_ratio_mean, min=-SAFETY_BOUND, max=SAFETY_BOUND)).expand_as(log_ratio)
    mask = ((weights >= lower) & (weights <= upper)).float()
    return response_mask * mask


def verl_offpolicy_kl(old_log_prob, rollout_log_prob, response_mask):
    kl = _masked_mean(rollout_log_prob - old_log_prob, response_mask)
    log_ratio = old_log_prob - rollout_log_prob
    k3 = _masked_mean(torch.exp(log_ratio) - log_ratio - 1, response_mask)
    return kl, k3


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "mode,trl_mode,low,high",
    [
        ("tis", "token_truncate", None, 3.0),
        ("tis", "token_truncate", 0.5, 1.5),
        ("seq-tis", "sequence_truncate", None, 2.0),
        ("seq-tis", "sequence_truncate", 0.3, 2.0),
        ("mis", "token_mask", None, 3.0),
        ("mis", "token_mask", 0.8, 1.2),
        ("seq-mis", "sequence_mask", None, 3.0),  # TRL's default
        ("seq-mis", "sequence_mask", 0.5, 1.5),
        ("icepop", "token_mask", 0.5, 5.0),  # IcePop's M(k) is TRL's token_mask with [alpha, beta]
    ],
)
def test_weights_equal_trl_is_ratio(seed, mode, trl_mode, low, high):
    train, infer, mask = _inputs(seed, scale=0.4 if mode.startswith("seq") else 0.8)
    weights, _ = correction_weights(train, infer, mask, RolloutCorrection(mode, low, high))
    want = trl_is_ratio(train, infer, mask, trl_mode, low, high).expand_as(mask) * mask
    torch.testing.assert_close(weights, want, rtol=1e-6, atol=1e-7)
    if mode != "icepop":
        assert 0 < float(((weights != mask) & (mask > 0)).float().mean()) < 1  # the bounds bind somewhere


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "mode,level,high", [("tis", "token", 2.0), ("tis", "token", 1.3), ("seq-tis", "sequence", 2.0)]
)
def test_truncated_weights_equal_verl_rollout_is(seed, mode, level, high):
    train, infer, mask = _inputs(seed)
    weights, _ = correction_weights(train, infer, mask, RolloutCorrection(mode, high=high))
    want = verl_is_weights((train - infer) * mask, mask, level, high)
    torch.testing.assert_close(weights, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "mode,level,low,high",
    [
        ("rs", "token", None, 2.0),
        ("rs", "token", 0.7, 1.5),
        ("seq-rs", "sequence", None, 2.0),
        ("geo-rs", "geometric", None, 1.2),
        ("geo-rs", "geometric", 0.9, 1.1),
    ],
)
def test_rejection_weights_equal_verl_rollout_rs(seed, mode, level, low, high):
    train, infer, mask = _inputs(seed)
    weights, metrics = correction_weights(train, infer, mask, RolloutCorrection(mode, low, high))
    want = verl_rs_mask((train - infer) * mask, mask, level, high, low)
    torch.testing.assert_close(weights, want)
    rejected = float(((1 - want) * mask).sum() / mask.sum())  # veRL's rollout_rs_masked_fraction
    assert float(metrics["rollout_corr/masked_frac"]) == pytest.approx(rejected, abs=1e-6)


def test_icepop_is_verl_token_is_times_token_rejection_with_the_same_bounds():
    train, infer, mask = _inputs(7, scale=1.0)
    weights, _ = correction_weights(train, infer, mask, RolloutCorrection("icepop"))
    log_ratio = (train - infer) * mask
    want = verl_is_weights(log_ratio, mask, "token", 5.0) * verl_rs_mask(log_ratio, mask, "token", 5.0, 0.5)
    torch.testing.assert_close(weights, want)


@pytest.mark.parametrize("mode", list(MODES))
def test_mismatch_kl_equals_verl_offpolicy_metrics_and_ess_its_definition(mode):
    train, infer, mask = _inputs(3)
    weights, m = correction_weights(train, infer, mask, RolloutCorrection(mode))
    kl, k3 = verl_offpolicy_kl(train, infer, mask)
    assert float(m["rollout_corr/kl_k1"]) == pytest.approx(float(kl), rel=1e-5)
    assert float(m["rollout_corr/kl_k3"]) == pytest.approx(float(k3), rel=1e-5)
    if MODES[mode][0] == "token":
        w = weights[mask > 0]
    else:  # one weight per sequence
        w = torch.stack([weights[i][mask[i] > 0][0] for i in range(len(mask))])
    ess = float(w.sum() ** 2 / (len(w) * (w**2).sum()))
    assert float(m["rollout_corr/ess"]) == pytest.approx(ess, rel=1e-5)
    assert 0 < float(m["rollout_corr/ess"]) <= 1


def test_no_mismatch_gives_unit_weights_zero_kl_and_full_ess():
    _, infer, mask = _inputs(1)
    for mode in MODES:
        weights, m = correction_weights(infer, infer, mask, RolloutCorrection(mode))
        torch.testing.assert_close(weights, mask)
        assert float(m["rollout_corr/kl_k1"]) == 0.0 and float(m["rollout_corr/kl_k3"]) == 0.0
        assert float(m["rollout_corr/ess"]) == pytest.approx(1.0)
        assert float(m["rollout_corr/masked_frac"]) == 0.0 and float(m["rollout_corr/truncated_frac"]) == 0.0


def test_weights_are_detached_and_nan_engine_log_probs_mean_no_mismatch():
    train, infer, mask = _inputs(2)
    train.requires_grad_(True)
    infer = infer.clone()
    infer[0, 0] = float("nan")
    weights, _ = correction_weights(train, infer, mask, RolloutCorrection("tis"))
    assert not weights.requires_grad
    assert float(weights[0, 0]) == 1.0


def test_weighted_advantages_are_the_weighted_per_token_clipped_loss():
    """Wiring: w >= 0, so max(-wA r, -wA clip(r)) = w max(-A r, -A clip(r)): multiplying the token advantages by
    the weights multiplies the per-token loss by them (no change to losses.py needed)."""
    train, infer, mask = _inputs(5, scale=1.0)
    weights, _ = correction_weights(train, infer, mask, RolloutCorrection("icepop"))
    gen = torch.Generator().manual_seed(0)
    log_r, adv = torch.randn(mask.shape, generator=gen) * 0.3, torch.randn(mask.shape, generator=gen)
    weighted, _, _ = clipped_surrogate(log_r, adv * weights, 0.2, 0.28)
    plain, _, _ = clipped_surrogate(log_r, adv, 0.2, 0.28)
    torch.testing.assert_close(weighted, weights * plain)


def test_bad_mode_or_bounds_fail_with_one_line_naming_the_choices():
    with pytest.raises(BenchctlError, match="none, tis, seq-tis"):
        RolloutCorrection("tokentis")
    with pytest.raises(BenchctlError, match="above high"):
        RolloutCorrection("tis", low=3.0, high=2.0)
    assert RolloutCorrection("rs", high=4.0).bounds() == (0.25, 4.0)
    assert RolloutCorrection("icepop").bounds() == (0.5, 5.0)


@pytest.mark.parametrize("mode", list(MODES))
def test_only_rejection_modes_drop_tokens_and_the_older_call_is_weights_times_keep(mode):
    train, infer, mask = _inputs(4, scale=0.8)
    cfg = RolloutCorrection(mode, high=1.2 if mode == "geo-rs" else None)  # a geometric mean moves little
    out = correction(train, infer, mask, cfg)
    weights, _ = correction_weights(train, infer, mask, cfg)
    torch.testing.assert_close(weights, out.weights * out.keep)
    assert bool((out.keep[mask == 0] == 1).all())  # padding is never "rejected": mask * keep is the loss mask
    if MODES[mode][1] == "reject":
        torch.testing.assert_close(out.weights, mask)  # rejection removes, it does not reweight
        assert 0 < float(((1 - out.keep) * mask).sum()) < float(mask.sum())
    else:
        assert bool((out.keep == 1).all())


def test_a_rejected_sequence_leaves_the_token_mean_normaliser():
    """With keep as the aggregation mask, token-mean divides by the kept tokens only (veRL 0.9.1); the older call
    (advantages x keep, full mask) divides by every token."""
    from benchctl.losses.aggregation import aggregation_weights

    train, infer, mask = _inputs(6, scale=0.8)
    out = correction(train, infer, mask, RolloutCorrection("seq-rs"))
    rows = torch.ones(mask.shape[0], dtype=torch.bool)
    kept = aggregation_weights(mask * out.keep, "token-mean", rows, mask.shape[1])
    assert 0 < float((mask * out.keep).sum()) < float(mask.sum())
    assert float(kept.sum()) == pytest.approx(1.0)
    assert float(kept.max()) == pytest.approx(1.0 / float((mask * out.keep).sum()))
