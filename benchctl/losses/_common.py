"""Shared pieces of the policy losses: the token ratio, the clipped surrogate, the k3 KL, and the metrics.

Shapes: N rollouts (rows) x T completion tokens; every tensor argument of a loss is (N, T); `response_mask` is 1.0 on
real completion tokens. `loss_agg_mode` is a mode name or the trainer's (N, T) weights (`benchctl.losses.aggregation`).
"""

from __future__ import annotations

import torch

from benchctl.losses.aggregation import float_mask


def log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """log pi/pi_old per token (N, T); `sequence` (GSPO, arXiv:2507.18071 Eq. 7): the length-normalised sequence log
    ratio (1/|o_i|) sum_t log(pi/pi_old), broadcast over the row's tokens (its gradient flows to every token)."""
    diff = (logp - old_logp) * mask  # (N, T)
    if level == "token":
        return diff
    seq = diff.sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # (N, 1)
    return seq.expand_as(diff)


def clipped_surrogate(
    log_r: torch.Tensor, adv: torch.Tensor, clip_low: float, clip_high: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token PPO loss max(-A r, -A clip(r, 1 - clip_low, 1 + clip_high)) (N, T) (PPO, arXiv:1707.06347 Eq. 7;
    DAPO's decoupled clip-higher, arXiv:2503.14476 Eq. 10), and the masks of tokens where the low / high clip is
    binding (A < 0 and r < 1 - clip_low; A > 0 and r > 1 + clip_high)."""
    ratio = torch.exp(log_r)  # (N, T)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    low = (adv < 0) & (ratio < 1.0 - clip_low)
    high = (adv > 0) & (ratio > 1.0 + clip_high)
    return torch.maximum(unclipped, clipped), low, high


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token (Schulman 2020; DeepSeekMath arXiv:2402.03300 Eq. 4):
    exp(ref - logp) - (ref - logp) - 1 >= 0 (N, T)."""
    delta = ref_logp - logp
    return torch.exp(delta) - delta - 1.0


def token_mean(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Detached mean of `values` (N, T) over the real tokens (a metric; 0 when there is none)."""
    mask = response_mask.to(values.dtype)
    return ((values.detach() * mask).sum() / mask.sum().clamp(min=1.0)).detach()


def fraction(flags: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Detached fraction of real tokens where the boolean `flags` (N, T) hold."""
    return token_mean(flags.to(float_mask(response_mask).dtype), response_mask)


def seq_mean(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Per-row mean over real tokens (N, 1); rows without a token -> 0 (their length clamps to 1)."""
    mask = response_mask.to(values.dtype)
    return (values * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)


def lengths(response_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Row lengths |o_i| (N, 1) as `dtype`."""
    return response_mask.to(dtype).sum(dim=1, keepdim=True)


def base_metrics(log_ratio: torch.Tensor, response_mask: torch.Tensor, pg: torch.Tensor) -> dict[str, torch.Tensor]:
    """`loss/pg` (the aggregated loss) and `policy/ppo_kl` = mean of -log(pi/pi_old) over real tokens (veRL's)."""
    return {"loss/pg": pg.detach(), "policy/ppo_kl": token_mean(-log_ratio, response_mask)}
