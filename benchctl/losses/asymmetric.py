"""Sign-asymmetric losses: UP (unbounded positive) and TOPR (tapered off-policy REINFORCE).

Both treat a token (UP) or a sequence (TOPR) by the sign of its advantage: positive ones get the plain policy gradient
whatever the ratio pi/pi_old, negative ones a trust region (UP: the PPO clip; TOPR: the truncated ratio). With one
update per batch (pi = pi_old) both are `gpg`; their mechanism acts only with several mini-batches or epochs, and
each logs the evidence that it acted (`mechanism/<loss>/acted`, `Loss.mechanisms`).

[our choice] UP's dual-clip `c` is off by default, as `ppo_clip`'s: veRL PR #7022 always applies clip_ratio_c (3.0),
TRL PR #6579 only with `delta`; UP leaves the aggregation to the estimator (GRPO's seq-mean-token-mean for UP-GRPO),
where TRL PR #6579 fixes DAPO's token-mean (pass `loss_agg=token-mean` for TRL's UP-DAPO form).

[our choice] TOPR's ratio is the paper's trajectory ratio pi(y|x)/mu(y|x) (`ratio_level=sum`) by default; veRL PR #6986
uses the length-normalised ratio exp(mean_t log r) (`ratio_level=mean`, equal to it to 1e-12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from benchctl.estimators._common import choice, hp, number
from benchctl.losses._common import base_metrics, clipped_surrogate, fraction, seq_mean, token_mean
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import register_loss


@dataclass(frozen=True)
class UpParams:
    clip_low: float = hp(0.2, "A <= 0 tokens: r clipped below at 1 - clip_low (the PPO/GRPO epsilon); in [0, 1)")
    c: float | None = hp(
        None,
        "dual-clip bound of A < 0 tokens (veRL PR #7022 always applies clip_ratio_c, 3.0; TRL PR #6579's `delta`); "
        "None: off [our choice]; > 1",
    )

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, 1.0, high_open=True)
        if self.c is not None:
            number("c", self.c, 1.0, low_open=True)


@register_loss(
    "up",
    params=UpParams,
    acted=lambda m: m.get("policy/up_unclipped", 0.0) > 0,
    mechanism="a positive-advantage token beyond the clip range kept its gradient",
)
def up(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: UpParams):
    """UP-GRPO: unclipped REINFORCE on positive-advantage tokens, the PPO clip (and dual-clip) on the others.

    Reference: arXiv:2607.06987 (UP: the self-anchored ratio pi / sg(pi) for A > 0; Eq. 14 per TRL PR #6579, Eq. 15
    per veRL PR #7022, the paper itself not read here); code: TRL PR #6579 trl/experimental/up
    UPTrainer._compute_loss (huggingface/trl commit d841558), veRL PR #7022 compute_policy_loss_up (as quoted in a
    public note on the PR: its diff was not available here).
    Formula: l_t = -A_t pi(y_t) / sg(pi(y_t)) if A_t > 0, else max(-A_t r_t, -A_t max(r_t, 1 - clip_low)); A_t < 0
      and c set: min(l_t, -A_t c)
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/clip_low, policy/dual_clip, policy/up_unclipped (token
      fraction with A > 0 and r > 1 + clip_low: where GRPO's symmetric clip would have cut the gradient).
    Deviations: TRL's `delta` clamps r before the clip, equal to the dual-clip c = delta whenever delta > 1 +
      epsilon_high (TRL requires it); the upper clip cannot bind for A <= 0, so UP has no clip_high.
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    anchored = -advantages * torch.exp(log_prob - log_prob.detach())  # (N, T): value -A, gradient -A dlog pi
    clipped, low, _ = clipped_surrogate(log_r, advantages, params.clip_low, math.inf)
    dual = torch.zeros_like(low)
    if params.c is not None:
        bound = -advantages * params.c  # (N, T)
        dual = (advantages < 0) & (clipped > bound)
        clipped = torch.where(advantages < 0, torch.minimum(clipped, bound), clipped)
    positive = advantages > 0
    loss = aggregate(torch.where(positive, anchored, clipped), response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics["policy/clip_low"] = fraction(low, response_mask)
    metrics["policy/dual_clip"] = fraction(dual, response_mask)
    metrics["policy/up_unclipped"] = fraction(positive & (torch.exp(log_r) > 1.0 + params.clip_low), response_mask)
    return loss, metrics


@dataclass(frozen=True)
class ToprParams:
    ratio_low: float = hp(
        0.0, "lower end of the taper of negative sequences (paper: 0; veRL topr_negative_ratio_lower)"
    )
    ratio_high: float = hp(
        1.0, "upper end of the taper of negative sequences (paper: 1; veRL topr_negative_ratio_upper); >= ratio_low"
    )
    ratio_level: str = hp(
        "sum",
        "'sum': the trajectory ratio exp(sum_t log r_t) (the paper's pi(y|x)/mu(y|x)) [our choice]; 'mean': "
        "exp(mean_t log r_t), length-normalised (veRL PR #6986)",
    )

    def __post_init__(self) -> None:
        number("ratio_low", self.ratio_low, 0.0)
        number("ratio_high", self.ratio_high, self.ratio_low)
        choice("ratio_level", self.ratio_level, ("sum", "mean"))


@register_loss(
    "topr",
    params=ToprParams,
    loss_agg="seq-mean-token-mean",
    acted=lambda m: m.get("policy/topr_tapered", 0.0) > 0,
    mechanism="a negative-advantage sequence was tapered (weight below 1)",
)
def topr(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: ToprParams):
    """TOPR: REINFORCE with unit weight on positive sequences and the truncated ratio [pi/mu]_0^1 on negative ones.

    Reference: arXiv:2503.14286 (TOPR: the tapered gradient over T+ and T-, read from the paper's abstract and a
    public summary of its update rule; equation numbers not checked here); code: veRL PR #6986
    compute_policy_loss_topr (verl-project/verl commit a578c2f).
    Formula: w_i = 1 if Abar_i >= 0 else sg(clip(rho_i, ratio_low, ratio_high)), rho_i = exp(min(sum_t log r_it, 10))
      (ratio_level=sum; mean_t with ratio_level=mean); l_it = -w_i A_it log pi(y_it)
    Shapes: (N, T) tensors -> loss 0-d; Abar_i = row mean of A; metrics policy/topr_weight_mean (token mean of
      w), policy/topr_negative (token fraction in rows with Abar < 0), policy/topr_tapered (rows with w < 1).
    Deviations: veRL always aggregates TOPR by seq-mean-token-mean; here it is the default and another
      aggregation is honoured [our choice]; the log ratio is clamped at 10 before exp, as veRL does.
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    row = log_r.detach().sum(dim=1, keepdim=True)  # (N, 1)
    if params.ratio_level == "mean":
        row = seq_mean(log_r.detach(), response_mask)
    rho = torch.exp(row.clamp(max=10.0))  # (N, 1)
    negative = seq_mean(advantages, response_mask) < 0  # (N, 1)
    weight = torch.where(negative, rho.clamp(params.ratio_low, params.ratio_high), torch.ones_like(rho))
    loss = aggregate(-weight * advantages * log_prob, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics["policy/topr_weight_mean"] = token_mean(weight.expand_as(log_r), response_mask)
    metrics["policy/topr_negative"] = fraction(negative.expand_as(log_r), response_mask)
    metrics["policy/topr_tapered"] = fraction((negative & (weight < 1.0)).expand_as(log_r), response_mask)
    return loss, metrics
