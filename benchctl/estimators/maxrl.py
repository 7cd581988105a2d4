"""MaxRL: the group-mean-normalised advantage of maximum-likelihood RL.

Deviations from paper/released code: rewards must lie in [0, 1] (the method is defined for pass/fail rewards;
a negative group mean would flip the sign of the update); groups whose mean is at most eps (all wrong) and
groups with equal rewards get exactly 0.0, as the released code's zero-success branch does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import group_stats, hp, number, unit_interval_groups
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class MaxRLParams:
    eps: float = hp(1e-6, "added to the group mean before dividing; groups with mean <= eps get 0; >= 0")

    def __post_init__(self) -> None:
        number("eps", self.eps, 0.0, 1.0)


@register_estimator("maxrl", kind="base", params=MaxRLParams)
def maxrl(rewards: np.ndarray, params: MaxRLParams, state: None):
    """MaxRL: group-centred reward divided by the group mean (success rate) instead of the std.

    Reference: arXiv:2602.02710 (Maximum Likelihood RL), § "Practical gradient estimator": averaging the
    score over the K successes (Theorem 2) with the control variate V_N is, on policy, the advantage below;
    the paper's Eq. numbers are not checked here (no copy of the paper text).
    Formula: A_i = (r_i - mean) / (mean + eps); mean <= eps or equal rewards -> 0
    Shapes: rewards (P, G) float64 in [0, 1] -> advantages (P, G).
    Deviations: see the module docstring (rewards in [0, 1]; all-wrong groups exactly 0.0).
    """
    unit_interval_groups(rewards, "maxrl")
    stats = group_stats(rewards)
    flat = stats.degenerate | (stats.mean <= params.eps)  # (P,)
    denom = np.where(flat, np.inf, stats.mean + params.eps)[:, None]  # (P, 1); x / inf = 0.0
    return np.divide(stats.centered, denom, out=stats.centered), None, {}
