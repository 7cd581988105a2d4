"""DGPO (MathForge): mean-absolute-deviation normalised advantage with difficulty-aware question weights.

Deviations from paper/released code: the released code weights questions by the mean of the *first* reward
function (accuracy); here the single reward passed in plays that role.  The two loss-side rescalings of the
code (zero_mask_ratio, global_balancing_ratio) are the `token-mean-nondegenerate` loss aggregation (contract.md §6),
not part of the advantage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import flag, group_stats, hp, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class DgpoParams:
    eps_mad: float = hp(1e-4, "added to the sum of absolute deviations before dividing; >= 0")
    temperature: float = hp(2.0, "softmax temperature T of the question weights; > 0")
    question_weighting: bool = hp(True, "multiply by w_q = |V| softmax_V(-mean_q / T); false gives w_q = 1")

    def __post_init__(self) -> None:
        number("eps_mad", self.eps_mad, 0.0, 1.0)
        number("temperature", self.temperature, 0.0, None, low_open=True)
        flag("question_weighting", self.question_weighting)


def question_weights(mean: np.ndarray, degenerate: np.ndarray, temperature: float) -> np.ndarray:
    """w_q = |V| softmax_{q in V}(-mean_q / T) over the non-degenerate groups V, 1 elsewhere; (P,) -> (P,)."""
    weights = np.ones_like(mean)  # (P,)
    live = ~degenerate  # (P,)
    n_live = int(live.sum())
    if n_live:
        logits = -mean[live] / temperature  # (|V|,)
        e = np.exp(logits - logits.max())  # (|V|,)
        weights[live] = n_live * e / e.sum()
    return weights


@register_estimator(
    "dgpo",
    kind="base",
    params=DgpoParams,
    loss_agg="token-mean-nondegenerate",
    acted=lambda m: m["dgpo_weight_max"] - m["dgpo_weight_min"] > 1e-9,
    mechanism="question weights differ across the batch's questions",
)
def dgpo(rewards: np.ndarray, params: DgpoParams, state: None):
    """DGPO: difficulty-balanced group advantage (DGAE) times difficulty-aware question weight (DQW).

    Reference: arXiv:2601.20614 (MathForge; paper not available, equation numbers unknown); formula from
    AMAP-ML/MathForge @83edda0 grpo_trainer.py L1680-1745 (estimators-sources §5.1, §5.2).
    Formula: A_i = G (r_i - mean) / (sum_j |r_j - mean| + eps_mad) * w_q,  w_q = |V| softmax_V(-mean_q / T)
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0 and w_q = 1.
    Deviations: see the module docstring (reward = accuracy; loss-side ratios live in the loss aggregation).
    Property: sum_i |A_i| = G w_q (up to eps_mad) in every non-degenerate group.
    """
    stats = group_stats(rewards)
    g = rewards.shape[1]
    mad_sum = np.abs(stats.centered).sum(axis=1)  # (P,)
    if params.question_weighting:
        weights = question_weights(stats.mean, stats.degenerate, params.temperature)  # (P,)
    else:
        weights = np.ones_like(stats.mean)
    scale = g * weights / np.where(stats.degenerate, 1.0, mad_sum + params.eps_mad)  # (P,)
    live = weights[~stats.degenerate]
    metrics = {"dgpo_weight_min": live.min() if live.size else 1.0, "dgpo_weight_max": live.max() if live.size else 1.0}
    return np.multiply(stats.centered, scale[:, None], out=stats.centered), None, metrics
