"""BNPO: the group-centred reward divided by a Beta density whose parameters follow the batch's success rates.

Deviations from paper/released code: as released, (alpha, beta) come from the current batch only (method
of moments over the group means, sample variance) and 1/f is clamped to max_weight.  [our choice] when the
group means do not vary (one group, as released, or a zero variance, where the released code divides by
zero) alpha = beta = 1: f = 1 and A = r - p (REINFORCE with the group baseline).  Rewards must lie in
[0, 1] (the released code's min_value=0, max_value=1); degenerate groups get exactly 0.0.  Deviation
from a name: TRL's loss type "bnpo" is a batch token-mean loss normaliser, not this paper's estimator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import group_stats, hp, number, unit_interval_groups
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class BnpoParams:
    max_weight: float = hp(1e6, "upper clamp on 1/f(p; alpha, beta), as in the released code; > 0")

    def __post_init__(self) -> None:
        number("max_weight", self.max_weight, 0.0, None, low_open=True)


def beta_parameters(p: np.ndarray) -> tuple[float, float]:
    """(alpha, beta) = (max(1 + a/3, 1), max(1 + b/3, 1)), (a, b) the moment fit of the group means p (P,)."""
    if p.shape[0] < 2:
        return 1.0, 1.0
    mean, var = float(p.mean()), float(p.var(ddof=1))
    if var <= 0.0:
        return 1.0, 1.0  # [our choice] no spread to fit: the uniform density
    common = mean * (1.0 - mean) / var - 1.0
    return max(1.0 + common * mean / 3.0, 1.0), max(1.0 + common * (1.0 - mean) / 3.0, 1.0)


def beta_density(p: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """Beta(alpha, beta) density at p (P,), alpha, beta >= 1 (finite on [0, 1])."""
    log_norm = math.lgamma(alpha + beta) - math.lgamma(alpha) - math.lgamma(beta)
    logs = np.full(p.shape, log_norm)  # (P,)
    with np.errstate(divide="ignore"):  # log 0 at p = 0 or 1 -> density 0; an exponent of 0 is skipped
        if alpha != 1.0:
            logs += (alpha - 1.0) * np.log(p)
        if beta != 1.0:
            logs += (beta - 1.0) * np.log1p(-p)
    return np.exp(logs)


@register_estimator("bnpo", kind="base", params=BnpoParams)
def bnpo(rewards: np.ndarray, params: BnpoParams, state: None):
    """BNPO: Beta-normalised advantage with (alpha, beta) fitted to the batch's group success rates.

    Reference: arXiv:2506.02864 (BNPO; A_{alpha,beta} = (R - p) / f_N(p; alpha, beta) with the
    variance-minimising alpha = 1 + a/3, beta = 1 + b/3 for p ~ Beta(a, b); the paper's Eq. numbers are not
    checked here: no copy of the paper text); code: changyi7231/BNPO recipe/bnpo/src/bnpo_ray_trainer.py
    `compute_bnpo_outcome_advantage`.
    Formula: A_i = min(1/f(p; alpha, beta), max_weight) * (r_i - p); p = group mean, f = Beta density,
    (a, b) = moment fit of the batch's p, alpha = max(1 + a/3, 1), beta = max(1 + b/3, 1)
    Shapes: rewards (P, G) float64 in [0, 1] -> advantages (P, G); degenerate groups -> exactly 0.0.
    Deviations: see the module docstring (alpha = beta = 1 when the group means do not vary).
    """
    unit_interval_groups(rewards, "bnpo")
    stats = group_stats(rewards)
    alpha, beta = beta_parameters(stats.mean)
    density = beta_density(stats.mean, alpha, beta)  # (P,)
    with np.errstate(divide="ignore"):
        weight = np.minimum(1.0 / density, params.max_weight)  # (P,); 1/0 = inf -> max_weight
    adv = np.multiply(stats.centered, weight[:, None], out=stats.centered)  # (P, G)
    return adv, None, {"alpha": alpha, "beta": beta}
