"""W-REINFORCE: weighted REINFORCE without a baseline (contract.md §2).

Deviations from paper/released code: none.  Rewards outside [0, 1] are rejected (the weighting assumes a
pass/fail reward); non-binary rewards in [0, 1] interpolate linearly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import hp, number, unit_interval_groups
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class WReinforceParams:
    lam: float = hp(0.1, "weight of positive samples (negatives get -1); >= 0")

    def __post_init__(self) -> None:
        number("lam", self.lam, 0.0, None)


@register_estimator(
    "w_reinforce", kind="base", params=WReinforceParams, loss_agg="seq-mean-token-mean", min_group_size=1
)
def w_reinforce(rewards: np.ndarray, params: WReinforceParams, state: None):
    """W-REINFORCE: up-weight negative samples, no group baseline, no normalisation.

    Reference: arXiv:2506.01347 (paper not available, equation numbers unknown); formula from
    TianHongZXY/RLVR-Decomposed @a5d4e7c core_algos.py L111-155 and README (estimators-sources §7.3).
    Formula: A_i = lam * r_i - (1 - r_i)   (+lam for correct, -1 for wrong)
    Shapes: rewards (P, G) float64 in [0, 1] -> advantages (P, G).
    Deviations: degenerate groups are NOT zeroed (no baseline; the spec says so); loss aggregation default is
    seq-mean-token-mean (contract.md §6) although the released fork uses token-mean.
    """
    unit_interval_groups(rewards, "w_reinforce")
    return params.lam * rewards - (1.0 - rewards), None, {}
