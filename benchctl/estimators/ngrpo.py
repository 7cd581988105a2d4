"""NGRPO: advantage calibration with virtual maximum-reward samples (contract.md §2).

Deviations from paper/released code: none in the formula.  Degenerate groups are NOT zeroed (that is the
point of the method: an all-wrong group gets a common negative advantage); a group that stays degenerate
after adding the virtual rewards (e.g. all-correct with virtual_reward 1) gets exactly 0.0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import DELTA, hp, integer, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class NgrpoParams:
    virtual_reward: float = hp(1.0, "reward value of each virtual sample (the maximum reward)")
    n_virtual: int = hp(1, "number of virtual samples appended to every group's statistics; >= 1")
    eps: float = hp(1e-6, "added to the std before dividing; >= 0")

    def __post_init__(self) -> None:
        number("virtual_reward", self.virtual_reward)
        integer("n_virtual", self.n_virtual, 1, 1024)
        number("eps", self.eps, 0.0, 1.0)


@register_estimator("ngrpo", kind="base", params=NgrpoParams, min_group_size=1)
def ngrpo(rewards: np.ndarray, params: NgrpoParams, state: None):
    """NGRPO: GRPO statistics over the G rewards plus n_virtual virtual rewards, advantages for real ones only.

    Reference: arXiv:2509.18851 (NGRPO; paper not available, equation numbers unknown); formula from
    nangongrui-ngr/NGRPO @e7a3804 core_algos.py L156-200 (estimators-sources §7.2).
    Formula: A_i = (r_i - mean') / (std_smp' + eps), mean', std_smp' over {r_1..r_G} + n_virtual x {virtual_reward}
    Shapes: rewards (P, G) float64 -> advantages (P, G).
    Deviations: degenerate groups are not zeroed (see the module docstring); all-wrong G=8 gives -1/3.
    """
    g, n, v = rewards.shape[1], params.n_virtual, params.virtual_reward
    mean = (rewards.sum(axis=1) + n * v) / (g + n)  # (P,) mean'
    centered = rewards - mean[:, None]  # (P, G)
    sq = np.einsum("pg,pg->p", centered, centered) + n * (v - mean) ** 2  # (P,) sum of squares over G + n
    flat = np.sqrt(sq / (g + n)) < DELTA  # (P,) augmented group still degenerate
    std = np.sqrt(sq / (g + n - 1))  # (P,) sample std over G + n values
    inv = 1.0 / np.where(flat, 1.0, std + params.eps)  # (P,)
    inv[flat] = 0.0
    return np.multiply(centered, inv[:, None], out=centered), None, {}
