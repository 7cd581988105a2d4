"""Mean-baseline estimators: GRPO, Dr.GRPO and RLOO (contract.md §2).

Deviations from paper/released code: none beyond the degenerate-group rule (std_pop < 1e-6 -> exactly 0.0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import STD_CHOICES, choice, group_stats, hp, normalise, number, spread
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class GrpoParams:
    std: str = hp("sample", "group std used to normalise: 'sample' (ddof=1, veRL/TRL) or 'population' (ddof=0)")
    eps: float = hp(1e-6, "added to the std before dividing; >= 0")

    def __post_init__(self) -> None:
        choice("std", self.std, STD_CHOICES)
        number("eps", self.eps, 0.0, 1.0)


@dataclass(frozen=True)
class NoParams:
    """Estimators without hyperparameters."""


@register_estimator("grpo", kind="base", params=GrpoParams)
def grpo(rewards: np.ndarray, params: GrpoParams, state: None):
    """GRPO: group-normalised outcome advantage.

    Reference: arXiv:2402.03300 (DeepSeekMath, outcome supervision); restated as arXiv:2602.05548 Eq. 3 and
    arXiv:2601.08521 Eq. 24; code: veRL compute_grpo_outcome_advantage (estimators-sources §1.1).
    Formula: A_i = (r_i - mean) / (std + eps)
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0.
    Deviations: std defaults to the sample std as veRL and TRL do (contract.md §2); the paper leaves ddof open.
    """
    stats = group_stats(rewards)
    std = spread(stats.std_pop, rewards.shape[1], params.std)  # (P,)
    return normalise(stats.centered, std, params.eps, stats.degenerate), None, {}


@register_estimator("dr_grpo", kind="base", params=NoParams, loss_agg="seq-mean-token-sum-norm")
def dr_grpo(rewards: np.ndarray, params: NoParams, state: None):
    """Dr.GRPO: GRPO without the std division (and without per-sequence length normalisation in the loss).

    Reference: arXiv:2503.20783 (Dr.GRPO); code: sail-sg/understand-r1-zero train_zero_math.py L293-307
    (estimators-sources §1.3).
    Formula: A_i = r_i - mean
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0.
    Deviations: none.
    """
    return group_stats(rewards).centered, None, {}


@register_estimator("rloo", kind="base", params=NoParams, min_group_size=1)
def rloo(rewards: np.ndarray, params: NoParams, state: None):
    """RLOO: leave-one-out baseline.

    Reference: arXiv:2402.14740 (REINFORCE leave-one-out); code: veRL compute_rloo_outcome_advantage
    (estimators-sources §1.5).
    Formula: A_i = r_i - mean_{j != i} r_j = G/(G-1) * (r_i - mean); a group of one rollout gets A_i = r_i
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups (G > 1) -> exactly 0.0.
    Deviations: none (G = 1 follows veRL, contract.md §2).
    """
    g = rewards.shape[1]
    if g == 1:
        return rewards.copy(), None, {}
    centered = group_stats(rewards).centered  # (P, G), ours to overwrite
    return np.multiply(centered, g / (g - 1), out=centered), None, {}
