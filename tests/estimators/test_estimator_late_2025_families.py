"""Closed-form properties of MaxRL, REINFORCE++-baseline, batch-std (LitePPO), GPG, OPO, the optimal token
baseline, KRPO and BNPO, checked on constructed batches."""

import math

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator
from benchctl.estimators.bnpo import beta_density, beta_parameters
from benchctl.estimators.optimal_baseline import opo_advantages, optimal_token_baseline_advantages


def binary_groups(g, counts):
    return np.array([[1.0] * c + [0.0] * (g - c) for c in counts])


def test_maxrl_binary_values_are_g_minus_k_over_k_for_successes_and_minus_one_for_failures():
    adv = get_estimator("maxrl", eps=0.0).advantages(binary_groups(8, [1, 2, 6]))
    for row, k in zip(adv, [1, 2, 6]):
        np.testing.assert_allclose(row[:k], (8 - k) / k, rtol=1e-12)
        np.testing.assert_allclose(row[k:], -1.0, rtol=1e-12)


def test_maxrl_gives_all_wrong_and_all_correct_groups_exactly_zero_and_rejects_negative_rewards():
    adv = get_estimator("maxrl").advantages(binary_groups(4, [0, 4]))
    assert np.all(adv == 0.0)
    with pytest.raises(BenchctlError, match=r"maxrl needs .*\[0, 1\]"):
        get_estimator("maxrl").advantages(np.array([[-1.0, 0.0, 1.0]]))


def test_reinforce_pp_baseline_has_zero_mean_and_unit_sample_variance_over_the_batch():
    rewards = np.random.default_rng(0).random((15, 6))
    adv = get_estimator("reinforce_pp_baseline", eps=0.0).advantages(rewards)
    assert abs(adv.mean()) < 1e-12 and adv.var(ddof=1) == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(adv.sum(axis=1), 0.0, atol=1e-12)  # the group baseline is kept


def test_batch_std_divides_every_group_by_one_batch_wide_std():
    rewards = np.random.default_rng(1).random((10, 5))
    adv = get_estimator("batch_std", eps=0.0).advantages(rewards)
    centred = rewards - rewards.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(adv, centred / rewards.std(ddof=1), rtol=1e-12)


def test_batch_std_of_an_all_equal_batch_is_zero_without_nan():
    assert np.all(get_estimator("batch_std", eps=0.0).advantages(np.full((3, 4), 0.5)) == 0.0)


def test_gpg_alpha_counts_nonzero_rewards_as_verl_and_valid_rollouts_as_the_paper_reading():
    rewards = binary_groups(4, [1, 0, 4, 2])  # B = 16, non-zero rewards 7, rollouts in mixed groups 8
    centred = rewards - rewards.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(get_estimator("gpg").advantages(rewards), 16 / 7 * centred, rtol=1e-12)
    np.testing.assert_allclose(get_estimator("gpg", alpha="valid").advantages(rewards), 2 * centred, rtol=1e-12)
    np.testing.assert_allclose(get_estimator("gpg", alpha="none", f_norm=4.0).advantages(rewards), centred / 4)


@pytest.mark.parametrize("name", ["opo", "optimal_token_baseline"])
def test_reward_only_optimal_baselines_equal_dr_grpo(name):
    rewards = np.random.default_rng(2).random((7, 5))
    np.testing.assert_array_equal(get_estimator(name).advantages(rewards), get_estimator("dr_grpo").advantages(rewards))


def test_opo_baseline_is_the_length_weighted_group_mean():
    rewards, lengths = np.array([[1.0, 0.0, 0.0]]), np.array([[3.0, 1.0, 2.0]])
    np.testing.assert_allclose(opo_advantages(rewards, lengths), rewards - 0.5)  # b = 3 / 6
    np.testing.assert_allclose(opo_advantages(rewards, np.ones((1, 3))), rewards - 1 / 3)


def test_optimal_token_baseline_with_equal_weights_is_the_mean_return_of_the_rollouts_still_running():
    rewards = np.array([[1.0, 0.0, 0.5]])  # one group, lengths 3, 1, 2
    mask = np.array([[[1, 1, 1], [1, 0, 0], [1, 1, 0]]], dtype=float)
    tokens = np.zeros((1, 3, 3))
    tokens[0, [0, 1, 2], [2, 0, 1]] = rewards[0]
    logp = np.full((1, 3, 3), math.log(0.5))  # w_t = 1 - 1 + 0.5 = 0.5 everywhere
    adv = optimal_token_baseline_advantages(tokens, mask, logp, np.full((1, 3, 3), 0.5), False, eps=0.0)
    # W_t is 0.5 t for every running rollout: B_1 = (1 + 0 + 0.5) / 3, B_2 = (2 * 1 + 2 * 0.5) / 4, B_3 = 1
    np.testing.assert_allclose(adv[0, 0], [1 - 0.5, 1 - 0.75, 0.0])
    np.testing.assert_allclose(adv[0, 1], [0 - 0.5, 0.0, 0.0])
    np.testing.assert_allclose(adv[0, 2], [0.5 - 0.5, 0.5 - 0.75, 0.0])


