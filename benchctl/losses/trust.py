"""Soft and divergence trust regions on the token ratio: SAPO's sigmoid gate, DPPO's TV and binary-KL masks.

r_t = exp(log_prob - old_log_prob), p_t = exp(log_prob), p_old_t = exp(old_log_prob) per token (N, T).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchctl.estimators._common import hp, number
from benchctl.losses._common import base_metrics, fraction, token_mean
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import register_loss


@dataclass(frozen=True)
class SapoParams:
    tau_pos: float = hp(1.0, "gate temperature for A > 0 (SAPO, veRL and TRL default 1.0); > 0")
    tau_neg: float = hp(1.05, "gate temperature for A <= 0 (SAPO, veRL and TRL default 1.05); > 0")

    def __post_init__(self) -> None:
        number("tau_pos", self.tau_pos, 0.0, low_open=True)
        number("tau_neg", self.tau_neg, 0.0, low_open=True)


@register_loss("sapo", params=SapoParams, loss_agg="seq-mean-token-mean")
def sapo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: SapoParams):
    """SAPO: a smooth sigmoid gate of the ratio replaces the hard clip (its gradient fades off-policy).

    Reference: arXiv:2511.20347 (SAPO, the gate f(r) = sigmoid(tau (r - 1)) 4 / tau; equation numbers not checked
    here); code: veRL 0.9.1 compute_policy_loss_sapo, TRL 1.16 loss_type sapo.
    Formula: l_t = -f(r_t) A_t, f(r) = sigmoid(tau (r - 1)) 4 / tau, tau = tau_pos if A_t > 0 else tau_neg
    Shapes: (N, T) tensors -> loss 0-d; metric policy/gate_mean (token mean of f).
    Deviations: veRL and TRL always aggregate SAPO by seq-mean-token-mean; here that is the default and another
    `loss_agg_mode` is honoured [our choice]; log r is not clamped to +-20 (veRL clamps, TRL does not).
    """
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    tau = torch.full_like(log_r, params.tau_neg).masked_fill(advantages > 0, params.tau_pos)  # (N, T), fp64-exact
    gate = torch.sigmoid(tau * (torch.exp(log_r) - 1.0)) * (4.0 / tau)
    loss = aggregate(-gate * advantages, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics["policy/gate_mean"] = token_mean(gate, response_mask)
    return loss, metrics


@dataclass(frozen=True)
class DppoParams:
    clip_low: float = hp(
        0.2, "divergence bound for A <= 0 tokens (veRL: the actor's clip_ratio, 0.2) [our choice]; > 0"
    )
    clip_high: float = hp(
        0.2, "divergence bound for A > 0 tokens (veRL: the actor's clip_ratio, 0.2) [our choice]; > 0"
    )
    c: float = hp(
        20.0,
        "truncation of the detached ratio (DPPO §5.4 truncated IS, a large threshold; veRL's DPPO code falls back to "
        "20 only without a clip_ratio_c, and its actor config sets 3.0); > 0",
    )

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, low_open=True)
        number("clip_high", self.clip_high, 0.0, low_open=True)
        number("c", self.c, 0.0, low_open=True)


def _dppo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: DppoParams, valid):
    """l_t = -A_t sg(min(r_t, c)) log pi(y_t) 1[valid_t], valid (N, T) bool and detached."""
    log_r = (log_prob - old_log_prob) * response_mask  # (N, T)
    ratio = torch.exp(log_r.detach())
    truncated = ratio.clamp(max=params.c)
    keep = valid.detach().to(log_r.dtype)
    loss = aggregate(-advantages * truncated * log_prob * keep, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r, response_mask, loss)
    metrics["policy/masked"] = fraction(~valid, response_mask)
    metrics["policy/truncated"] = fraction((ratio > params.c) & valid, response_mask)
    return loss, metrics


@register_loss("dppo_tv", params=DppoParams)
def dppo_tv(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: DppoParams):
    """DPPO-Binary-TV: drop the tokens whose probability moved more than the bound in the advantage's direction.

    Reference: arXiv:2602.04879 (DPPO, binary total-variation trust region, §5.4 truncated IS; equation numbers
    not checked here); code: veRL 0.9.1 compute_policy_loss_dppo_tv.
    Formula: l_t = -A_t sg(min(r_t, c)) log pi(y_t) M_t, M_t = [p_t - p_old_t <= clip_high] if A_t > 0 else
      [p_t - p_old_t >= -clip_low]
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/masked, policy/truncated token fractions.
    Deviations: none from veRL (defaults are veRL's actor defaults; the paper's values are not checked here).
    """
    diff = (torch.exp(log_prob) - torch.exp(old_log_prob)).detach()  # (N, T)
    valid = torch.where(advantages > 0, diff <= params.clip_high, diff >= -params.clip_low)
    return _dppo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params, valid)


@register_loss("dppo_kl", params=DppoParams)
def dppo_kl(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: DppoParams):
    """DPPO-Binary-KL: as dppo_tv with the KL between the Bernoulli(p_old) and Bernoulli(p) of the sampled token.

    Reference: arXiv:2602.04879 (DPPO, binary KL trust region; equation numbers not checked here); code:
    veRL 0.9.1 compute_policy_loss_dppo_kl.
    Formula: l_t = -A_t sg(min(r_t, c)) log pi(y_t) M_t, KL_t = p_old log(p_old / p) + (1 - p_old) log((1 - p_old)
      / (1 - p)); M_t = [KL_t <= clip_high or p_t <= p_old_t] if A_t > 0 else [KL_t <= clip_low or p_t >= p_old_t]
    Shapes: (N, T) tensors -> loss 0-d; metrics policy/masked, policy/truncated token fractions.
    Deviations: none from veRL (1e-8 added inside the second log, as veRL does).
    """
    lp, old = log_prob.detach(), old_log_prob.detach()
    p, p_old = torch.exp(lp), torch.exp(old)  # (N, T)
    kl = p_old * (old - lp) + (1 - p_old) * torch.log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8))
    pos = (kl <= params.clip_high) | (p <= p_old)
    neg = (kl <= params.clip_low) | (p >= p_old)
    valid = torch.where(advantages > 0, pos, neg)
    return _dppo(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params, valid)
