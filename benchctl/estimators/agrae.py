"""A-GRAE and its four control experiments: asymmetric rescalings of any base advantage (contract.md §3).

Deviations from the released code (HKU-HealthAI/A-GRAE @c5aa316): we follow the paper, i.e. sqrt(1-p) where
the code has 1 - sqrt(p), omega = mean of all rewards, and the base advantage's own std (the paper's proofs
use the population std: pass std="population" to the grpo base to match them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import flag, group_stats, hp, number, signed_scale, unit_interval_groups
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class AgraeParams:
    alpha: float = hp(1.0, "suppression level: positive advantages x min(1, omega/alpha); in (0, 1] (Eq. 13)")
    shift: bool = hp(True, "apply the dynamic difficulty-attention shift (Eq. 12)")
    suppress: bool = hp(True, "apply the attenuation suppression of positive advantages (Eq. 13)")

    def __post_init__(self) -> None:
        number("alpha", self.alpha, 0.0, 1.0, low_open=True)
        flag("shift", self.shift)
        flag("suppress", self.suppress)


@dataclass(frozen=True)
class BetaParams:
    beta: float = hp(10.0, "rescaling factor of positive advantages (paper: 10); > 0")

    def __post_init__(self) -> None:
        number("beta", self.beta, 0.0, None, low_open=True)


@dataclass(frozen=True)
class GammaParams:
    gamma: float = hp(0.5, "overall scale of the focused advantage (paper: 0.5); > 0")

    def __post_init__(self) -> None:
        number("gamma", self.gamma, 0.0, None, low_open=True)


def _success_rate(rewards: np.ndarray, who: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P,) group success rates p (0.5 in degenerate rows, where nothing is rescaled), the (P,) degenerate
    mask and a (P, G) scratch buffer for the output."""
    unit_interval_groups(rewards, who)
    stats = group_stats(rewards)
    return np.where(stats.degenerate, 0.5, stats.mean), stats.degenerate, stats.centered


def _rowwise(base_adv: np.ndarray, factor: np.ndarray, degenerate: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A * factor per row, degenerate rows keep A, written into `out`; (P, G), (P,) -> (P, G)."""
    return np.multiply(base_adv, np.where(degenerate, 1.0, factor)[:, None], out=out)


@register_estimator("a_grae", kind="modifier", params=AgraeParams)
def a_grae(rewards: np.ndarray, base_adv: np.ndarray, params: AgraeParams, state: None):
    """A-GRAE: shift attention between hard and easy groups with batch proficiency, then damp positives.

    Reference: arXiv:2602.05548 §5.1 (omega Eq. 11, attention shift Eq. 12, attenuation suppression Eq. 13);
    estimators-sources §3.1.
    Formula: A' = A (omega/(2 sqrt(p)) + (1-omega)/(2 sqrt(1-p))); A' > 0: A' min(1, omega/alpha); omega = batch mean
    Shapes: rewards (P, G) in [0, 1], base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: paper equations, not the released code (see the module docstring); [our choice] the base keeps
    its own std (grpo default: sample), pass std="population" for the paper's.
    """
    p, degenerate, out = _success_rate(rewards, "a_grae")
    omega = float(rewards.mean())  # Eq. 11: mean over all B trajectories of the batch
    shift = np.ones_like(p)  # (P,) Eq. 12 factor
    if params.shift:
        shift = omega / (2.0 * np.sqrt(p)) + (1.0 - omega) / (2.0 * np.sqrt(1.0 - p))
    damp = min(1.0, omega / params.alpha) if params.suppress else 1.0
    up = np.where(degenerate, 1.0, shift * damp)  # (P,) factor of positive advantages (Eq. 12 then 13)
    down = np.where(degenerate, 1.0, shift)  # (P,) factor of the others
    return signed_scale(base_adv, up, down, out), None, {"omega": omega, "suppression": damp}


@register_estimator("pos_dominant", kind="modifier", params=BetaParams)
def pos_dominant(rewards: np.ndarray, base_adv: np.ndarray, params: BetaParams, state: None):
    """Positive-Dominant control: amplify positive advantages by beta.

    Reference: arXiv:2602.05548 §4.1 (control experiment I, Table 1); estimators-sources §3.2.
    Formula: A > 0: beta A; A <= 0: A
    Shapes: rewards (P, G), base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: none.
    """
    stats = group_stats(rewards)
    up = np.where(stats.degenerate, 1.0, params.beta)  # (P,)
    return signed_scale(base_adv, up, np.ones_like(up), out=stats.centered), None, {}


@register_estimator("neg_dominant", kind="modifier", params=BetaParams)
def neg_dominant(rewards: np.ndarray, base_adv: np.ndarray, params: BetaParams, state: None):
    """Negative-Dominant control: shrink positive advantages by beta.

    Reference: arXiv:2602.05548 §4.1 (control experiment I, Table 1); estimators-sources §3.2.
    Formula: A > 0: A / beta; A <= 0: A
    Shapes: rewards (P, G), base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: none.
    """
    stats = group_stats(rewards)
    np.copyto(stats.centered, base_adv)  # the (P, G) scratch becomes the output
    shrink = (base_adv > 0) & ~stats.degenerate[:, None]  # (P, G)
    return np.divide(base_adv, params.beta, out=stats.centered, where=shrink), None, {}


@register_estimator("hard_focused", kind="modifier", params=GammaParams)
def hard_focused(rewards: np.ndarray, base_adv: np.ndarray, params: GammaParams, state: None):
    """Hard-Focused control: weight groups by 1/sqrt(p), emphasising hard prompts.

    Reference: arXiv:2602.05548 §4.1 (control experiment II, Table 1); estimators-sources §3.2.
    Formula: A' = gamma A / sqrt(p)   (population-std GRPO base: sum_i |A'| = G sqrt(1-p))
    Shapes: rewards (P, G) in [0, 1], base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: none.
    """
    p, degenerate, out = _success_rate(rewards, "hard_focused")
    return _rowwise(base_adv, params.gamma / np.sqrt(p), degenerate, out), None, {}


@register_estimator("easy_focused", kind="modifier", params=GammaParams)
def easy_focused(rewards: np.ndarray, base_adv: np.ndarray, params: GammaParams, state: None):
    """Easy-Focused control: weight groups by 1/sqrt(1-p), emphasising easy prompts.

    Reference: arXiv:2602.05548 §4.1 (control experiment II, Table 1); estimators-sources §3.2.
    Formula: A' = gamma A / sqrt(1-p)   (population-std GRPO base: sum_i |A'| = G sqrt(p))
    Shapes: rewards (P, G) in [0, 1], base_adv (P, G) float64 -> advantages (P, G); degenerate groups keep A.
    Deviations: none.
    """
    p, degenerate, out = _success_rate(rewards, "easy_focused")
    return _rowwise(base_adv, params.gamma / np.sqrt(1.0 - p), degenerate, out), None, {}
