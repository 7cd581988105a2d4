"""Group-mean baselines with a batch-level scale: REINFORCE++ with a group baseline, LitePPO's batch std, GPG.

Deviations from paper/released code: the estimators see one reward per rollout, so statistics the
released code takes over tokens are taken over rollouts (each rollout counted once): REINFORCE++'s batch
whitening equals veRL's when every response has one token, and differs by the Bessel factor
N T / (N T - 1) vs N / (N - 1) (and by length weighting) otherwise.  A group of one rollout keeps its
reward as the centred value (baseline 0), as veRL does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import STD_CHOICES, choice, group_stats, hp, number
from benchctl.estimators.registry import register_estimator

GPG_ALPHA = ("nonzero", "valid", "none")


def centred(rewards: np.ndarray) -> np.ndarray:
    """r - group mean (P, G), exactly 0.0 in degenerate groups; G = 1 keeps r (baseline 0, as veRL)."""
    return rewards.copy() if rewards.shape[1] == 1 else group_stats(rewards).centered


@dataclass(frozen=True)
class ReinforcePPParams:
    eps: float = hp(1e-8, "added to the batch variance inside the square root, as veRL's masked_whiten; >= 0")

    def __post_init__(self) -> None:
        number("eps", self.eps, 0.0, 1.0)


@register_estimator("reinforce_pp_baseline", kind="base", params=ReinforcePPParams, min_group_size=1)
def reinforce_pp_baseline(rewards: np.ndarray, params: ReinforcePPParams, state: None):
    """REINFORCE++ with a group baseline: subtract the group mean, then whiten over the whole batch.

    Reference: arXiv:2501.03262 (REINFORCE++, § on the group-normalised baseline variant; the paper's Eq.
    numbers are not checked here: no copy of the paper text); code: veRL 0.9.1 core_algos.py
    `compute_reinforce_plus_plus_baseline_outcome_advantage` + verl_F.masked_whiten.
    Formula: c_i = r_i - mean_group; A_i = (c_i - mean_batch(c)) / sqrt(var_batch(c, ddof=1) + eps)
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0 when G > 1.
    Deviations: statistics over rollouts, not tokens (module docstring); [our choice] for G > 1 the batch
    mean of c is zero by construction and is not subtracted (veRL subtracts its rounding residue, ~1e-17).
    """
    c = centred(rewards)  # (P, G)
    n = c.size
    if n < 2:
        return np.zeros_like(c), None, {}
    shift = 0.0 if rewards.shape[1] > 1 else float(c.mean())
    c -= shift
    var = float(np.einsum("pg,pg->", c, c)) / (n - 1)  # unbiased, as masked_var
    return np.multiply(c, 1.0 / math.sqrt(var + params.eps), out=c), None, {}


@dataclass(frozen=True)
class BatchStdParams:
    std: str = hp("sample", "std of all P*G rewards: 'sample' (ddof=1, TRL scale_rewards='batch') or 'population'")
    eps: float = hp(1e-6, "added to the batch std before dividing [our choice: GRPO's eps, TRL uses 1e-4]; >= 0")

    def __post_init__(self) -> None:
        choice("std", self.std, STD_CHOICES)
        number("eps", self.eps, 0.0, 1.0)


@register_estimator("batch_std", kind="base", params=BatchStdParams)
def batch_std(rewards: np.ndarray, params: BatchStdParams, state: None):
    """LitePPO's normalisation: group-mean baseline, batch-level std.

    Reference: arXiv:2508.08221 (Tricks or Traps, LitePPO: advantage normalisation with the group-level
    mean and the batch-level std, § on normalisation; Eq. numbers not checked here: no copy of the paper);
    code: TRL GRPOTrainer scale_rewards="batch" (std of all rewards of the batch).
    Formula: A_i = (r_i - mean_group) / (std_batch(r) + eps)
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0.
    Deviations: the std is taken over the raw rewards (TRL's reading of the paper), eps=1e-6 [our choice].
    """
    c = group_stats(rewards).centered  # (P, G)
    ddof = 1 if params.std == "sample" and rewards.size > 1 else 0
    sd = float(rewards.std(ddof=ddof))
    denom = sd + params.eps if sd > 0.0 else math.inf  # all rewards equal: c is 0 everywhere
    return np.multiply(c, 1.0 / denom, out=c), None, {}


@dataclass(frozen=True)
class GpgParams:
    alpha: str = hp(
        "nonzero",
        "batch factor alpha = B / count: 'nonzero' counts rollouts with a non-zero reward (veRL 0.9.1), "
        "'valid' rollouts in groups whose rewards differ [our choice reading of the paper], 'none' alpha = 1",
    )
    f_norm: float = hp(1.0, "constant the advantage is divided by (veRL's f_norm); > 0")

    def __post_init__(self) -> None:
        choice("alpha", self.alpha, GPG_ALPHA)
        number("f_norm", self.f_norm, 0.0, None, low_open=True)


@register_estimator("gpg", kind="base", params=GpgParams, min_group_size=1)
def gpg(rewards: np.ndarray, params: GpgParams, state: None):
    """GPG: group-mean baseline scaled by the batch correction alpha = B / (number of useful rollouts).

    Reference: arXiv:2504.02546 (GPG, the corrected advantage with alpha = B / (B - M), M rollouts that
    carry no gradient; Eq. numbers not checked here: no copy of the paper); code: veRL 0.9.1 core_algos.py
    `compute_gpg_outcome_advantage`.
    Formula: A_i = alpha * (r_i - mean_group) / f_norm, alpha = B / max(count, 1), B = P * G
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0 when G > 1.
    Deviations: the default alpha ('nonzero') follows veRL 0.9.1, whose count is of non-zero rewards, not
    of rollouts with a non-zero advantage; 'valid' counts rollouts of non-degenerate groups [our choice].
    """
    c = centred(rewards)  # (P, G)
    if params.alpha == "nonzero":
        count = int(np.count_nonzero(rewards))
    elif params.alpha == "valid":
        count = int(np.count_nonzero(c.any(axis=1))) * rewards.shape[1]
    else:
        count = rewards.size
    scale = rewards.size / max(count, 1) / params.f_norm
    return np.multiply(c, scale, out=c), None, {"alpha": rewards.size / max(count, 1)}
