"""Pass@k training: the analytic advantage of the pass@k reward of k-subsets of the group (contract.md §2).

Deviations from paper/released code: rewards must be binary (the combinatorics count correct rollouts);
anything else is rejected instead of being thresholded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.estimators._common import binary_groups, hp, integer, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class PasskParams:
    k: int = hp(4, "subset size of the pass@k reward; 1 <= k <= G")
    eps: float = hp(1e-6, "added to sigma before dividing; >= 0")

    def __post_init__(self) -> None:
        integer("k", self.k, 1, None)
        number("eps", self.eps, 0.0, 1.0)


@lru_cache(maxsize=64)
def passk_table(n: int, k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantage of a correct / a wrong rollout for every count c = 0..n of correct ones; each (n + 1,).

    Degenerate counts c in {0, n} give exactly 0.0.  O(n) exact integer combinatorics, cached per (n, k, eps).
    """
    pos, neg = np.zeros(n + 1), np.zeros(n + 1)  # (n + 1,) indexed by c
    total = math.comb(n, k)
    for c in range(1, n):
        rho = 1.0 - math.comb(n - c, k) / total
        sigma = math.sqrt(rho * (1.0 - rho))
        pos[c] = (1.0 - rho) / (sigma + eps)
        neg[c] = (1.0 - rho - math.comb(n - c - 1, k - 1) / math.comb(n - 1, k - 1)) / (sigma + eps)
    pos.flags.writeable = neg.flags.writeable = False
    return pos, neg


@register_estimator("passk", kind="base", params=PasskParams)
def passk(rewards: np.ndarray, params: PasskParams, state: None):
    """Pass@k training: advantage of each rollout under the group's pass@k reward, in closed form.

    Reference: arXiv:2508.10751 (paper not available, equation numbers unknown); formula from
    RUCAIBox/Passk_Training code/passk_adv.py (estimators-sources §7.5).
    Formula: rho = 1 - C(n-c,k)/C(n,k), sigma = sqrt(rho(1-rho)); correct: (1-rho)/(sigma+eps);
    wrong: (1 - rho - C(n-c-1,k-1)/C(n-1,k-1))/(sigma+eps)
    Shapes: rewards (P, G) binary float64 -> advantages (P, G); degenerate groups -> exactly 0.0.
    Deviations: [our choice] non-binary rewards are rejected instead of thresholded.
    """
    binary_groups(rewards, "passk")
    n = rewards.shape[1]
    if params.k > n:
        raise BenchctlError(f"passk k={params.k} is out of range for G={n} rollouts; valid: [1, {n}]")
    pos, neg = passk_table(n, params.k, float(params.eps))
    correct = rewards.sum(axis=1).astype(np.intp)  # (P,) c per group
    adv = np.where(rewards == 1.0, pos[correct][:, None], neg[correct][:, None])  # (P, G)
    return adv, None, {}
