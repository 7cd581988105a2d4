"""F-GRPO: focal (difficulty-aware) scaling of any base advantage (arXiv:2602.06717).

Each non-degenerate group's advantages are multiplied by g(x) = (1 - mu_pos(x))^gamma, mu_pos(x) the group's
empirical success rate, so high-success groups (the "obvious") move the policy less than rare-correct ones.

Deviations from the paper: no released code was found; the paper's gamma was not recoverable here, so the default
gamma=1.0 is [our choice]; mu_pos is the group mean reward (the success rate for binary rewards; [our choice] for
rewards in [0, 1]); degenerate groups keep the base advantage (g = 1, as every modifier here) [our choice].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import group_stats, hp, number, unit_interval_groups
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class FgrpoParams:
    gamma: float = hp(1.0, "focal exponent of g = (1 - mu_pos)^gamma; >= 0, 0 = the base unchanged [our choice: 1.0]")

    def __post_init__(self) -> None:
        number("gamma", self.gamma, 0.0, 100.0)


@register_estimator(
    "f_grpo",
    kind="modifier",
    params=FgrpoParams,
    acted=lambda m: m["focal_scaled_frac"] > 0,
    mechanism="some non-degenerate group's advantages were scaled by a focal weight g != 1",
)
def f_grpo(rewards: np.ndarray, base_adv: np.ndarray, params: FgrpoParams, state: None):
    """F-GRPO: down-weight the advantages of high-success groups by the focal factor (1 - mu_pos)^gamma.

    Reference: arXiv:2602.06717 (F-GRPO; its body was not available here, so its equation numbers are unknown: the
    coefficient g(x) = (1 - mu_pos(x))^gamma is the one its abstract summaries and benchctl issue 43 §4 state).
    Formula: A' = A * (1 - p)^gamma, p = group mean reward; degenerate groups keep A
    Shapes: rewards (P, G) in [0, 1], base_adv (P, G) float64 -> advantages (P, G).
    Deviations: see the module docstring (gamma=1.0 and mu_pos for non-binary rewards are our choices).
    """
    unit_interval_groups(rewards, "f_grpo")
    stats = group_stats(rewards)
    g = np.power(1.0 - stats.mean, params.gamma)  # (P,)
    g[stats.degenerate] = 1.0
    live = ~stats.degenerate  # (P,)
    scaled = live & (np.abs(g - 1.0) > 1e-12)
    metrics = {
        "focal_scaled_frac": float(scaled.mean()),
        "focal_weight_mean": float(g[live].mean()) if live.any() else 1.0,
    }
    return base_adv * g[:, None], None, metrics
