"""Per-step batch statistics of the trainer (rewards, advantage symmetry, responses), as namespaced floats.

Logging only: advantages come from the estimator (`est.advantages`), never from here.
"""

from __future__ import annotations

import numpy as np

from benchctl.estimators._common import acr_metrics


def reward_metrics(rewards: np.ndarray, sampled: np.ndarray) -> dict[str, float]:
    """reward/* of the trained batch (P, G); acr/* of every group sampled this step (before DAPO's filter)."""
    acr = acr_metrics(sampled)
    return {
        "reward/mean": float(rewards.mean()),
        "reward/std": float(rewards.std()),
        "acr/all": acr["acr"],
        "acr/all_wrong": acr["acr_all_wrong"],
        "acr/all_correct": acr["acr_all_correct"],
    }


def advantage_metrics(adv: np.ndarray) -> dict[str, float]:
    """Symmetry of the sequence advantages (P, G): positive and negative mass, extremes."""
    return {
        "adv/pos_sum": float(adv[adv > 0].sum()),
        "adv/neg_sum": float(adv[adv < 0].sum()),
        "adv/min": float(adv.min()),
        "adv/max": float(adv.max()),
        "adv/zero_frac": float((adv == 0).mean()),
    }


def response_metrics(num_tokens: np.ndarray, truncated: np.ndarray) -> dict[str, float]:
    """Length (mean, max) and truncation rate of the trained responses."""
    return {
        "response/length_mean": float(num_tokens.mean()),
        "response/length_max": float(num_tokens.max()),
        "response/truncated": float(truncated.mean()),
    }


TOKEN_DIAGNOSTICS = ("reshaped_frac", "no_span_frac")  # Estimator.token_advantages' (OAR's token reshaping)


def estimator_metrics(diagnostics: dict[str, float]) -> dict[str, float]:
    """The estimator's own diagnostics under est/ (HA-DW anchor, AVSPO tau and K, A-GRAE omega, ...); those of the
    token reshaping (spec §7) under oar/: `oar/reshaped_frac`, rows whose token weights are not all 1, and
    `oar/no_span_frac`, rows without reasoning span (no answer found, or nothing before it)."""
    return {f"{'oar' if k in TOKEN_DIAGNOSTICS else 'est'}/{k}": float(v) for k, v in diagnostics.items()}
