"""Reward shaping of the trainer, as pure functions: DAPO's overlong reward shaping (arXiv:2503.14476 §3.4) and a
noisy verifier (the planted control arm of `reward_flip`).

The shaped reward is what the estimator sees; pass@k and `reward/mean` stay on the task's true correctness.
"""

from __future__ import annotations

import numpy as np


def overlong_penalty(lengths, max_tokens: int, buffer: int, factor: float = 1.0) -> np.ndarray:
    """DAPO's soft overlong punishment R_length (arXiv:2503.14476 §3.4, Eq. 13) times `factor`, per response.

    R_length(y) = 0                                  if |y| <= L_max - L_cache
                = ((L_max - L_cache) - |y|) / L_cache  if L_max - L_cache < |y| <= L_max
                = -1                                 if |y| > L_max
    with L_max = `max_tokens` and L_cache = `buffer` (0 = shaping off: all zeros). The three cases are one clip of
    the linear ramp to [-1, 0]. Added to the correctness reward (DAPO §3.4; verl's `overlong_buffer.penalty_factor`
    is `factor`). Shapes: lengths (...) ints -> (...) float64.
    """
    y = np.asarray(lengths, dtype=np.float64)
    if buffer <= 0:
        return np.zeros_like(y)
    ramp = ((max_tokens - buffer) - y) / buffer  # > 0 before the buffer, 0 at its start, -1 at L_max
    return factor * np.clip(ramp, -1.0, 0.0)


def noisy_verifier(correct: np.ndarray, flip: float, key: tuple[int, ...]) -> np.ndarray:
    """What the verifier says: `correct` (P, G), each entry flipped with probability `flip` (0: `correct` itself),
    from a generator seeded by `key` (seed, step, data position), so every arm of a seed flips the same draws."""
    if not flip:
        return correct
    flips = np.random.default_rng([*key, 0x5EED]).random(correct.shape) < flip
    return np.where(flips, 1.0 - correct, correct)
