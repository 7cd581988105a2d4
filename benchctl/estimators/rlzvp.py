"""RL-ZVP: entropy-guided token advantages for zero-variance groups, the base advantage elsewhere (arXiv:2509.21880).

A zero-variance (degenerate) group carries no contrast, so GRPO gives it A = 0. RL-ZVP gives it a direction from its
outcome (all correct: reward, all wrong: penalty) and shapes it per token by the policy's entropy H_t at that token
(detached): A_t = alpha H_t for all-correct groups, A_t = -alpha (max_k H_k - H_t) for all-wrong ones, max over the
response's tokens. Sequence level, the advantage of a zero-variance group is +-alpha (entropy weight 1: what the lab
and `replay`, which hold no token entropies, see); the trainer supplies the entropies (`token_scores="entropy"`,
benchctl.trainers.scores), as do the TRL and veRL plug-ins (benchctl.integrations), and `Estimator.token_advantages`
multiplies: A_t = (+-alpha) x w_t. The share of rows it shaped is `zvp_shaped_frac` (`est/zvp_shaped_frac`).

Deviations from the paper: its equations were not recoverable here; the formula above is the one two independent
ports agree on to the digit (NeMo-RL's RLZVPAdvantageEstimator test, a TRL bridge `entropy_guided_advantages` test,
both alpha=0.1), and no cap on |A_t| appears in either. [our choice] a degenerate group's direction for non-binary
rewards is sign(common reward - 0.5) (none at exactly 0.5: it keeps the base advantage); the entropy is the policy's
at the update (the rollout temperature), before the first optimizer step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.estimators._common import group_stats, hp, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class RlzvpParams:
    alpha: float = hp(0.1, "scale of the zero-variance groups' entropy-guided advantage (ports' default 0.1); > 0")

    def __post_init__(self) -> None:
        number("alpha", self.alpha, 0.0, 100.0, low_open=True)


def zvp_weights(scores: np.ndarray, mask: np.ndarray, params: RlzvpParams, seq_adv: np.ndarray, degenerate):
    """Registry hook: token weights (N, T) of rows of degenerate groups, from entropies `scores` (N, T) >= 0 over the
    response `mask` (N, T): H_t where seq_adv > 0, max_k H_k - H_t where seq_adv < 0; 1 elsewhere."""
    if degenerate is None:
        raise BenchctlError(
            "rl_zvp needs each row's degenerate flag (its group's rewards all equal) with its entropies"
        )
    if (mask & ~(np.isfinite(scores) & (scores >= 0))).any():
        raise BenchctlError("rl_zvp token entropies must be finite and >= 0 on response tokens")
    h = np.where(mask, scores, 0.0)  # (N, T)
    top = h.max(axis=1, keepdims=True, initial=0.0)  # (N, 1) max_k H_k over the response
    rows = np.asarray(degenerate, dtype=bool)[:, None]  # (N, 1)
    shaped = np.where(seq_adv[:, None] > 0, h, top - h)  # (N, T)
    return np.where(rows & (seq_adv[:, None] != 0) & mask, shaped, 1.0)


def zvp_metrics(weights: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """Registry hook: `zvp_shaped_frac`, the share of the rows given (N of them) whose token weights (N, T) are not all
    1, i.e. entropy-shaped rows (logged `est/zvp_shaped_frac`, not OAR's `oar/reshaped_frac`)."""
    return {"zvp_shaped_frac": float((np.abs(weights - 1.0) > 1e-9).any(axis=1).mean()) if len(weights) else 0.0}


@register_estimator(
    "rl_zvp",
    kind="modifier",
    params=RlzvpParams,
    token_weights=zvp_weights,
    token_metrics=zvp_metrics,
    token_scores="entropy",
    token_rows=True,
    degenerate_only=True,
    acted=lambda m: m["zvp_acted_frac"] > 0,
    mechanism="some zero-variance group got a non-zero (entropy-guided) advantage",
)
def rl_zvp(rewards: np.ndarray, base_adv: np.ndarray, params: RlzvpParams, state: None):
    """RL-ZVP: zero-variance groups get +-alpha (shaped per token by the entropy), other groups the base advantage.

    Reference: arXiv:2509.21880 (RL-ZVP; its body was not available here, equation numbers unknown: the form is
    benchctl issue 43 §6's, made exact by two ports' tests: NeMo-RL RLZVPAdvantageEstimator, a TRL bridge's
    entropy_guided_advantages).
    Formula: all-correct group: A_t = alpha H_t; all-wrong: A_t = -alpha (max_k H_k - H_t); else A = base
    Shapes: rewards (P, G), base_adv (P, G) -> advantages (P, G) (+-alpha on zero-variance groups; token shaping:
      token_advantages with per-token entropies).
    Deviations: see the module docstring (alpha=0.1 from the ports; direction of non-binary degenerate groups).
    """
    stats = group_stats(rewards)
    direction = np.where(stats.degenerate, np.sign(stats.mean - 0.5), 0.0)  # (P,) +1 correct, -1 wrong, 0 else
    zvp = direction != 0  # (P,)
    adv = np.where(zvp[:, None], params.alpha * direction[:, None], base_adv)  # (P, G)
    degenerate = int(stats.degenerate.sum())
    metrics = {"zvp_frac": float(zvp.mean()), "zvp_acted_frac": float(zvp.sum() / degenerate) if degenerate else 0.0}
    return adv, None, metrics
