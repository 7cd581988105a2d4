"""pass@k, maj@k, mean@n and bootstrap CIs (spec estimators.md §8) against exact references."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchctl.errors import BenchctlError
from benchctl.metrics import bootstrap_ci, maj_at_k, majority_vote, mean_at_n, pass_at_k


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Reference: 1 - C(n-c, k) / C(n, k) in exact rational arithmetic (comb(m, k) = 0 when m < k)."""
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def _close(value: float, exact: Fraction) -> bool:
    return abs(Fraction(value) - exact) <= Fraction(1, 10**12) * max(exact, Fraction(1, 10**300))


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_exact_binomial_expression(nck):
    n, c, k = nck
    assert _close(pass_at_k(n, c, k), exact_pass_at_k(n, c, k))


@pytest.mark.parametrize("c", [0, 1, 2, 127, 128, 129, 254, 255, 256])
@pytest.mark.parametrize("k", [1, 2, 64, 128, 129, 255, 256])
def test_pass_at_k_n256_edge_cases_are_exact(c, k):
    assert _close(pass_at_k(256, c, k), exact_pass_at_k(256, c, k))


def test_pass_at_k_vectorised_matches_scalar_for_every_problem_and_k():
    rng = np.random.default_rng(3)
    n = rng.integers(256, 300, size=50)
    c = np.array([rng.integers(0, m + 1) for m in n])
    ks = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    table = pass_at_k(n, c, ks)
    assert table.shape == (50, 9)
    for p in range(50):
        for j, k in enumerate(ks):
            assert _close(table[p, j], exact_pass_at_k(int(n[p]), int(c[p]), int(k)))


def test_pass_at_k_is_one_when_fewer_wrong_than_k_and_zero_without_correct():
    assert pass_at_k(10, 7, 4) == 1.0  # n - c = 3 < 4
    assert pass_at_k(10, 0, 10) == 0.0 and not np.signbit(pass_at_k(10, 0, 10))


def test_pass_at_1_is_the_fraction_correct():
    n, c = np.array([4, 10, 256]), np.array([1, 3, 77])
    np.testing.assert_allclose(pass_at_k(n, c, 1), c / n, rtol=1e-13)
    np.testing.assert_allclose(mean_at_n(n, c), c / n)


def test_k_larger_than_n_is_an_error_naming_both():
    with pytest.raises(BenchctlError, match="k=9 > n=8"):
        pass_at_k(np.array([8, 16]), np.array([1, 1]), 9)
    with pytest.raises(BenchctlError):
        pass_at_k(4, 5, 1)  # c > n
    with pytest.raises(BenchctlError):
        pass_at_k(4, 1, 0)


def test_maj_at_k_tie_goes_to_the_first_occurring_answer():
    # "7" and "8" both appear twice in the first 4; "7" occurs first and is the gold -> 1.0
    answers, correct = ["7", "8", "8", "7"], [True, False, False, True]
    assert majority_vote(answers, correct, 4) == 1.0
    # swap the order: "8" first -> 0.0
    assert majority_vote(["8", "7", "7", "8"], [False, True, True, False], 4) == 0.0


def test_maj_at_k_uses_only_the_first_k_and_none_does_not_vote():
    answers = [None, None, "3", "5", "5", "5"]
    correct = [False, False, True, False, False, False]
    assert majority_vote(answers, correct, 2) == 0.0  # no voter
    assert majority_vote(answers, correct, 3) == 1.0  # only "3" votes
    assert majority_vote(answers, correct, 6) == 0.0  # "5" wins 3:1
    table = maj_at_k([answers, answers], [correct, correct], np.array([2, 3, 6]))
    np.testing.assert_array_equal(table, [[0, 1, 0], [0, 1, 0]])


def test_maj_at_k_needs_k_at_most_n():
    with pytest.raises(BenchctlError, match="k <= n"):
        maj_at_k([["1", "2"]], [[True, False]], 3)


def test_bootstrap_ci_contains_the_mean_and_is_seeded():
    rng = np.random.default_rng(0)
    values = rng.random((500, 3))
    low, high = bootstrap_ci(values, resamples=1000, seed=7)
    mean = values.mean(axis=0)
    assert np.all(low < mean) and np.all(mean < high)
    again = bootstrap_ci(values, resamples=1000, seed=7)
    np.testing.assert_array_equal(low, again[0])
    other = bootstrap_ci(values, resamples=1000, seed=8)
    assert not np.array_equal(low, other[0])


def test_bootstrap_ci_width_matches_the_normal_approximation():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 2, size=2000).astype(float)
    low, high = bootstrap_ci(values, resamples=2000, seed=0)
    se = values.std() / np.sqrt(len(values))
    assert abs((high - low) - 2 * 1.96 * se) < 0.15 * (2 * 1.96 * se)


def test_bootstrap_of_a_constant_column_is_a_point():
    low, high = bootstrap_ci(np.ones(20), resamples=50)
    assert low == high == 1.0
