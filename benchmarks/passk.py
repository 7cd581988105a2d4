"""Benchmark 9b: the pass@k summary of 500 problems x 256 samples (k = 1, 2, 4, ..., 256) with a
1000-resample percentile-bootstrap CI, vs a naive per-problem `math.comb` loop.

Target: under 50 ms for the vectorised path.  Run: `.venv/bin/python benchmarks/passk.py`.
"""

from __future__ import annotations

import time
from math import comb

import numpy as np

from benchctl.metrics import bootstrap_ci, pass_at_k

PROBLEMS, N, RESAMPLES, REPEATS = 500, 256, 1000, 20
KS = np.array([1 << e for e in range(9)])  # 1..256


def vectorised(n: np.ndarray, c: np.ndarray):
    table = pass_at_k(n, c, KS)  # (P, K)
    low, high = bootstrap_ci(table, resamples=RESAMPLES, seed=0)  # (K,) each
    return table.mean(axis=0), low, high


def naive(n: np.ndarray, c: np.ndarray):
    """Per problem, per k: 1 - comb(n-c, k)/comb(n, k) with Python big integers, then the mean."""
    out = []
    for k in KS.tolist():
        vals = [1.0 - comb(int(nn - cc), k) / comb(int(nn), k) for nn, cc in zip(n, c)]
        out.append(sum(vals) / len(vals))
    return np.array(out)


def naive_summary(n: np.ndarray, c: np.ndarray):
    """The comb loop per problem and k, then a per-resample loop bootstrap (how it is usually written)."""
    table = np.array([[1.0 - comb(int(nn - cc), k) / comb(int(nn), k) for k in KS.tolist()] for nn, cc in zip(n, c)])
    rng = np.random.default_rng(0)
    means = np.array([table[rng.integers(0, len(table), len(table))].mean(axis=0) for _ in range(RESAMPLES)])
    return table.mean(axis=0), np.quantile(means, 0.025, axis=0), np.quantile(means, 0.975, axis=0)


def best_time(fn, *args, repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    n = np.full(PROBLEMS, N)
    c = rng.binomial(N, rng.beta(0.5, 0.5, size=PROBLEMS))  # U-shaped difficulty, like real benchmarks
    mean, low, high = vectorised(n, c)
    np.testing.assert_allclose(mean, naive(n, c), rtol=1e-9)
    t_fast = best_time(vectorised, n, c)
    t_passk = best_time(lambda: pass_at_k(n, c, KS))
    t_naive = best_time(naive, n, c, repeats=3)
    t_naive_summary = best_time(naive_summary, n, c, repeats=3)
    print(
        f"pass@k summary, {PROBLEMS} problems x {N} samples, k=1..256 ({len(KS)} ks), {RESAMPLES} bootstrap "
        f"resamples: {1e3 * t_fast:.1f} ms (target < 50 ms; pass@k table alone {1e3 * t_passk:.2f} ms)"
    )
    print(
        f"naive math.comb loop (point estimates only, no CI): {1e3 * t_naive:.1f} ms; "
        f"ratio naive / vectorised pass@k table = {t_naive / t_passk:.0f}x, "
        f"naive / full summary with CI = {t_naive / t_fast:.1f}x"
    )
    print(
        f"naive summary (comb loop + per-resample bootstrap loop): {1e3 * t_naive_summary:.1f} ms; "
        f"ratio naive / vectorised summary = {t_naive_summary / t_fast:.1f}x"
    )
    for k, m, lo, hi in zip(KS, mean, low, high):
        print(f"  pass@{k:<3d} = {m:.4f}  [{lo:.4f}, {hi:.4f}]")
    if t_fast > 0.05:
        raise SystemExit(f"FAIL: {1e3 * t_fast:.1f} ms > 50 ms")


if __name__ == "__main__":
    main()
