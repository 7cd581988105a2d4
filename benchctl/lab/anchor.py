"""HA-DW's evolving anchor on a simulated accuracy trajectory: does the anchor follow the model's accuracy?

HA-DW (arXiv:2601.08521 §3.1, Eq. 8-12) weights each advantage by the distance of its prompt's success rate from an
anchor C that should track the policy's accuracy. Its soft update is C+ = (1 - eta_t) C- + eta_t y, with Eq. 10's
gain eta_t = eta * sigma, sigma the std of the last m anchors. On a real run the anchors of the first steps are
close together, sigma is small, the anchor barely moves, sigma shrinks further: an anchor that stands still is a
fixed point (sigma = 0). This experiment feeds `benchctl.estimators.hadw.next_anchor` (the estimator's own update)
with batch accuracies y_t = a rising or a flat mean plus Gaussian noise and reports, for each gain rule
(`gain='anchor_std'`, Eq. 10 as written; `gain='constant'`, eta_t = eta, the default [our choice]), where the anchor
ends against the mean accuracy of the last 10 steps, how far it moved, and its last eta_t.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.errors import check_range
from benchctl.lab.result import LabResult, config_dict

GAINS = ("anchor_std", "constant")
TRAJECTORIES = {"rising": (0.18, 0.30), "noisy": (0.24, 0.24)}  # accuracy at the first and the last step
FROZEN = 0.005  # an anchor that moved less than this over the run is reported frozen


@dataclass(frozen=True)
class AnchorConfig:
    steps: int = 60  # optimizer steps
    noise: float = 0.02  # sd of the batch accuracy around its mean
    eta: float = 0.1  # HA-DW's eta (the default)
    m: int = 10  # anchors in Eq. 10's sigma (the default)
    seeds: int = 200  # simulated runs per (trajectory, gain)
    seed: int = 0

    def __post_init__(self) -> None:
        check_range("steps", self.steps, 10)
        check_range("noise", self.noise, 0)
        check_range("eta", self.eta, 0)
        check_range("m", self.m, 2)
        check_range("seeds", self.seeds, 1)


def accuracies(config: AnchorConfig, trajectory: str, rng: np.random.Generator) -> np.ndarray:
    """(seeds, steps) batch accuracies: the trajectory's straight line plus N(0, noise), clipped to [0, 1]."""
    start, end = TRAJECTORIES[trajectory]
    mean = np.linspace(start, end, config.steps)
    return np.clip(mean + config.noise * rng.standard_normal((config.seeds, config.steps)), 0.0, 1.0)


def anchor_path(ys: np.ndarray, gain: str, config: AnchorConfig) -> tuple[np.ndarray, np.ndarray]:
    """The estimator's anchor after each step (steps,) and its eta_t (steps,) for one run's accuracies."""
    from benchctl.estimators.hadw import HadwParams, next_anchor

    params = HadwParams(eta=config.eta, m=config.m, gain=gain)
    state, prior = None, float(ys[0])  # first call: C- = the first batch accuracy, as the estimator does
    anchors, etas = np.empty(len(ys)), np.empty(len(ys))
    for t, y in enumerate(ys):
        prior, state, _, eta_t = next_anchor(prior, float(y), state, params)
        anchors[t], etas[t] = prior, eta_t
    return anchors, etas


def run_anchor(config: AnchorConfig) -> LabResult:
    """One row per (trajectory, gain): mean over runs of the final anchor, the last-10 mean accuracy, their gap
    (and the share of runs within 0.03), the distance the anchor moved, and eta_t at the end."""
    rng = np.random.default_rng(config.seed)
    rows, series = [], []
    for trajectory in TRAJECTORIES:
        ys = accuracies(config, trajectory, rng)
        for gain in GAINS:
            paths = [anchor_path(y, gain, config) for y in ys]
            anchors = np.stack([a for a, _ in paths])  # (seeds, steps)
            etas = np.stack([e for _, e in paths])
            target = ys[:, -10:].mean(axis=1)
            gap = anchors[:, -1] - target
            moved = np.abs(anchors[:, -1] - anchors[:, 0])
            rows.append(
                {
                    "trajectory": trajectory,
                    "gain": gain,
                    "anchor_end": float(anchors[:, -1].mean()),
                    "acc_last10": float(target.mean()),
                    "gap": float(gap.mean()),
                    "within_0.03": float((np.abs(gap) <= 0.03).mean()),
                    "moved": float(moved.mean()),
                    "eta_end": float(etas[:, -1].mean()),
                    "frozen": bool(np.median(moved) < FROZEN),
                }
            )
            for t in range(config.steps):
                series.append(
                    {"trajectory": trajectory, "gain": gain, "step": t + 1, "accuracy": float(ys[0, t]),
                     "anchor": float(anchors[0, t]), "anchor_mean": float(anchors[:, t].mean())}
                )  # fmt: skip
    notes = [
        f"{config.seeds} simulated runs per row, {config.steps} steps, accuracy noise sd {config.noise}; anchor update"
        " = benchctl.estimators.hadw.next_anchor (the estimator's own), eta = "
        f"{config.eta}, m = {config.m}",
        "gap = final anchor - mean batch accuracy of the last 10 steps; frozen: the median run's anchor moved less than"
        f" {FROZEN} in all",
    ]
    return LabResult("anchor", config_dict(config), rows, notes, series=series)
