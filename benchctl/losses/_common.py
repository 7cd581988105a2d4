"""Shared pieces of the policy losses: the aggregation (docs/contract.md §6, reused from the trainer), ratios, metrics.

Shapes: N rollouts (rows) x T completion tokens; every tensor argument of a loss is (N, T); `response_mask` is 1.0 on
real completion tokens. `loss_agg_mode` is either a mode name (docs/contract.md §6), aggregated over the rows given (the
Dr.GRPO constant is then T, veRL's `loss_scale_factor=None` horizon; DGPO's rows are all non-degenerate), or the (N, T)
weights `benchctl.trainers.losses.aggregation_weights` computed over a whole mini-batch: the trainer's form, so that the
losses of its micro-batches add up to the mini-batch's loss.
"""

from __future__ import annotations

import torch

from benchctl.trainers.losses import aggregation_weights


def agg_weights(response_mask: torch.Tensor, loss_agg_mode: str | torch.Tensor) -> torch.Tensor:
    """Per-token weights W (N, T) with loss = sum(W * l): the given weights, or the named mode's over these rows."""
    if isinstance(loss_agg_mode, torch.Tensor):
        return loss_agg_mode.to(response_mask.dtype)
    mask = _float(response_mask)
    every_row = torch.ones(mask.shape[0], dtype=torch.bool, device=mask.device)  # (N,)
    return aggregation_weights(mask, loss_agg_mode, every_row, mask.shape[1])


def aggregate(per_token: torch.Tensor, response_mask: torch.Tensor, loss_agg_mode: str | torch.Tensor) -> torch.Tensor:
    """sum(W * l) over (N, T), W from `agg_weights`; padding tokens have W = 0 (their l never reaches the loss)."""
    weights = agg_weights(response_mask, loss_agg_mode)
    return (weights * torch.where(weights != 0, per_token, torch.zeros_like(per_token))).sum()


def token_mean(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Detached mean of `values` (N, T) over the real tokens (a metric; 0 when there is none)."""
    mask = response_mask.to(values.dtype)
    return ((values.detach() * mask).sum() / mask.sum().clamp(min=1.0)).detach()


def fraction(flags: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Detached fraction of real tokens where the boolean `flags` (N, T) hold."""
    return token_mean(flags.to(_float(response_mask).dtype), response_mask)


def _float(mask: torch.Tensor) -> torch.Tensor:
    return mask if mask.is_floating_point() else mask.to(torch.get_default_dtype())


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
