"""JSPO: a James-Stein shrinkage baseline across the prompts of a batch (arXiv:2511.03710).

Transcribed from the authors' code, guanning03/JSPO-Official @ 3f8539de964b2eb1266422a697a88681c9b70853,
code/verl/trainer/ppo/core_algos.py `compute_jspo_outcome_advantage` (leave_one_out true) and
`compute_jspo_plus_plus_outcome_advantage` without smoothing (leave_one_out false); equal to both to 1e-12
(tests/estimators/test_estimator_jspo_dbb.py).
Deviations from the released code: a batch of one prompt (the code's leave-one-question-out mean is then the mean of
an empty set, NaN) uses the whole-batch lambda and the prompt's own mean [our choice]; the released
`js_smooth_coef` EMA of JSPO++ (a W&B-display smoother applied to lambda and the batch mean) is not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import flag, hp, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class JspoParams:
    leave_one_out: bool = hp(
        True,
        "true: lambda and the batch mean of prompt q from the other prompts only (JSPO, keeps the gradient unbiased);"
        " false: from the whole batch (the code's JSPO++ without smoothing)",
    )
    eps: float = hp(1e-6, "added to v^2 + s^2 before dividing (the code's epsilon); >= 0")

    def __post_init__(self) -> None:
        flag("leave_one_out", self.leave_one_out)
        number("eps", self.eps, 0.0, 1.0)


def _shrinkage(means: np.ndarray, v_each: np.ndarray, loo: bool, eps: float):
    """Per-prompt lambda (P,) and batch mean (P,) from the group means and v_q = var_smp / G (both (P,))."""
    n = means.shape[0]
    if not loo or n == 1:
        batch = means.mean()
        v2, s2 = v_each.mean(), ((means - batch) ** 2).mean()
        lam = np.full(n, v2 / (v2 + s2 + eps))
        return lam, np.full(n, batch), np.full(n, v2), np.full(n, s2)
    others = ~np.eye(n, dtype=bool)  # (P, P): row q marks the prompts other than q
    batch = (means.sum() - means) / (n - 1)  # (P,) leave-one-question-out batch mean
    v2 = (v_each.sum() - v_each) / (n - 1)  # (P,)
    s2 = np.where(others, (means[None, :] - batch[:, None]) ** 2, 0.0).sum(axis=1) / (n - 1)  # (P,)
    return v2 / (v2 + s2 + eps), batch, v2, s2


@register_estimator(
    "jspo",
    kind="base",
    params=JspoParams,
    acted=lambda m: m["js_lambda_mean"] > 1e-9,
    mechanism="the baseline was shrunk toward the batch mean (lambda > 0 for some prompt)",
)
def jspo(rewards: np.ndarray, params: JspoParams, state: None):
    """JSPO: RLOO's baseline shrunk toward the batch mean by a James-Stein factor pooled across the batch's prompts.

    Reference: arXiv:2511.03710 (James-Stein baselines; the paper's text was not available here, so no § is
    checked: the formula is the authors' code, guanning03/JSPO-Official core_algos.py compute_jspo_outcome_advantage).
    Formula: A_ij = r_ij - ((1 - lam_q) * mean_{k != j} r_qk + lam_q * rbar_-q), lam_q = v2 / (v2 + s2 + eps)
    with v2 = mean over the other prompts of var_smp / G and s2 = mean over them of (mean_p - rbar_-q)^2.
    Shapes: rewards (P, G) float64, G >= 2 -> advantages (P, G); degenerate groups are NOT zeroed (their baseline
    is pulled toward the batch mean, as in the released code); no std division.
    Deviations: a batch of one prompt uses its own mean and whole-batch lambda [our choice]; see the module docstring.
    """
    p, g = rewards.shape
    means = rewards.mean(axis=1)  # (P,)
    v_each = rewards.var(axis=1, ddof=1) / g  # (P,) the code's torch.var(unbiased=True) / m
    lam, batch, v2, s2 = _shrinkage(means, v_each, params.leave_one_out, params.eps)
    rloo = (rewards.sum(axis=1, keepdims=True) - rewards) / (g - 1)  # (P, G)
    baseline = rloo * (1.0 - lam[:, None]) + batch[:, None] * lam[:, None]
    metrics = {"js_lambda_mean": float(lam.mean()), "js_v2": float(v2.mean()), "js_s2": float(s2.mean())}
    return rewards - baseline, None, metrics
