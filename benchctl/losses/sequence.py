"""Sequence-ratio losses: GSPO (the paper's and TRL's form), GSPO-token (veRL's form), LUSPO, GMPO and VESPO.

The sequence log ratio is the length-normalised sum (1/|o_i|) sum_t log r_it (GSPO, GMPO) or the plain sum
(VESPO); a row's per-sequence loss is broadcast over its tokens and aggregated by `loss_agg_mode`.

GSPO vs GSPO-token [our choice] (both, named): with an advantage constant over a row's tokens (outcome rewards)
the two have equal value and gradient; with token-varying advantages (OAR) or token weights they differ. `gspo`
lets the whole sequence ratio's gradient reach every token, as GSPO (Eq. 7) and TRL 1.16
(`importance_sampling_level="sequence"`) do; `gspo_token` is the GSPO paper's GSPO-token, veRL 0.9.1's `gspo` loss,
whose token t only carries its own token's gradient, scaled by the detached sequence ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from benchctl.estimators._common import hp, number
from benchctl.losses._common import base_metrics, clipped_surrogate, fraction, lengths, log_ratio, seq_mean, token_mean
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import register_loss


@dataclass(frozen=True)
class GspoParams:
    clip_low: float = hp(3e-4, "sequence ratio clipped below at 1 - clip_low (the GSPO paper's 3e-4); in [0, 1)")
    clip_high: float = hp(4e-4, "sequence ratio clipped above at 1 + clip_high (the GSPO paper's 4e-4); >= 0")

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, 1.0, high_open=True)
        number("clip_high", self.clip_high, 0.0)


def _gspo_per_token(log_prob, old_log_prob, advantages, response_mask, params: GspoParams):
    log_s = log_ratio(log_prob, old_log_prob, response_mask, "sequence")  # (N, T): the row's mean, broadcast
    per_token, low, high = clipped_surrogate(log_s, advantages, params.clip_low, params.clip_high)
    return per_token, low, high


def _clip_metrics(log_prob, old_log_prob, response_mask, loss, low, high) -> dict[str, torch.Tensor]:
    metrics = base_metrics((log_prob - old_log_prob) * response_mask, response_mask, loss)
    metrics.update({"policy/clip_low": fraction(low, response_mask), "policy/clip_high": fraction(high, response_mask)})
    return metrics


@register_loss("gspo", params=GspoParams, loss_agg="seq-mean-token-mean")
def gspo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: GspoParams):
    """GSPO: the PPO clip on the length-normalised sequence ratio, its gradient through every token.

    Reference: arXiv:2507.18071 Eq. 7 (GSPO's sequence ratio); code: TRL 1.16 loss_type grpo with
    importance_sampling_level sequence.
    Formula: s_i = exp((1/|o_i|) sum_t log r_it); l_it = max(-A_it s_i, -A_it clip(s_i, 1 - clip_low, 1 + clip_high))
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/clip_low, policy/clip_high token fractions.
    Deviations: token-varying advantages enter as in TRL (see the module docstring; veRL's form is gspo_token).
    """
    per_token, low, high = _gspo_per_token(log_prob, old_log_prob, advantages, response_mask, params)
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    return loss, _clip_metrics(log_prob, old_log_prob, response_mask, loss, low, high)


@register_loss("gspo_token", params=GspoParams, loss_agg="seq-mean-token-mean")
def gspo_token(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: GspoParams):
    """GSPO-token: the sequence ratio's value with each token's own gradient (token-level advantages).

    Reference: arXiv:2507.18071 (GSPO-token, in the GSPO paper; equation numbers not checked here); code: veRL
    0.9.1 compute_policy_loss_gspo.
    Formula: s_it = sg(s_i) pi(y_it) / sg(pi(y_it));
      l_it = max(-A_it s_it, -A_it clip(s_it, 1 - clip_low, 1 + clip_high))
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/clip_low, policy/clip_high token fractions.
    Deviations: log s_it is clamped at 10 before exp, as veRL does.
    """
    seq = seq_mean((log_prob - old_log_prob).detach(), response_mask)  # (N, 1)
    log_s = (log_prob - log_prob.detach() + seq).clamp(max=10.0) * response_mask  # (N, T)
    per_token, low, high = clipped_surrogate(log_s, advantages, params.clip_low, params.clip_high)
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    return loss, _clip_metrics(log_prob, old_log_prob, response_mask, loss, low, high)


@register_loss("luspo", params=GspoParams, loss_agg="seq-mean-token-mean", inert_on_policy=False)
def luspo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: GspoParams):
    """LUSPO: GSPO with each sequence's loss scaled by its length (length-unbiased sequence optimisation).

    Reference: arXiv:2602.05261 (LUSPO; equation numbers not checked here); code: TRL 1.16 loss_type luspo.
    Formula: l_it = |o_i| x GSPO's l_it; with seq-mean-token-mean the loss is (1/N) sum_i sum_t GSPO's l_it
    Shapes: (N, T) tensors -> loss 0-d; metrics as gspo.
    Deviations: [our choice] the length factor is part of the per-token loss, so another aggregation composes
    with it; seq-mean-token-mean (the default) is TRL's `(per_token_loss * mask).sum(-1).mean()`. With a KL term
    (kl_coef > 0) the k3 KL is aggregated as for every loss, with the loss's aggregation (a row mean here), not
    length-scaled; TRL 1.16 adds beta x KL to the per-token loss before that row sum, so its KL term is
    (beta/N) sum_i sum_t kl_it, ours (beta/N) sum_i mean_t kl_it (equal without KL).
    """
    per_token, low, high = _gspo_per_token(log_prob, old_log_prob, advantages, response_mask, params)
    per_token = per_token * lengths(response_mask, per_token.dtype)  # (N, T)
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    return loss, _clip_metrics(log_prob, old_log_prob, response_mask, loss, low, high)


@dataclass(frozen=True)
class GmpoParams:
    clip_low: float = hp(
        0.4, "log r clipped below at -clip_low (GMPO clips in log space, (e^-0.4, e^0.4) as we read it); > 0"
    )
    clip_high: float = hp(0.4, "log r clipped above at clip_high (GMPO: 0.4 as we read it); > 0")

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, low_open=True)
        number("clip_high", self.clip_high, 0.0, low_open=True)


@register_loss("gmpo", params=GmpoParams, loss_agg="seq-mean-token-mean")
def gmpo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: GmpoParams):
    """GMPO: the geometric mean of the token ratios, each clipped in log space, times the row's advantage.

    Reference: arXiv:2507.20673 (GMPO; equation numbers not checked here); code: veRL 0.9.1
    compute_policy_loss_geo_mean (`geo_mean`).
    Formula: l_i = -Abar_i exp((1/|o_i|) sum_t sgn(A) min(sgn(A) log r_it, sgn(A) clip(log r_it, -clip_low, clip_high)))
    Shapes: (N, T) tensors -> loss 0-d; l_i (N, 1) is broadcast over the row's tokens; Abar_i = row mean of A.
    Deviations: veRL takes the plain mean of l_i over rows, which is seq-mean-token-mean here (the default); row
    means divide by max(|o_i|, 1), veRL's by |o_i| + 1e-8 (relative difference ~1e-8 / |o_i|).
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    sign = torch.sign(advantages)
    clamped = log_r.clamp(-params.clip_low, params.clip_high)
    kept = sign * torch.minimum(sign * log_r, sign * clamped)  # (N, T)
    ratio = torch.exp(seq_mean(kept, response_mask))  # (N, 1)
    per_row = -seq_mean(advantages, response_mask) * ratio  # (N, 1)
    loss = aggregate(per_row.expand_as(log_r), response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    clipped = log_r != clamped
    metrics["policy/clip_high"] = fraction(clipped & (advantages > 0), response_mask)
    metrics["policy/clip_low"] = fraction(clipped & (advantages < 0), response_mask)
    return loss, metrics


@dataclass(frozen=True)
class VespoParams:
    k_pos: float = hp(2.0, "power k of the Gamma weight for A >= 0 (TRL default 2.0); >= 0")
    lambda_pos: float = hp(3.0, "decay lambda of the Gamma weight for A >= 0 (TRL default 3.0); > 0")
    k_neg: float = hp(3.0, "power k of the Gamma weight for A < 0 (TRL default 3.0); >= 0")
    lambda_neg: float = hp(2.0, "decay lambda of the Gamma weight for A < 0 (TRL default 2.0); > 0")

    def __post_init__(self) -> None:
        for name in ("k_pos", "k_neg"):
            number(name, getattr(self, name), 0.0)
        for name in ("lambda_pos", "lambda_neg"):
            number(name, getattr(self, name), 0.0, low_open=True)


@register_loss("vespo", params=VespoParams, loss_agg="token-mean")
def vespo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: VespoParams):
    """VESPO: REINFORCE on log pi weighted by a detached Gamma function of the sequence ratio (soft trust region).

    Reference: arXiv:2602.10693 (VESPO; equation numbers not checked here); code: TRL 1.16 loss_type vespo
    (GRPOTrainer.get_gamma_weights).
    Formula: w_i = exp(clamp(sum_t clamp(log r_it, +-20), log 1e-8, 20)); phi = exp(lambda + k log w_i - lambda w_i);
      l_it = -sg(phi) A_it log pi(y_it), (k, lambda) = pos if A_it >= 0 else neg
    Shapes: (N, T) tensors -> loss 0-d; metric policy/phi_mean (token mean of phi).
    Deviations: TRL also folds the engine's importance ratio into w; here the rollout correction is separate
    (`--rollout-correction`), so w is pi/pi_old only.
    """
    log_r = (log_prob - old_log_prob).detach().clamp(-20.0, 20.0) * response_mask  # (N, T)
    log_w = log_r.sum(dim=1, keepdim=True).clamp(math.log(1e-8), 20.0)  # (N, 1)
    nonneg = advantages >= 0
    k = torch.full_like(log_r, params.k_neg).masked_fill(nonneg, params.k_pos)  # (N, T)
    lam = torch.full_like(log_r, params.lambda_neg).masked_fill(nonneg, params.lambda_pos).clamp(min=1e-4)
    phi = torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    loss = aggregate(-phi * advantages * log_prob, response_mask, loss_agg_mode)
    metrics = base_metrics((log_prob - old_log_prob) * response_mask, response_mask, loss)
    metrics["policy/phi_mean"] = token_mean(phi, response_mask)
    return loss, metrics
