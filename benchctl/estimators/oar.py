"""OAR: outcome-grounded token-level reshaping of a sequence advantage (contract.md §7).

The sequence-level advantage is the base advantage unchanged; the trainer supplies per-token importance
scores (gradient x input for `oar_g`, counterfactual perturbation for `oar_p`) and calls
`Estimator.token_advantages`, which applies `reshape_token_weights`.

Where there is nothing to reshape OAR is GRPO exactly: `benchctl train` / `matrix run` refuse it on a task whose
completions are the answer alone (`Task.shows_work` False, e.g. arith; `arith_steps` is the tiny-model testbed), and
each step logs `oar/reshaped_frac` (rows whose weights are not all 1) and `oar/no_span_frac` (rows without span).

Deviations from the released code (a fragment): [our choice] q=0.5, beta=0.5, floor=0.1 (not recoverable);
quantile = numpy's linear interpolation over the reasoning tokens; mass preservation (sum_to_L) always on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.estimators._common import hp, number
from benchctl.estimators._convert import to_bool, to_float64
from benchctl.estimators.registry import register_estimator


@dataclass(frozen=True)
class OarParams:
    q: float = hp(0.5, "quantile level of the threshold tau; in [0, 1] [our choice]")
    beta: float = hp(0.5, "boost of tokens above the threshold; >= 0 [our choice]")
    floor: float = hp(0.1, "minimum weight of tokens below the threshold; in [0, 1] [our choice]")

    def __post_init__(self) -> None:
        number("q", self.q, 0.0, 1.0)
        number("beta", self.beta, 0.0, None)
        number("floor", self.floor, 0.0, 1.0)


def _row_quantile(values: np.ndarray, lengths: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolation quantile of the first lengths[n] entries of each sorted row; (N, T) -> (N,)."""
    pos = q * np.maximum(lengths - 1, 0)  # (N,) fractional index
    lo = np.floor(pos).astype(np.intp)  # (N,)
    hi = np.minimum(lo + 1, np.maximum(lengths - 1, 0))  # (N,)
    rows = np.arange(values.shape[0])
    v_lo, v_hi = values[rows, lo], values[rows, hi]  # (N,)
    return v_lo + (pos - lo) * (v_hi - v_lo)


def reshape_weights(scores: np.ndarray, mask: np.ndarray, q: float, beta: float, floor: float) -> np.ndarray:
    """contract.md §7 weights of (N, T) float64 scores over the boolean (N, T) reasoning mask; outside the mask 1."""
    u = np.log1p(np.where(mask, scores, 0.0))  # (N, T)
    u_min = np.where(mask, u, np.inf).min(axis=1, initial=np.inf)[:, None]  # (N, 1)
    u_max = np.where(mask, u, -np.inf).max(axis=1, initial=-np.inf)[:, None]  # (N, 1)
    flat = ~(u_max > u_min)  # (N, 1): max = min (or no reasoning token) -> u_hat all ones
    u_hat = np.where(flat, 1.0, (u - u_min) / np.where(flat, 1.0, u_max - u_min))  # (N, T)
    lengths = mask.sum(axis=1)  # (N,) L per response
    ordered = np.sort(np.where(mask, u_hat, 2.0), axis=1)  # (N, T) reasoning values (<= 1) first
    tau = np.where(lengths > 0, _row_quantile(ordered, lengths, q), 1.0)[:, None]  # (N, 1)
    low = np.maximum(u_hat / (tau + 1e-8), floor)  # (N, T) noise suppression
    high = 1.0 + beta * (u_hat - tau) / (1.0 - tau + 1e-8)  # (N, T) signal boosting
    w = np.where(mask, np.where(u_hat < tau, low, high), 0.0)  # (N, T)
    total = w.sum(axis=1, keepdims=True)  # (N, 1)
    w = w * (lengths[:, None] / np.where(total > 0, total, 1.0))  # sum over the mask = L
    return np.where(mask, w, 1.0)


