"""AVSPO: adaptive virtual-sample policy optimisation against advantage collapse (contract.md §4).

Deviations from paper/released code: the arXiv version's virtual-reward formula (its Eq. 9) is not
recoverable; `virtual="stratified"` is our reconstruction satisfying every property the paper states, and
`virtual="www"` the earlier published form (WWW-2026 submission Eq. 10).  The released code (one opposite
virtual sample when the whole batch collapsed) is not implemented.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import STD_CHOICES, choice, group_stats, hp, normalise, number, spread
from benchctl.estimators.registry import register_estimator

VIRTUAL_CHOICES = ("stratified", "www")


@dataclass(frozen=True)
class AvspoParams:
    gamma: float = hp(0.5, "sensitivity: K = max(1, min(G, ceil(G * acr^gamma))) virtual samples; >= 0")
    tau0: float = hp(0.5, "initial trigger threshold; tau_min <= tau0 <= tau_max")
    eta: float = hp(0.01, "threshold adaptation rate; >= 0")
    tau_min: float = hp(0.1, "lower bound of the threshold; in [0, 1]")
    tau_max: float = hp(0.9, "upper bound of the threshold; in [tau_min, 1]")
    delta: float = hp(1e-6, "a group is collapsed when its population std is below delta; > 0")
    anchor_reward: float = hp(0.1, "floor of the stratified virtual rewards (gives all-wrong groups contrast)")
    virtual: str = hp("stratified", "virtual-reward form: 'stratified' [our choice] or 'www' (earlier paper)")
    std: str = hp("sample", "std over the G + K values: 'sample' or 'population'")
    eps: float = hp(1e-6, "added to the std before dividing; >= 0")

    def __post_init__(self) -> None:
        number("gamma", self.gamma, 0.0, None)
        number("eta", self.eta, 0.0, None)
        number("tau_min", self.tau_min, 0.0, 1.0)
        number("tau_max", self.tau_max, self.tau_min, 1.0)
        number("tau0", self.tau0, self.tau_min, self.tau_max)
        number("delta", self.delta, 0.0, None, low_open=True)
        number("anchor_reward", self.anchor_reward)
        choice("virtual", self.virtual, VIRTUAL_CHOICES)
        choice("std", self.std, STD_CHOICES)
        number("eps", self.eps, 0.0, 1.0)


@dataclass(frozen=True)
class AvspoState:
    tau: float  # trigger threshold for the next call
    prev_mean: float | None  # previous step's mean reward (None before the first call)


def virtual_rewards(r_max: np.ndarray, k: int, params: AvspoParams) -> np.ndarray:
    """Virtual rewards of the collapsed groups: (D,) common rewards -> (D, K)."""
    j = np.arange(1, k + 1)  # (K,)
    if params.virtual == "www":
        return r_max[:, None] * (1.0 - (j - 1) / k)  # (D, K): v_1 = r_max, v_k = r_max (1 - (k-1)/K)
    return np.maximum(params.anchor_reward, r_max[:, None] * (1.0 - j / (k + 1)))  # (D, K)


def augmented_advantages(real: np.ndarray, acr: float, params: AvspoParams) -> tuple[np.ndarray, int]:
    """Advantages of the G real rollouts of D collapsed groups with K virtual rewards: (D, G) -> (D, G), K."""
    g = real.shape[1]
    k = max(1, min(g, math.ceil(g * acr**params.gamma - 1e-9)))  # 1e-9 guards ceil against float noise
    values = np.concatenate([real, virtual_rewards(real.max(axis=1), k, params)], axis=1)  # (D, G + K)
    mean = values.mean(axis=1)  # (D,)
    std_pop = values.std(axis=1)  # (D,)
    std = spread(std_pop, g + k, params.std)  # (D,)
    return normalise(real - mean[:, None], std, params.eps, std_pop < params.delta), k


@register_estimator(
    "avspo",
    kind="base",
    params=AvspoParams,
    state=AvspoState,
    degenerate_only=True,
    acted=lambda m: m["augmented"] > 0,
    mechanism="collapsed groups were augmented with virtual samples (the batch ACR passed tau)",
)
def avspo(rewards: np.ndarray, params: AvspoParams, state: AvspoState | None):
    """AVSPO: when the collapse rate exceeds an adaptive threshold, add K virtual rewards to collapsed groups.

    Reference: arXiv:2605.21125 §4.1-4.2 (ACR Eq. 6, K Eq. 8, virtual rewards Eq. 9, threshold Eq. 10,
    advantage Eq. 12; equations lost in our copy, taken from the WWW-2026 version Eq. 9-14 and App. B.2 Eq. 20,
    estimators-sources §4.1-4.2).
    Formula: augment iff acr > tau; collapsed groups: A_i = (r_i - mean') / (std' + eps) over G + K values;
    tau <- clip(tau + eta sign(dJ) (acr - tau), tau_min, tau_max)
    Shapes: rewards (P, G) float64 -> advantages (P, G); collapsed groups not augmented -> exactly 0.0.
    Deviations: [our choice] stratified virtual rewards v_k = max(anchor_reward, r_max (1 - k/(K+1))), k=1..K;
    [our choice] dJ = mean reward - previous mean reward (arXiv prose), no update on the first call;
    [our choice] K uses ceil(x - 1e-9) so float noise cannot add a virtual sample.
    """
    stats = group_stats(rewards, params.delta)
    tau = params.tau0 if state is None else state.tau
    acr = float(stats.degenerate.mean())
    std = spread(stats.std_pop, rewards.shape[1], params.std)  # (P,)
    adv = normalise(stats.centered, std, params.eps, stats.degenerate)  # (P, G) plain GRPO
    k = 0
    if acr > tau:
        adv[stats.degenerate], k = augmented_advantages(rewards[stats.degenerate], acr, params)
    batch_mean = float(rewards.mean())
    new_tau = tau
    if state is not None and state.prev_mean is not None:
        step = float(np.sign(batch_mean - state.prev_mean))
        new_tau = float(np.clip(tau + params.eta * step * (acr - tau), params.tau_min, params.tau_max))
    metrics = {"acr": acr, "tau": tau, "tau_next": new_tau, "augmented": float(k > 0), "virtual_k": float(k)}
    return adv, AvspoState(new_tau, batch_mean), metrics
