"""Closed forms for binary-reward groups: degeneracy, conditional baseline bias, update magnitude.

Every function is vectorised: `p` and `G` broadcast against each other as numpy arrays.
Notation (spec `estimators.md` §5, HA-DW arXiv:2601.08521 §2 / App. D): a group has G rollouts with
rewards r_i ~ Bernoulli(p); c = number correct; p_hat = c / G; S = {1 <= c <= G-1} (non-degenerate).
"""

from __future__ import annotations

import math

import numpy as np

from benchctl.errors import BenchctlError


def _arrays(p, G) -> tuple[np.ndarray, np.ndarray]:
    """Validate and broadcast p in [0, 1] and integer G >= 1 (BenchctlError otherwise)."""
    p_arr = np.asarray(p, dtype=float)
    g_arr = np.asarray(G)
    if not np.all(np.isfinite(p_arr)) or np.any((p_arr < 0) | (p_arr > 1)):
        raise BenchctlError(f"p must lie in [0, 1]; got {p!r}")
    if not np.all(np.equal(np.mod(g_arr, 1), 0)) or np.any(g_arr < 1):
        raise BenchctlError(f"G must be an integer >= 1; got {G!r}")
    return np.broadcast_arrays(p_arr, g_arr.astype(float))


def _has_mixed_groups(p_arr: np.ndarray, g_arr: np.ndarray) -> np.ndarray:
    """P(S) > 0 exactly: 0 < p < 1 and G >= 2 (avoids dividing by a rounding residue)."""
    return (p_arr > 0) & (p_arr < 1) & (g_arr >= 2)


def all_wrong_probability(p, G) -> np.ndarray:
    """P(c = 0) = (1-p)^G: the group is degenerate with every rollout wrong."""
    p_arr, g_arr = _arrays(p, G)
    return (1.0 - p_arr) ** g_arr


def all_correct_probability(p, G) -> np.ndarray:
    """P(c = G) = p^G: the group is degenerate with every rollout correct."""
    p_arr, g_arr = _arrays(p, G)
    return p_arr**g_arr


def degenerate_probability(p, G) -> np.ndarray:
    """P(group degenerate) = (1-p)^G + p^G = 1 - P(S) (HA-DW arXiv:2601.08521 Eq. 32).

    This is also the expected advantage-collapse rate (ACR, docs/contract.md §4) of a batch of prompts that all have
    success probability p.
    """
    return all_wrong_probability(p, G) + all_correct_probability(p, G)


def conditional_mean_phat(p, G) -> np.ndarray:
    """E[p_hat | S] = (p - p^G) / (1 - (1-p)^G - p^G) (HA-DW Eq. 34); NaN where P(S) = 0."""
    p_arr, g_arr = _arrays(p, G)
    ok = _has_mixed_groups(p_arr, g_arr)
    p_s = np.where(ok, 1.0 - (1.0 - p_arr) ** g_arr - p_arr**g_arr, 1.0)
    return np.where(ok, (p_arr - p_arr**g_arr) / p_s, np.nan)


def conditional_bias(p, G) -> np.ndarray:
    """HA-DW Lemma 2 (arXiv:2601.08521 Eq. 35): A - E[A_hat | S] for A_hat = r - p_hat, A = r - p.

    `p(1-p)((1-p)^(G-1) - p^(G-1)) / (1 - (1-p)^G - p^G)`: positive for p < 0.5 (hard prompts are
    under-credited), negative for p > 0.5, zero at 0.5; NaN where P(S) = 0 (p in {0, 1} or G = 1).
    Check values (docs/contract.md §5), G = 8: p = 0.05 -> 0.0986, 0.10 -> 0.0756, 0.25 -> 0.0278, 0.75 -> -0.0278.
    """
    p_arr, g_arr = _arrays(p, G)
    ok = _has_mixed_groups(p_arr, g_arr)
    p_s = np.where(ok, 1.0 - (1.0 - p_arr) ** g_arr - p_arr**g_arr, 1.0)
    num = p_arr * (1.0 - p_arr) * ((1.0 - p_arr) ** (g_arr - 1) - p_arr ** (g_arr - 1))
    return np.where(ok, num / p_s, np.nan)


def binomial_pmf(c, n, p) -> np.ndarray:
    """P(Bin(n, p) = c), exact with integer binomial coefficients; vectorised over c, n and p."""
    c_arr, n_arr = np.broadcast_arrays(np.asarray(c), np.asarray(n))  # coefficients before broadcasting p
    comb = np.vectorize(lambda k, m: float(math.comb(int(m), int(k))) if 0 <= k <= m else 0.0, otypes=[float])
    p_arr = np.asarray(p, dtype=float)
    with np.errstate(invalid="ignore"):
        return comb(c_arr, n_arr) * p_arr**c_arr * (1.0 - p_arr) ** (n_arr - c_arr)


def grpo_total_magnitude(p_hat, G) -> np.ndarray:
    """A-GRAE Theorem 2 (arXiv:2602.05548 Eq. 10): sum_i |A_i| = 2 G sqrt(p_hat (1 - p_hat)).

    Holds for GRPO with the population std and binary rewards; p_hat is the group's empirical success rate.
    """
    p_arr, g_arr = _arrays(p_hat, G)
    return 2.0 * g_arr * np.sqrt(p_arr * (1.0 - p_arr))


def beta_moment_degenerate(a: float, b: float, G) -> tuple[np.ndarray, np.ndarray]:
    """E[(1-p)^G] and E[p^G] for p ~ Beta(a, b): B(a, b+G)/B(a, b) and B(a+G, b)/B(a, b).

    The expected all-wrong and all-correct fractions (expected ACR = their sum) of a batch whose prompts
    have success probabilities drawn from Beta(a, b); computed with log-gamma for stability.
    """
    if not (a > 0 and b > 0):
        raise BenchctlError(f"Beta parameters must be > 0; got a={a!r}, b={b!r}")
    g_arr = np.asarray(G, dtype=float)
    lbeta = np.vectorize(lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y))
    base = lbeta(a, b)
    wrong = np.exp(lbeta(a, b + g_arr) - base)
    correct = np.exp(lbeta(a + g_arr, b) - base)
    return wrong, correct
