"""Variance-optimal baselines: OPO (length-weighted) and the optimal token baseline (path-variance-weighted).

Deviations from paper/released code: the registered estimators see one reward per rollout and nothing
else, so they compute the special case their inputs allow: OPO with equal response lengths and the
optimal token baseline with equal path-variance weights across a group's rollouts, where both baselines
are the group mean (A = r - mean, Dr.GRPO's advantage).  The full forms, which need response lengths or
per-token probabilities, are the plain functions `opo_advantages` and `optimal_token_baseline_advantages`
below (tested against veRL 0.9.1); they are not reachable from `benchctl train` until the estimator contract
carries lengths and token statistics.  A group of one rollout gets A = r (baseline 0), as veRL does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import group_stats
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class EqualLengthParams:
    """No hyperparameters: the equal-length special case has none."""


def opo_advantages(rewards: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """OPO with lengths: rewards (P, G), lengths (P, G) > 0 -> A = r - sum_j l_j r_j / sum_j l_j (P, G)."""
    if rewards.shape[1] == 1:
        return rewards.astype(np.float64, copy=True)
    base = np.einsum("pg,pg->p", lengths, rewards) / lengths.sum(axis=1)  # (P,)
    return rewards - base[:, None]


def optimal_token_baseline_advantages(
    token_rewards: np.ndarray,
    mask: np.ndarray,
    old_log_probs: np.ndarray,
    sum_pi_squared: np.ndarray,
    handle_zero_tail: bool = True,
    eps: float = 1e-8,
) -> np.ndarray:
    """Optimal token baseline on (P, G, T) arrays -> advantages (P, G, T), zero on padding (veRL 0.9.1 defaults).

    G_t = reward-to-go; w_t = 1 - 2 pi_t + sum pi^2; W_t = cumsum_t(w_t * mask);
    B_t = sum_g G_t W_t M / (sum_g W_t M + eps); handle_zero_tail: a group's unique longest rollout gets
    B_t = 0 past the second-longest length (veRL's option, on by default in 0.9.1).
    """
    m = mask.astype(np.float64)  # (P, G, T)
    returns = np.flip(np.cumsum(np.flip(token_rewards * m, -1), -1), -1)  # (P, G, T) reward-to-go
    w = np.cumsum((1.0 - 2.0 * np.exp(old_log_probs) + sum_pi_squared) * m, -1)  # (P, G, T) W_t
    base = (returns * w * m).sum(axis=1) / ((w * m).sum(axis=1) + eps)  # (P, T)
    base = np.repeat(base[:, None, :], m.shape[1], axis=1)  # (P, G, T)
    if m.shape[1] == 1:
        base[:] = 0.0  # one rollout: no baseline
    elif handle_zero_tail:
        base[_zero_tail(m.sum(axis=-1), m.shape[-1])] = 0.0
    return (returns - base) * m


def _zero_tail(lengths: np.ndarray, t: int) -> np.ndarray:
    """(P, G, T) bool: tokens of a group's unique longest rollout (lengths (P, G)) past the second-longest length."""
    ordered = np.sort(lengths, axis=1)  # (P, G)
    top, second = ordered[:, -1], ordered[:, -2]  # (P,)
    unique = ((lengths == top[:, None]).sum(axis=1) == 1) & (top > second)  # (P,)
    longest = np.arange(lengths.shape[1])[None, :] == lengths.argmax(axis=1)[:, None]  # (P, G)
    past = np.arange(t)[None, :] >= second[:, None]  # (P, T)
    return unique[:, None, None] & longest[:, :, None] & past[:, None, :]


def _mean_baseline(rewards: np.ndarray) -> np.ndarray:
    return rewards.copy() if rewards.shape[1] == 1 else group_stats(rewards).centered


@register_estimator("opo", kind="base", params=EqualLengthParams, min_group_size=1)
def opo(rewards: np.ndarray, params: EqualLengthParams, state: None):
    """OPO: the variance-optimal baseline of exact on-policy training, its equal-length case.

    Reference: arXiv:2505.23585 (On-Policy RL with Optimal reward baseline, b* = sum_i l_i r_i / sum_i l_i
    for sequence-level rewards; the paper's Eq. numbers are not checked here: no copy of the paper text);
    code: veRL 0.9.1 core_algos.py `compute_opo_outcome_advantage`.
    Formula: A_i = r_i - sum_j l_j r_j / sum_j l_j, here with l_j equal: A_i = r_i - mean
    Shapes: rewards (P, G) float64 -> advantages (P, G); degenerate groups -> exactly 0.0 when G > 1.
    Deviations: equal lengths assumed (module docstring); `opo_advantages(rewards, lengths)` is the full form.
    """
    return _mean_baseline(rewards), None, {}


@register_estimator("optimal_token_baseline", kind="base", params=EqualLengthParams, min_group_size=1)
def optimal_token_baseline(rewards: np.ndarray, params: EqualLengthParams, state: None):
    """Optimal token baseline (OTB): per-token baseline weighted by cumulative path variance, its uniform case.

    Reference: veRL 0.9.1 core_algos.py `compute_optimal_token_baseline_advantage` (B_t* = E[G_t W_t] / E[W_t],
    W_t = sum_{j<=t} (1 - 2 pi_j + sum pi^2)), which derives from the optimal-baseline result of arXiv:2505.23585
    (OPO; Eq. numbers not checked here) applied per token; veRL cites no paper of its own for OTB.
    Formula: A_{i,t} = G_{i,t} - sum_j G_{j,t} W_{j,t} / sum_j W_{j,t}; with W equal across the group: A_i = r_i - mean
    Shapes: rewards (P, G) float64 -> advantages (P, G) (one per rollout, broadcast over its tokens).
    Deviations: equal weights and lengths assumed (module docstring); `optimal_token_baseline_advantages` is the
    full per-token form.
    """
    return _mean_baseline(rewards), None, {}