def test_optimal_token_baseline_zero_tail_gives_the_unique_longest_rollout_its_return_past_the_second():
    mask = np.array([[[1, 1, 1], [1, 0, 0]]], dtype=float)
    tokens = np.array([[[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]])
    stats = (np.full((1, 2, 3), math.log(0.5)), np.full((1, 2, 3), 0.5))
    assert optimal_token_baseline_advantages(tokens, mask, *stats, False)[0, 0, 2] == pytest.approx(0.0, abs=1e-8)
    assert optimal_token_baseline_advantages(tokens, mask, *stats, True)[0, 0, 2] == 1.0


def test_krpo_depends_on_rollout_order_and_rewards_an_all_correct_group():
    est = get_estimator("krpo")
    forward = est.advantages(np.array([[1.0, 0.0, 0.0, 1.0]]))
    backward = est.advantages(np.array([[1.0, 0.0, 0.0, 1.0]])[:, ::-1].copy())
    assert not np.allclose(forward, backward[:, ::-1])
    assert np.all(est.advantages(np.ones((1, 4))) > 0.0) and np.all(est.advantages(np.zeros((1, 4))) == 0.0)


def test_krpo_first_rollout_advantage_is_the_one_step_kalman_residual():
    adv = get_estimator("krpo", eps=0.0).advantages(np.array([[1.0, 0.0]]))
    prior = 1.0 + 1e-5
    gain = prior / (prior + 1e-2)
    assert adv[0, 0] == pytest.approx((1 - gain) / math.sqrt((1 - gain) * prior), rel=1e-12)


def test_bnpo_density_at_alpha_beta_three_halves_is_grpos_std_up_to_a_constant():
    p = np.linspace(0.05, 0.95, 19)
    np.testing.assert_allclose(beta_density(p, 1.5, 1.5), 8 / math.pi * np.sqrt(p * (1 - p)), rtol=1e-12)


def test_bnpo_without_spread_in_the_group_means_is_reinforce_with_the_group_baseline():
    rewards = binary_groups(4, [1, 1, 1])  # every p = 1/4: zero variance
    assert beta_parameters(rewards.mean(axis=1)) == (1.0, 1.0)
    np.testing.assert_allclose(get_estimator("bnpo").advantages(rewards), rewards - 0.25, rtol=1e-12)


def test_bnpo_moment_fit_and_weights_follow_the_released_formula():
    rewards = binary_groups(8, [1, 2, 4, 6, 7])
    p = rewards.mean(axis=1)
    m, v = p.mean(), p.var(ddof=1)
    alpha = max(1 + (m * (1 - m) / v - 1) * m / 3, 1)
    beta = max(1 + (m * (1 - m) / v - 1) * (1 - m) / 3, 1)
    assert beta_parameters(p) == pytest.approx((alpha, beta), rel=1e-12)
    density = (
        p ** (alpha - 1)
        * (1 - p) ** (beta - 1)
        / math.exp(math.lgamma(alpha) + math.lgamma(beta) - math.lgamma(alpha + beta))
    )
    adv = get_estimator("bnpo").advantages(rewards)
    np.testing.assert_allclose(adv, (rewards - p[:, None]) / density[:, None], rtol=1e-12)


@pytest.mark.parametrize(
    "name,settings,message",
    [
        ("maxrl", {"eps": -1.0}, r"valid: \[0.0, 1.0\]"),
        ("batch_std", {"std": "mad"}, "choose one of: sample, population"),
        ("gpg", {"alpha": "all"}, "choose one of: nonzero, valid, none"),
        ("gpg", {"f_norm": 0.0}, r"valid: \(0.0, inf\]"),
        ("krpo", {"meas_var": 0.0}, r"valid: \(0.0, inf\]"),
        ("bnpo", {"max_weight": 0.0}, r"valid: \(0.0, inf\]"),
    ],
)
def test_bad_hyperparameter_values_of_the_new_estimators_name_the_valid_range(name, settings, message):
    with pytest.raises(BenchctlError, match=message):
        get_estimator(name, **settings)


def test_bnpo_rejects_rewards_outside_the_unit_interval():
    with pytest.raises(BenchctlError, match=r"bnpo needs .*group 1"):
        get_estimator("bnpo").advantages(np.array([[0.0, 1.0], [2.0, 0.0]]))
