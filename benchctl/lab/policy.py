"""Behaviour-space softmax policy of A-GRAE Theorem 1 (arXiv:2602.05548 §3, App. B.3), vectorised over prompts.

Each prompt q has N behaviours with logits h_q (N,), policy pi_q = softmax(h_q) (Eq. 23); behaviour b is
correct or wrong (binary reward). One update step maximises the group objective
J = (1/G) sum_k A_k ln pi_{b_k} (Eq. 24 with GRPO's 1/G of Eq. 4 [our choice: keeps the step size
independent of G]) by gradient ascent on the logits:
    dJ/dh_j = (1/G) (sum_{k: b_k = j} A_k - C pi_j),   C = sum_k A_k            (Eq. 28/29)
so a behaviour never drawn in the group moves by -lr C pi_j / G: exactly nothing when C = 0.
The exact expected step (group-local stateless estimators) averages this over groups ~ pi^G:
    E[dJ/dh_j] = pi_j (a(r_j) - E[C]/G),   a(1) = E[A | correct], a(0) = E[A | wrong]
with a(.) and E[C] finite sums over the number of correct rollouts (q = correct mass of the prompt).
pass@k of the policy is exact: 1 - (1 - q)^k.
"""

from __future__ import annotations

import numpy as np

from benchctl.lab.theory import binomial_pmf


def softmax(h: np.ndarray) -> np.ndarray:
    """Row-wise softmax of logits (P, N)."""
    z = np.exp(h - h.max(axis=1, keepdims=True))  # (P, N)
    return z / z.sum(axis=1, keepdims=True)


def init_policy(
    rng: np.random.Generator, prompts: int, behaviours: int, correct: int, init_scale: float, init_gap: float
) -> tuple[np.ndarray, np.ndarray]:
    """Initial logits (P, N) and correct mask (P, N): the first `correct` behaviours of each prompt are
    correct and start unlikely, their logits lowered by a per-prompt difficulty d_q ~ Uniform(0, init_gap)."""
    h = init_scale * rng.standard_normal((prompts, behaviours))  # (P, N)
    gap = rng.uniform(0.0, init_gap, size=(prompts, 1))  # (P, 1)
    is_correct = np.zeros((prompts, behaviours), dtype=bool)  # (P, N)
    is_correct[:, :correct] = True
    return h - gap * is_correct, is_correct


def sample_groups(rng: np.random.Generator, pi: np.ndarray, G: int) -> np.ndarray:
    """Behaviour indices (P, G) drawn i.i.d. from each prompt's policy by inverting the CDF."""
    cdf = np.cumsum(pi, axis=1)  # (P, N)
    u = rng.random((pi.shape[0], G)) * cdf[:, -1:]  # (P, G)
    idx = (cdf[:, None, :] <= u[:, :, None]).sum(axis=2)  # (P, G)
    return np.minimum(idx, pi.shape[1] - 1)


def sampled_gradient(pi: np.ndarray, idx: np.ndarray, adv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 28 per prompt: ((sum of A over draws of j) - C pi_j) / G. Returns (grad (P, N), counts (P, N))."""
    P, N = pi.shape
    G = idx.shape[1]
    flat = (np.arange(P)[:, None] * N + idx).ravel()  # (P*G,) row-major cell ids
    per_behaviour = np.bincount(flat, weights=adv.ravel(), minlength=P * N).reshape(P, N)  # (P, N)
    counts = np.bincount(flat, minlength=P * N).reshape(P, N)  # (P, N)
    C = adv.sum(axis=1, keepdims=True)  # (P, 1)
    return (per_behaviour - C * pi) / G, counts


def expected_gradient(pi: np.ndarray, is_correct: np.ndarray, a_pos: np.ndarray, a_neg: np.ndarray) -> np.ndarray:
    """Exact E over groups ~ pi^G of Eq. 28 for a group-local stateless estimator.

    a_pos[c], a_neg[c] (G+1,): advantage of a correct / wrong rollout in a group with c correct.
    """
    G = len(a_pos) - 1
    q = (pi * is_correct).sum(axis=1, keepdims=True)  # (P, 1) correct mass
    others = binomial_pmf(np.arange(G)[None, :], G - 1, q)  # (P, G): c' correct among the G-1 others
    a1 = others @ np.nan_to_num(a_pos[1:])  # (P,) E[A | this rollout correct]
    a0 = others @ np.nan_to_num(a_neg[:-1])  # (P,) E[A | this rollout wrong]
    c = np.arange(G + 1)
    group_sum = c * np.nan_to_num(a_pos) + (G - c) * np.nan_to_num(a_neg)  # (G+1,) C of group c
    expected_c = binomial_pmf(c[None, :], G, q) @ group_sum  # (P,)
    a = np.where(is_correct, a1[:, None], a0[:, None])  # (P, N)
    return pi * (a - expected_c[:, None] / G)


def pass_at_k(pi: np.ndarray, is_correct: np.ndarray, k: int) -> np.ndarray:
    """Exact pass@k of each prompt's policy, 1 - (1 - q)^k (P,)."""
    q = np.clip((pi * is_correct).sum(axis=1), 0.0, 1.0)  # (P,)
    return 1.0 - (1.0 - q) ** k


def entropy(pi: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) of each prompt's policy (P,)."""
    return -(pi * np.log(np.clip(pi, 1e-300, None))).sum(axis=1)
