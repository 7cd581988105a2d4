"""KRPO: a scalar Kalman filter run over each group's rewards replaces GRPO's mean and std.

Deviations from paper/released code: none in the formula; the filter restarts for every group (as the
released `group_advantages` does, one fresh `KalmanFilter` per question) and reads the rollouts in their
order, so the advantages depend on that order (under veRL, benchctl.integrations.verl lays a group out
in veRL's arrival order).  No cross-step state: the released code keeps none.
Degenerate groups are NOT zeroed (an all-correct group starts from init_mean=0.0 and gets a positive
advantage), as released.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import hp, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class KrpoParams:
    process_var: float = hp(1e-5, "process noise variance Q added to P before each reward; >= 0")
    meas_var: float = hp(1e-2, "measurement noise variance R of a reward; > 0")
    init_mean: float = hp(0.0, "filter mean x_0 before a group's first reward")
    init_var: float = hp(1.0, "filter variance P_0 before a group's first reward; > 0")
    eps: float = hp(1e-8, "added to sqrt(P_i) before dividing; >= 0")

    def __post_init__(self) -> None:
        number("process_var", self.process_var, 0.0, None)
        number("meas_var", self.meas_var, 0.0, None, low_open=True)
        number("init_mean", self.init_mean)
        number("init_var", self.init_var, 0.0, None, low_open=True)
        number("eps", self.eps, 0.0, 1.0)


@register_estimator("krpo", kind="base", params=KrpoParams, min_group_size=1)
def krpo(rewards: np.ndarray, params: KrpoParams, state: None):
    """KRPO: Kalman-filtered group baseline; rollout i is compared with the filter's estimate after reading it.

    Reference: arXiv:2505.07527 (Kalman Filter Enhanced GRPO; the paper's Eq. numbers are not checked here:
    no copy of the paper text); code: billhhh/KRPO_LLMs_RL train.py `KalmanFilter.update`, `group_advantages`.
    Formula: P_i^- = P_{i-1} + Q; K_i = P_i^- / (P_i^- + R); x_i = x_{i-1} + K_i (r_i - x_{i-1}); P_i = (1 - K_i) P_i^-;
    A_i = (r_i - x_i) / (sqrt(P_i) + eps), from x_0 = init_mean, P_0 = init_var in every group
    Shapes: rewards (P, G) float64 -> advantages (P, G); the recursion runs over G, vectorised over P.
    Deviations: see the module docstring (order-dependent; degenerate groups not zeroed).
    """
    x = np.full(rewards.shape[0], float(params.init_mean))  # (P,) filter mean
    var = float(params.init_var)  # P_i does not depend on the rewards: one scalar for every group
    out = np.empty_like(rewards)  # (P, G)
    for i in range(rewards.shape[1]):
        prior = var + params.process_var
        gain = prior / (prior + params.meas_var)
        x = x + gain * (rewards[:, i] - x)  # (P,)
        var = (1.0 - gain) * prior
        out[:, i] = (rewards[:, i] - x) / (np.sqrt(var) + params.eps)
    return out, None, {}
