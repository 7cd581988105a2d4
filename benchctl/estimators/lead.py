"""GRPO-LEAD difficulty weighting of any base advantage (contract.md §3).

Deviations from paper/released code: only the advantage reweighting is implemented; GRPO-LEAD's
length-dependent accuracy reward belongs to the reward function, not to the estimator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import group_stats, hp, number, signed_scale
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class LeadParams:
    a: float = hp(0.4, "weight of the easiest groups, w(1) ~ a; >= 0")
    b: float = hp(1.5, "weight of the hardest groups, w(0) ~ b; >= 0")
    x0: float = hp(0.75, "midpoint of the logistic weight; in [0, 1]")
    k: float = hp(10.0, "steepness of the logistic weight; >= 0")

    def __post_init__(self) -> None:
        number("a", self.a, 0.0, None)
        number("b", self.b, 0.0, None)
        number("x0", self.x0, 0.0, 1.0)
        number("k", self.k, 0.0, None)


def lead_weight(x: np.ndarray, params: LeadParams) -> np.ndarray:
    """w(x) = a + (b - a) / (1 + exp(k (x - x0))), elementwise."""
    return params.a + (params.b - params.a) / (1.0 + np.exp(params.k * (x - params.x0)))


@register_estimator("grpo_lead", kind="modifier", params=LeadParams)
def grpo_lead(rewards: np.ndarray, base_adv: np.ndarray, params: LeadParams, state: None):
    """GRPO-LEAD: positive advantages weighted by w(p), negative ones by w(1 - p).

    Reference: arXiv:2504.09696 (paper not available, equation numbers unknown); formula from
    aeroplanepaper/GRPO-LEAD @9344bef core_algos.py L166-256 (estimators-sources §7.4).
    Formula: A > 0: A w(p); A <= 0: A w(1-p); w(x) = a + (b-a)/(1+exp(k(x-x0))), p = group mean reward
    Shapes: rewards (P, G), base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: none in the formula (reward shaping not included, see the module docstring).
    """
    stats = group_stats(rewards)
    up = np.where(stats.degenerate, 1.0, lead_weight(stats.mean, params))  # (P,) weight of positive advantages
    down = np.where(stats.degenerate, 1.0, lead_weight(1.0 - stats.mean, params))  # (P,) weight of the others
    return signed_scale(base_adv, up, down, out=stats.centered), None, {}
