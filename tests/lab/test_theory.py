"""Closed forms of the lab: HA-DW Lemma 2, degenerate-group probabilities, Beta moments, t quantiles."""

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.lab import all_correct_probability, all_wrong_probability, conditional_bias, degenerate_probability
from benchctl.lab.intervals import mean_ci, t_quantile
from benchctl.lab.theory import beta_moment_degenerate, binomial_pmf, conditional_mean_phat


def test_conditional_bias_reproduces_spec_check_values_at_G8():
    p = np.array([0.05, 0.10, 0.25, 0.5, 0.75])
    expected = [0.0986, 0.0756, 0.0278, 0.0, -0.0278]
    np.testing.assert_allclose(conditional_bias(p, 8), expected, atol=5e-5)


def test_conditional_bias_is_vectorised_over_p_and_G_with_broadcasting():
    p = np.array([0.1, 0.3, 0.7])
    G = np.array([[2], [4], [16]])
    out = conditional_bias(p, G)
    assert out.shape == (3, 3)
    for i, g in enumerate([2, 4, 16]):
        for j, pj in enumerate(p):
            assert out[i, j] == pytest.approx(float(conditional_bias(pj, g)), rel=1e-12)


def test_conditional_bias_equals_conditional_mean_of_phat_minus_p_and_is_antisymmetric():
    p = np.linspace(0.01, 0.99, 41)
    for G in (2, 5, 8, 32):
        bias = conditional_bias(p, G)
        np.testing.assert_allclose(bias, conditional_mean_phat(p, G) - p, atol=1e-12)
        np.testing.assert_allclose(bias, -conditional_bias(1 - p, G), atol=1e-12)
        assert np.all(bias[p < 0.5] > 0) and np.all(bias[p > 0.5] < 0)


def test_conditional_bias_matches_brute_force_sum_over_correct_counts():
    G, p = 8, 0.2
    c = np.arange(1, G)
    w = binomial_pmf(c, G, p)
    assert float(conditional_bias(p, G)) == pytest.approx((w * c / G).sum() / w.sum() - p, rel=1e-12)


def test_conditional_bias_is_nan_where_no_group_is_non_degenerate():
    assert np.isnan(conditional_bias(0.0, 8)) and np.isnan(conditional_bias(1.0, 8))
    assert np.isnan(conditional_bias(0.3, 1))


def test_degenerate_probability_matches_simulated_groups():
    rng = np.random.default_rng(0)
    for p, G in [(0.05, 8), (0.5, 4), (0.9, 16)]:
        c = rng.binomial(G, p, size=200_000)
        wrong, right = np.mean(c == 0), np.mean(c == G)
        se = np.sqrt(0.25 / 200_000)
        assert abs(wrong - all_wrong_probability(p, G)) < 5 * se
        assert abs(right - all_correct_probability(p, G)) < 5 * se
        assert degenerate_probability(p, G) == pytest.approx(
            all_wrong_probability(p, G) + all_correct_probability(p, G)
        )


def test_beta_moments_match_monte_carlo_over_prompt_difficulties():
    rng = np.random.default_rng(1)
    a, b, G = 0.7, 2.0, 8
    p = rng.beta(a, b, size=400_000)
    wrong, right = beta_moment_degenerate(a, b, G)
    assert float(wrong) == pytest.approx(np.mean((1 - p) ** G), abs=3e-3)
    assert float(right) == pytest.approx(np.mean(p**G), abs=3e-3)


def test_binomial_pmf_sums_to_one_and_rejects_nothing_valid():
    assert binomial_pmf(np.arange(11), 10, 0.37).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("p, G", [(1.5, 8), (-0.1, 8), (0.5, 0), (0.5, 2.5)])
def test_bad_p_or_G_raise_benchctl_error(p, G):
    with pytest.raises(BenchctlError):
        conditional_bias(p, G)


def test_t_quantiles_match_tables_and_ci_uses_them():
    for df, value in [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045)]:
        assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert float(mean) == 2.0 and float(half) == pytest.approx(4.303 * 1.0 / np.sqrt(3), abs=1e-3)
