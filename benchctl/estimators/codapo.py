"""CoDaPO: confidence- and difficulty-adaptive reweighting of any base advantage (arXiv:2606.07950).

Transcribed from the authors' code, tmlr-group/CoDaPO @ 210c2051f54de76fdf92eb4cef9bb919dd404789,
alphaapollo/core/generation/verl/trainer/ppo/core_algos.py `compute_codapo_advantage` (the same function as veRL
PR #7497); with base=grpo (sample std, eps 1e-6) equal to it to 1e-12 (tests/estimators/test_estimator_codapo.py).
The question value w_q is also what the trainer's `codapo_resample` sampler ranks questions by (docs/training.md).
Deviations from the released code: a group of one rollout keeps its base advantage rule (the code uses mean 0,
std 1, so A = r / (1 + eps)); confidence comes from the rollout engine's sampled-token log-probs (the code uses
the actor's recomputed old log-probs: equal up to the engine/trainer mismatch); without seq_logprob (the lab,
replay of runs that did not log it) the confidence c is 1 [our choice].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.estimators._common import hp, number
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class CodapoParams:
    weight_offset: float = hp(0.1, "constant added to c * d_weight so every question keeps some signal; >= 0")

    def __post_init__(self) -> None:
        number("weight_offset", self.weight_offset, 0.0, 100.0)


def question_value(rewards: np.ndarray, seq_logprob: np.ndarray | None, offset: float) -> np.ndarray:
    """CoDaPO's per-question value w_q = c_q * (1 - 4 (d_q - 1/2)^2) + offset; (P, G), (P, G) or None -> (P,).

    d_q = 1 - acc_q with acc_q the share of rewards exactly 1.0; c_q = exp(mean over the group of each rollout's
    mean token log-prob) (1 without log-probs).
    """
    acc = (rewards == 1.0).mean(axis=1)  # (P,)
    d_weight = 1.0 - 4.0 * ((1.0 - acc) - 0.5) ** 2  # (P,) U-shaped: medium difficulty weighted most
    conf = np.ones(len(rewards)) if seq_logprob is None else np.exp(seq_logprob.mean(axis=1))  # (P,)
    return conf * d_weight + offset


@register_estimator(
    "codapo",
    kind="modifier",
    params=CodapoParams,
    inputs=("seq_logprob",),
    acted=lambda m: m["codapo_weight_max"] - m["codapo_weight_min"] > 1e-9,
    mechanism="question weights differ across the batch's questions (confidence x difficulty)",
)
def codapo(rewards: np.ndarray, base_adv: np.ndarray, params: CodapoParams, state: None, inputs: dict):
    """CoDaPO: scale every rollout's base advantage by its question's confidence x difficulty weight.

    Reference: arXiv:2606.07950 (CoDaWeighting, §3; the paper's text was not available here, the formula is the
    authors' code core_algos.py compute_codapo_advantage and veRL PR #7497).
    Formula: A' = A * (c_q * (1 - 4 (d_q - 0.5)^2) + weight_offset), d_q = 1 - acc_q, c_q = exp(mean_i logprob_i)
    Shapes: rewards (P, G), base_adv (P, G), seq_logprob (P, G) mean token log-prob per rollout -> (P, G).
    Deviations: see the module docstring; default weight_offset=0.1 (the code's).
    """
    weight = question_value(rewards, inputs["seq_logprob"], params.weight_offset)  # (P,)
    metrics = {
        "codapo_weight_mean": float(weight.mean()),
        "codapo_weight_min": float(weight.min()),
        "codapo_weight_max": float(weight.max()),
        "codapo_confidence_given": float(inputs["seq_logprob"] is not None),
    }
    return base_adv * weight[:, None], None, metrics
