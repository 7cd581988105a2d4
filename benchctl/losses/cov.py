"""Covariance-targeted losses: Clip-Cov and KL-Cov (entropy mechanism of RL for reasoning LMs).

Both score each real token by the centred covariance cov_t = (A_t - mean A) (log pi(y_t) - mean log pi) over the
batch's real tokens (N, T) and treat the high-covariance tokens, which drive the entropy collapse, differently.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchctl.estimators._common import hp, number
from benchctl.losses._common import base_metrics, fraction
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import register_loss


def _centred_cov(advantages, log_prob, response_mask) -> torch.Tensor:
    """cov_t (N, T) of the detached log-probs, means over real tokens (veRL's masked_mean: + 1e-8)."""
    mask = response_mask.to(log_prob.dtype)
    count = mask.sum() + 1e-8
    lp = log_prob.detach()
    return (advantages - (advantages * mask).sum() / count) * (lp - (lp * mask).sum() / count)


@dataclass(frozen=True)
class ClipCovParams:
    clip_low: float = hp(0.2, "PPO clip below at 1 - clip_low; in [0, 1)")
    clip_high: float = hp(0.2, "PPO clip above at 1 + clip_high; >= 0")
    ratio: float = hp(2e-4, "fraction of real tokens whose gradient is cut (veRL clip_cov_ratio); in (0, 1]")
    lb: float = hp(1.0, "lower covariance bound of the candidates (veRL clip_cov_lb)")
    ub: float = hp(5.0, "upper covariance bound of the candidates (veRL clip_cov_ub); > lb")

    def __post_init__(self) -> None:
        number("clip_low", self.clip_low, 0.0, 1.0, high_open=True)
        number("clip_high", self.clip_high, 0.0)
        number("ratio", self.ratio, 0.0, 1.0, low_open=True)
        number("lb", self.lb)
        number("ub", self.ub, self.lb, low_open=True)


@register_loss("clip_cov", params=ClipCovParams, inert_on_policy=False)
def clip_cov(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: ClipCovParams):
    """Clip-Cov: the PPO clip, plus the gradient of a random ratio-share of the tokens with lb < cov_t < ub cut.

    Reference: arXiv:2505.22617 (Clip-Cov; equation numbers not checked here); code: veRL 0.9.1
    compute_policy_loss_clip_cov.
    Formula: l_t = max(-A_t r_t, -A_t clip(r_t, 1 - clip_low, 1 + clip_high)) x (0 if t is drawn else 1); draw
      max(1, floor(ratio x tokens)) of the unclipped real tokens with lb < cov_t < ub, uniformly
    Shapes: (N, T) tensors -> loss 0-d; metric policy/cov_cut (token fraction cut).
    Deviations: none from veRL; the draw uses torch's global generator (torch.randperm, as veRL), so a seeded run
    repeats it and draws what veRL draws after the same seed.
    """
    ratio = torch.exp(log_prob - old_log_prob)  # (N, T)
    pg1 = -advantages * ratio
    pg2 = -advantages * ratio.clamp(1.0 - params.clip_low, 1.0 + params.clip_high)
    real = response_mask > 0
    cov = _centred_cov(advantages, log_prob, response_mask).masked_fill(~real | (pg2 > pg1), -torch.inf)
    count = max(int(params.ratio * float(response_mask.sum())), 1)
    candidates = torch.nonzero((cov < params.ub) & (cov > params.lb) & real)  # (K, 2) row-major
    cut = torch.zeros_like(real)
    if len(candidates):
        drawn = candidates[torch.randperm(len(candidates))[:count].to(candidates.device)]
        cut[drawn[:, 0], drawn[:, 1]] = True
    loss = aggregate(torch.maximum(pg1, pg2) * (~cut).to(ratio.dtype), response_mask, loss_agg_mode)
    metrics = base_metrics((log_prob - old_log_prob) * response_mask, response_mask, loss)
    metrics["policy/cov_cut"] = fraction(cut, response_mask)
    return loss, metrics


@dataclass(frozen=True)
class KlCovParams:
    ratio: float = hp(2e-4, "fraction of real tokens (the top covariances) given the KL penalty; in (0, 1]")
    kl_coef: float = hp(0.1, "coefficient of |log r_t| on those tokens (veRL ppo_kl_coef default 0.1); >= 0")

    def __post_init__(self) -> None:
        number("ratio", self.ratio, 0.0, 1.0, low_open=True)
        number("kl_coef", self.kl_coef, 0.0)


@register_loss("kl_cov", params=KlCovParams)
def kl_cov(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params: KlCovParams):
    """KL-Cov: the unclipped surrogate, plus a |log r| penalty on the top-covariance tokens.

    Reference: arXiv:2505.22617 (KL-Cov; equation numbers not checked here); code: veRL 0.9.1
    compute_policy_loss_kl_cov.
    Formula: l_t = -A_t r_t + kl_coef |log r_t| 1[t among the max(1, floor(ratio x tokens)) largest cov_t]
    Shapes: (N, T) tensors -> loss 0-d; metric policy/kl_cov (token fraction penalised).
    Deviations: none from veRL (its covariance means are plain means here too; no clip, as in the paper).
    """
    log_r = log_prob - old_log_prob  # (N, T)
    ratio = torch.exp(log_r)
    real = response_mask > 0
    chosen = torch.zeros_like(real)
    if real.any():
        adv, lp = advantages[real].detach(), log_prob[real].detach()  # (tokens,)
        cov = (adv - adv.mean()) * (lp - lp.mean())
        top = torch.topk(cov, max(1, int(len(cov) * params.ratio)), largest=True).indices
        flat = torch.nonzero(real.reshape(-1), as_tuple=True)[0][top]  # positions in the (N * T) view
        chosen.view(-1)[flat] = True
    per_token = -advantages * ratio + params.kl_coef * log_r.abs() * chosen.to(ratio.dtype)
    loss = aggregate(per_token, response_mask, loss_agg_mode)
    metrics = base_metrics(log_r * response_mask, response_mask, loss)
    metrics["policy/kl_cov"] = fraction(chosen, response_mask)
    return loss, metrics
