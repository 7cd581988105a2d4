"""Per-step batch statistics of the trainer (rewards, advantage symmetry, responses, the loss over micro-batches), as
namespaced floats.

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
    token reshaping (docs/contract.md §7) under oar/: `oar/reshaped_frac`, rows whose token weights are not all 1, and
    `oar/no_span_frac`, rows without reasoning span (no answer found, or nothing before it)."""
    return {f"{'oar' if k in TOKEN_DIAGNOSTICS else 'est'}/{k}": float(v) for k, v in diagnostics.items()}


def variance_proxy(
    logp: np.ndarray, sum_sq: np.ndarray, adv: np.ndarray, mask: np.ndarray, grad_norm: float, rows: int
) -> dict[str, float]:
    """The gradient-variance proxy of veRL 0.9.1 (`metric_utils.compute_variance_proxy_metrics`, on-policy branch),
    so an arm can say whether its estimator or loss lowers the variance of its update.

    W(tau) = sum_t [1 - 2 pi_t(y_t) + sum_v pi_v^2] is the squared norm of the score's logit gradient summed over
    the response; A(tau) the sequence's mean token advantage. total_power = E[A^2 W] ~ E||g_tau||^2 (signal +
    noise), signal = ||g||^2 of the step (`policy/grad_norm`, before clipping), noise = (total_power - signal) /
    (N - 1), floored at 0, with N the rollouts of the batch. [our choice] E is over the rows `measure` forwards
    (the first completion of every group: a group's completions are exchangeable, so it is an unbiased sample
    of the batch mean) rather than over every row, which would cost a second forward of the whole batch.
    logp, sum_sq, adv, mask: (R, T) of those rows."""
    w = ((1.0 - 2.0 * np.exp(logp) + sum_sq) * mask).sum(axis=1)  # (R,)
    tokens = mask.sum(axis=1)
    a = np.divide((adv * mask).sum(axis=1), tokens, out=np.zeros(len(tokens)), where=tokens > 0)  # (R,)
    total = float((a**2 * np.clip(w, 0.0, None)).mean()) if len(a) else float("nan")
    signal = float(grad_norm) ** 2
    return {
        "variance_proxy/total_power": total,
        "variance_proxy/signal": signal,
        "variance_proxy/noise": max(0.0, (total - signal) / (rows - 1)) if rows > 1 else float("nan"),
        "variance_proxy/expected_a_squared": float((a**2).mean()) if len(a) else float("nan"),
        "variance_proxy/expected_w": float(w.mean()) if len(w) else float("nan"),
    }


def mechanism_metrics(acted: dict[str, float]) -> dict[str, float]:
    """`mechanism/<name>/acted` per mechanism that is on in this run (1.0: it changed something this step, 0.0:
    the run trained as its base this step): the estimator's own (`Estimator.mechanisms()`: AVSPO augmented a
    group, HA-DW's anchor moved, ...) and the sampler's (dynamic sampling dropped a group, overlong shaping
    penalised a rollout, the noisy verifier flipped a reward). The report's `mechanism_acted_frac` is the least
    of their means over the steps; under 5% the arm is marked inert."""
    return {f"mechanism/{name}/acted": float(value) for name, value in acted.items()}


def combine_metrics(parts: list[tuple[dict, float]]) -> dict[str, float]:
    """The metrics of one policy-loss call over all rows of a mini-batch from calls over pieces of them:
    `(metrics, tokens)` per piece. `loss/*` are sums over rows under the mini-batch's aggregation weights (added);
    the rest are token means (weighted by tokens)."""
    tokens = sum(n for _, n in parts)
    out: dict[str, float] = {}
    for metrics, n in parts:
        for key, value in metrics.items():
            share = 1.0 if key.startswith("loss/") else n / max(tokens, 1.0)
            out[key] = out.get(key, 0.0) + float(value) * share
    return out