def check_scores(scores: np.ndarray, mask: np.ndarray) -> None:
    """Scores must be finite and >= 0 on the reasoning tokens; BenchctlError names the response."""
    bad = mask & ~(np.isfinite(scores) & (scores >= 0))  # (N, T)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise BenchctlError(f"importance scores of response {row} must be finite and >= 0 on reasoning tokens")


def token_weights(scores: np.ndarray, mask: np.ndarray, params: OarParams) -> np.ndarray:
    """Registry hook: validated contract.md §7 weights for the trainer; (N, T), (N, T) bool -> (N, T)."""
    check_scores(scores, mask)
    return reshape_weights(scores, mask, params.q, params.beta, params.floor)


def _identity(base_adv: np.ndarray):
    return base_adv, None, {}


# What OAR-G and OAR-P share as registered estimators; they differ in the importance scores they ask for.
OAR = {
    "kind": "modifier",
    "params": OarParams,
    "token_weights": token_weights,
    "acted": lambda m: m.get("reshaped_frac", 0.0) > 0,
    "mechanism": "token advantages were reshaped on some rows",
}


@register_estimator("oar_g", token_scores="gradient", **OAR)
def oar_g(rewards: np.ndarray, base_adv: np.ndarray, params: OarParams, state: None):
    """OAR-G: token weights from gradient x input importance of the answer log-likelihood.

    Reference: arXiv:2601.07408 (paper body not available, equation numbers unknown); code:
    Valsure/Outcome-Grounded-Advantage-Reshaping OAR-main.py (estimators-sources §6.2-6.3), contract.md §7.
    Formula: s_t = |<dphi/de_t, e_t>|; w = reshape(s) (mean 1 over reasoning tokens); A_t = A w_t
    Shapes: rewards (P, G), base_adv (P, G) -> advantages (P, G) = base_adv (token reshaping: token_advantages).
    Deviations: see the module docstring.
    """
    return _identity(base_adv)


@register_estimator("oar_p", token_scores="perturbation", **OAR)
def oar_p(rewards: np.ndarray, base_adv: np.ndarray, params: OarParams, state: None):
    """OAR-P: token weights from the drop of the answer log-likelihood when the token is replaced by pad.

    Reference: arXiv:2601.07408 (paper body not available, equation numbers unknown); code:
    Valsure/Outcome-Grounded-Advantage-Reshaping OAR-main.py (estimators-sources §6.1, §6.3), contract.md §7.
    Formula: s_t = max(0, phi - phi(x_t -> pad)); w = reshape(s) (mean 1 over reasoning tokens); A_t = A w_t
    Shapes: rewards (P, G), base_adv (P, G) -> advantages (P, G) = base_adv (token reshaping: token_advantages).
    Deviations: see the module docstring.
    """
    return _identity(base_adv)


def reshape_token_weights(scores, mask=None, *, lengths=None, q: float = 0.5, beta: float = 0.5, floor: float = 0.1):
    """contract.md §7 token weights, numpy or torch in -> same kind out; (N, T) scores -> (N, T) weights.

    The reasoning span is `mask` (N, T) bool, or the first `lengths[n]` tokens of each row, or every token.
    Within the span the weights sum to its length L; outside it they are 1.
    """
    params = OarParams(q=q, beta=beta, floor=floor)
    s, back = to_float64(scores, "scores")
    if s.ndim != 2:
        raise BenchctlError(f"scores must be 2-D (N, T); got shape {s.shape}")
    if mask is not None:
        span = to_bool(mask, "mask")
    elif lengths is not None:
        n_tokens = to_float64(lengths, "lengths")[0]
        if n_tokens.shape != (s.shape[0],):
            raise BenchctlError(f"lengths must be 1-D with {s.shape[0]} entries; got shape {n_tokens.shape}")
        span = np.arange(s.shape[1])[None, :] < n_tokens[:, None]  # (N, T)
    else:
        span = np.ones(s.shape, dtype=bool)
    if span.shape != s.shape:
        raise BenchctlError(f"mask/lengths must match scores {s.shape}; got {span.shape}")
    if s.size == 0:
        return back(np.ones_like(s))
    return back(token_weights(s, span, params))
