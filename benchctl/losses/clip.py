"""Token-ratio losses: the PPO clipped surrogate (with DAPO's clip-higher and dual-clip), CISPO, GPG and DRO.

r_t = pi(y_t) / pi_old(y_t) = exp(log_prob - old_log_prob) per token; l_t is the per-token loss, aggregated by
`loss_agg_mode` (`benchctl.losses.aggregation`). veRL 0.9.1 clamps log r_t to +-20 before exp in most losses; we do
not [our choice]: identical below |log r_t| = 20, and `ppo_clip` computes PPO's formula as written.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchctl.estimators._common import hp, number
from benchctl.losses._common import base_metrics, clipped_surrogate, fraction
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import register_loss


@dataclass(frozen=True)
class ClipParams:
    clip_low: float = hp(0.2, "r is clipped below at 1 - clip_low (PPO epsilon); in [0, 1)")
    clip_high: float = hp(0.2, "r is clipped above at 1 + clip_high (DAPO clip-higher: 0.28); >= 0")
    c: float | None = hp(
        None,
        "dual-clip bound (veRL clip_ratio_c, veRL default 3.0): negative-advantage tokens "
        "lose at most -A c; None: off [our choice, the PPO paper's form]; > 1",
    )

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, 1.0, high_open=True)
        number("clip_high", self.clip_high, 0.0)
        if self.c is not None:
            number("c", self.c, 1.0, low_open=True)


@register_loss("ppo_clip", params=ClipParams)
def ppo_clip(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: ClipParams):
    """PPO clipped surrogate with decoupled clip range and optional dual-clip.

    Reference: arXiv:1707.06347 Eq. 7 (PPO); arXiv:2503.14476 Eq. 10 (DAPO clip-higher); arXiv:1912.09729
    (dual-clip PPO); code: veRL 0.9.1 compute_policy_loss_vanilla, TRL 1.16 loss_type grpo/bnpo/dr_grpo/dapo.
    Formula: l_t = max(-A_t r_t, -A_t clip(r_t, 1 - clip_low, 1 + clip_high)); A_t < 0 and c set: min(l_t, -A_t c)
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/clip_low, policy/clip_high, policy/dual_clip fractions.
    Deviations: log r is not clamped to +-20 (veRL clamps); TRL's `delta` (INTELLECT-2 two-sided clip) is this
    dual-clip with c = delta (equal whenever delta > 1 + clip_high, as TRL recommends).
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    per_token, low, high = clipped_surrogate(log_r, advantages, params.clip_low, params.clip_high)
    dual = torch.zeros_like(low)
    if params.c is not None:
        bound = -advantages * params.c  # (N, T)
        dual = (advantages < 0) & (per_token > bound)
        per_token = torch.where(advantages < 0, torch.minimum(per_token, bound), per_token)
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics.update(
        {
            "policy/clip_low": fraction(low, response_mask),
            "policy/clip_high": fraction(high, response_mask),
            "policy/dual_clip": fraction(dual, response_mask),
        }
    )
    return loss, metrics


@dataclass(frozen=True)
class CispoParams:
    clip_low: float | None = hp(None, "sg weight clipped below at 1 - clip_low; None: no lower bound (MiniMax-M1)")
    clip_high: float = hp(
        4.0,
        "sg weight clipped above at 1 + clip_high [our choice] 4.0: TRL's recommended "
        "epsilon_high = 5.0, a ratio cap (ScaleRL); > 0",
    )

    def __post_init__(self) -> None:
        if self.clip_low is not None:
            number("clip_low", self.clip_low, 0.0, 1.0)
        number("clip_high", self.clip_high, 0.0, low_open=True)


@register_loss("cispo", params=CispoParams)
def cispo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: CispoParams):
    """CISPO: REINFORCE on log pi weighted by the clipped, stop-gradient importance ratio (no token is dropped).

    Reference: arXiv:2506.13585 (MiniMax-M1, the CISPO objective; equation numbers not checked here);
    arXiv:2510.13786 (ScaleRL, epsilon_max);
    code: veRL 0.9.1 compute_policy_loss_cispo, TRL 1.16 loss_type cispo.
    Formula: l_t = -sg(clip(r_t, 1 - clip_low, 1 + clip_high)) A_t log pi(y_t)
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/clip_low, policy/clip_high fractions of truncated weights.
    Deviations: TRL names the ratio cap itself (epsilon_high = 1 + clip_high) and has no lower bound; veRL clips
    on both sides with the actor's clip_ratio (0.2) by default; the paper's optional token mask M is not offered.
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    ratio = torch.exp(log_r.detach())
    low = None if params.clip_low is None else 1.0 - params.clip_low
    weight = ratio.clamp(min=low, max=1.0 + params.clip_high)  # (N, T), no gradient
    loss = aggregate(-weight * advantages * log_prob, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics["policy/clip_high"] = fraction(ratio > 1.0 + params.clip_high, response_mask)
    metrics["policy/clip_low"] = fraction(ratio < (-1.0 if low is None else low), response_mask)
    return loss, metrics


@dataclass(frozen=True)
class NoParams:
    """Losses without hyperparameters."""


@register_loss("gpg", params=NoParams, inert_on_policy=False)
def gpg(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: NoParams):
    """GPG: the plain policy-gradient (REINFORCE) surrogate, no ratio and no clip.

    Reference: arXiv:2504.02546 (GPG; equation numbers not checked here); code: veRL 0.9.1
    compute_policy_loss_gpg.
    Formula: l_t = -A_t log pi(y_t)
    Shapes: (N, T) tensors -> loss 0-d (old_log_prob is only used for the ppo_kl metric).
    Deviations: none (GPG's own advantage normalisation is the `gpg` estimator).
    """
    loss = aggregate(-advantages * log_prob, response_mask, loss_agg_mode)
    return loss, base_metrics((log_prob - old_log_prob) * response_mask, response_mask, loss)


@dataclass(frozen=True)
class DroParams:
    beta: float = hp(0.1, "weight of the quadratic log-ratio penalty [our choice] 0.1 (veRL has no default); > 0")

    def __post_init__(self) -> None:
        number("beta", self.beta, 0.0, low_open=True)


@register_loss("dro", params=DroParams)
def dro(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: DroParams):
    """DRO: policy gradient on log pi with a quadratic penalty on the log ratio instead of a clip.

    Reference: arXiv:2405.19107 (Direct Reward Optimisation: the gradient of its mean-squared objective
    1/2 (A - beta log r)^2 is beta x this loss's; equation numbers not checked here); code: veRL 0.9.1
    compute_policy_loss_dro.
    Formula: l_t = -(A_t log pi(y_t) - beta/2 (log r_t)^2)
    Shapes: (N, T) tensors -> loss 0-d.
    Deviations: veRL's token form is followed (the paper regularises towards a fixed reference policy).
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    per_token = -(log_prob * advantages - 0.5 * params.beta * log_r.square())
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    return loss, base_metrics(log_r, response_mask, loss)
