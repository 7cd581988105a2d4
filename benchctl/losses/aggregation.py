"""Loss aggregation (docs/contract.md §6): per-token weights W (N, T) with loss = sum(W * l).

Shapes: N rollouts (rows) x T completion tokens; `mask` (N, T) is 1.0 on real completion tokens. The trainer computes
W once over every row of a mini-batch (`aggregation_weights`), so rows whose per-token loss is exactly 0 (zero
advantage, no KL) can be left out of the forward pass, and the losses of its micro-batches add up to the
mini-batch's loss. A loss called on its own names a mode instead and is aggregated over the rows it is given
(`agg_weights`). The mode names are `benchctl.estimators.registry.LOSS_AGGS`.
"""

from __future__ import annotations

import torch


def aggregation_weights(mask: torch.Tensor, mode: str, nondegenerate: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """Per-token weights W (N, T) such that sum(W * l) is the aggregated loss (docs/contract.md §6).

    seq-mean-token-mean (GRPO, arXiv:2402.03300 Eq. 3): (1/N) sum_i (1/|o_i|) sum_t l_it.
    token-mean (DAPO, arXiv:2503.14476 Eq. 8): sum_it l_it / sum_i |o_i|.
    seq-mean-token-sum-norm (Dr.GRPO, arXiv:2503.20783 §3.2): sum_it l_it / (N x max_tokens) [our choice: the
      generation budget `max_tokens` is the "max response length" constant, as in the authors' code].
    token-mean-nondegenerate (DGPO, arXiv:2601.20614): token mean over rows of non-degenerate groups only.
    """
    n = mask.shape[0]
    if mode == "seq-mean-token-mean":
        lengths = mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # (N, 1)
        return mask / (lengths * n)
    if mode == "token-mean":
        return mask / mask.sum().clamp(min=1.0)
    if mode == "seq-mean-token-sum-norm":
        return mask / float(n * max_tokens)
    if mode == "token-mean-nondegenerate":
        kept = mask * nondegenerate.to(mask.dtype)[:, None]  # (N, T)
        return kept / kept.sum().clamp(min=1.0)
    raise ValueError(f"unknown loss aggregation {mode!r}")


def agg_weights(response_mask: torch.Tensor, loss_agg_mode: str | torch.Tensor) -> torch.Tensor:
    """Per-token weights W (N, T) with loss = sum(W * l): the given weights, or the named mode's over these rows
    (the Dr.GRPO constant is then T, veRL's `loss_scale_factor=None` horizon; DGPO's rows are all non-degenerate)."""
    if isinstance(loss_agg_mode, torch.Tensor):
        return loss_agg_mode.to(response_mask.dtype)
    mask = float_mask(response_mask)
    every_row = torch.ones(mask.shape[0], dtype=torch.bool, device=mask.device)  # (N,)
    return aggregation_weights(mask, loss_agg_mode, every_row, mask.shape[1])


def aggregate(per_token: torch.Tensor, response_mask: torch.Tensor, loss_agg_mode: str | torch.Tensor) -> torch.Tensor:
    """sum(W * l) over (N, T), W from `agg_weights`; padding tokens have W = 0 (their l never reaches the loss)."""
    weights = agg_weights(response_mask, loss_agg_mode)
    return (weights * torch.where(weights != 0, per_token, torch.zeros_like(per_token))).sum()


def float_mask(mask: torch.Tensor) -> torch.Tensor:
    """`mask` as a float tensor (unchanged when it is one; else in the default dtype)."""
    return mask if mask.is_floating_point() else mask.to(torch.get_default_dtype())
