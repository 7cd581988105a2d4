"""Closed-form properties of the estimators (contract.md §2-3 and estimators-sources), checked on constructed
batches."""

import itertools
import math

import numpy as np
import pytest

from benchctl.estimators import get_estimator


def binary_groups(g, counts):
    """(len(counts), g) binary rewards with counts[q] correct rollouts in group q (correct ones first)."""
    return np.array([[1.0] * c + [0.0] * (g - c) for c in counts])


G = 8
MIXED = binary_groups(G, range(1, G))  # p = 1/8 .. 7/8
P_MIXED = np.arange(1, G) / G


def test_grpo_population_std_total_magnitude_is_2g_sqrt_pq():
    adv = get_estimator("grpo", std="population").advantages(MIXED)
    np.testing.assert_allclose(np.abs(adv).sum(axis=1), 2 * G * np.sqrt(P_MIXED * (1 - P_MIXED)), rtol=1e-5)


def test_grpo_sample_std_is_population_advantage_scaled_by_bessel():
    pop = get_estimator("grpo", std="population", eps=0.0).advantages(MIXED)
    smp = get_estimator("grpo", eps=0.0).advantages(MIXED)
    np.testing.assert_allclose(smp, pop * math.sqrt((G - 1) / G), rtol=1e-12)


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "dgpo"])
def test_mean_baseline_advantages_sum_to_zero_per_group(name):
    rewards = np.random.default_rng(0).random((30, 6))
    np.testing.assert_allclose(get_estimator(name).advantages(rewards).sum(axis=1), 0.0, atol=1e-9)


def test_drgrpo_is_grpo_without_std():
    rewards = np.random.default_rng(1).random((10, 5))
    grpo = get_estimator("grpo", eps=0.0).advantages(rewards)
    std = rewards.std(axis=1, ddof=1, keepdims=True)
    np.testing.assert_allclose(get_estimator("dr_grpo").advantages(rewards), grpo * std, rtol=1e-12)


def test_rloo_is_reward_minus_leave_one_out_mean_and_single_rollout_keeps_reward():
    rewards = np.array([[1.0, 0.0, 0.0, 1.0, 1.0]])
    loo = np.array([[1 - 2 / 4, 0 - 3 / 4, 0 - 3 / 4, 1 - 2 / 4, 1 - 2 / 4]])
    np.testing.assert_allclose(get_estimator("rloo").advantages(rewards), loo, rtol=1e-12)
    single = np.array([[0.3], [1.0]])
    np.testing.assert_array_equal(get_estimator("rloo").advantages(single), single)


@pytest.mark.parametrize(
    "name,expected", [("hard_focused", lambda p: G * np.sqrt(1 - p)), ("easy_focused", lambda p: G * np.sqrt(p))]
)
def test_focus_controls_total_magnitude_with_population_std(name, expected):
    adv = get_estimator(name, std="population").advantages(MIXED)
    np.testing.assert_allclose(np.abs(adv).sum(axis=1), expected(P_MIXED), rtol=1e-5)


@pytest.mark.parametrize("weighting", [True, False])
def test_dgpo_total_magnitude_is_g_times_question_weight(weighting):
    rewards = np.vstack([MIXED, binary_groups(G, [0, G])])  # two degenerate groups at the end
    adv = get_estimator("dgpo", question_weighting=weighting).advantages(rewards)
    live_p = P_MIXED
    w = len(live_p) * np.exp(-live_p / 2.0) / np.exp(-live_p / 2.0).sum() if weighting else np.ones(len(live_p))
    np.testing.assert_allclose(np.abs(adv[:-2]).sum(axis=1), G * w, rtol=1e-4)
    assert np.all(adv[-2:] == 0.0)


def test_dgpo_question_weights_favour_harder_questions_and_average_one():
    adv = get_estimator("dgpo").advantages(MIXED)
    weights = np.abs(adv).sum(axis=1) / G
    assert np.all(np.diff(weights) < 0) and weights.mean() == pytest.approx(1.0, rel=1e-4)


def test_dgpo_binary_values_are_one_over_2p_and_minus_one_over_2q():
    adv = get_estimator("dgpo", question_weighting=False).advantages(binary_groups(8, [2]))  # p = 0.25
    assert adv[0, 0] == pytest.approx(2.0, rel=1e-4) and adv[0, -1] == pytest.approx(-2 / 3, rel=1e-4)


def test_ngrpo_matches_published_values():
    adv = get_estimator("ngrpo").advantages(binary_groups(8, [0, 3, 8]))
    np.testing.assert_allclose(adv[0], -1 / 3, rtol=1e-5)  # all wrong, G = 8
    assert adv[1, 0] == pytest.approx(1.054, abs=1e-3) and adv[1, -1] == pytest.approx(-0.843, abs=1e-3)
    assert np.all(adv[2] == 0.0)  # all correct stays degenerate with the virtual 1.0


def test_w_reinforce_gives_lambda_to_correct_and_minus_one_to_wrong_even_in_degenerate_groups():
    adv = get_estimator("w_reinforce", lam=0.25).advantages(binary_groups(4, [0, 2, 4]))
    np.testing.assert_array_equal(adv, np.where(binary_groups(4, [0, 2, 4]) == 1.0, 0.25, -1.0))


def passk_by_enumeration(rewards_row, k, eps):
    """Average normalised pass@k reward of the k-subsets containing each rollout (direct combinatorics)."""
    n = len(rewards_row)
    subsets = list(itertools.combinations(range(n), k))
    reward = {s: float(any(rewards_row[i] == 1 for i in s)) for s in subsets}
    rho = sum(reward.values()) / len(subsets)
    sigma = math.sqrt(sum((v - rho) ** 2 for v in reward.values()) / len(subsets))
    return [
        sum((reward[s] - rho) / (sigma + eps) for s in subsets if i in s) / math.comb(n - 1, k - 1) for i in range(n)
    ]


@pytest.mark.parametrize("n,k", [(8, 4), (6, 2), (5, 5), (7, 1)])
def test_passk_advantages_equal_direct_subset_enumeration(n, k):
    rewards = binary_groups(n, range(1, n))
    adv = get_estimator("passk", k=k).advantages(rewards)
    for row, got in zip(rewards, adv):
        np.testing.assert_allclose(got, passk_by_enumeration(row, k, 1e-6), rtol=1e-9, atol=1e-12)


def test_passk_published_example_n8_k4_c2():
    adv = get_estimator("passk").advantages(binary_groups(8, [2]))
    assert adv[0, 0] == pytest.approx(0.522, abs=1e-3) and adv[0, -1] == pytest.approx(-0.174, abs=1e-3)


def test_grpo_lead_weights_positive_by_w_p_and_negative_by_w_1_minus_p():
    def w(x):
        return 0.4 + 1.1 / (1 + math.exp(10 * (x - 0.75)))

    base = get_estimator("grpo").advantages(MIXED)
    ratio = get_estimator("grpo_lead").advantages(MIXED) / base
    for q, p in enumerate(P_MIXED):
        np.testing.assert_allclose(ratio[q][base[q] > 0], w(p), rtol=1e-12)
        np.testing.assert_allclose(ratio[q][base[q] < 0], w(1 - p), rtol=1e-12)


@pytest.mark.parametrize("name,beta_pos", [("pos_dominant", 10.0), ("neg_dominant", 0.1)])
def test_dominance_controls_rescale_only_positive_advantages(name, beta_pos):
    base = get_estimator("grpo").advantages(MIXED)
    adv = get_estimator(name).advantages(MIXED)
    np.testing.assert_allclose(adv[base > 0], beta_pos * base[base > 0], rtol=1e-12)
    np.testing.assert_array_equal(adv[base < 0], base[base < 0])
    assert np.all(adv.sum(axis=1) > 0) if beta_pos > 1 else np.all(adv.sum(axis=1) < 0)


def shift_factor(omega, p):
    return omega / (2 * np.sqrt(p)) + (1 - omega) / (2 * np.sqrt(1 - p))


def test_agrae_shift_rescales_each_group_by_eq12_factor_of_batch_mean():
    rewards = binary_groups(8, [2, 6, 7])  # omega = 15/24
    omega = rewards.mean()
    base = get_estimator("grpo").advantages(rewards)
    adv = get_estimator("a_grae", suppress=False).advantages(rewards)
    expected = np.broadcast_to(shift_factor(omega, np.array([2, 6, 7]) / 8)[:, None], adv.shape)
    np.testing.assert_allclose(adv / base, expected, rtol=1e-12)


def test_agrae_shift_moves_attention_to_hard_groups_as_proficiency_grows():
    hard, easy = binary_groups(8, [2]), binary_groups(8, [6])
    low = np.vstack([hard, easy, binary_groups(8, [0] * 6)])  # omega low
    high = np.vstack([hard, easy, binary_groups(8, [8] * 6)])  # omega high
    ratios = []
    for batch in (low, high):
        adv = np.abs(get_estimator("a_grae", suppress=False).advantages(batch))
        ratios.append(adv[0].sum() / adv[1].sum())  # hard-group mass / easy-group mass
    assert ratios[1] > 1.0 > ratios[0]


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.25])
def test_agrae_suppression_damps_only_positive_advantages_by_min_1_omega_over_alpha(alpha):
    rewards = binary_groups(8, [1, 3, 3, 0])  # omega = 7/32
    omega = rewards.mean()
    shifted = get_estimator("a_grae", suppress=False).advantages(rewards)
    adv = get_estimator("a_grae", alpha=alpha).advantages(rewards)
    np.testing.assert_allclose(adv[shifted > 0], shifted[shifted > 0] * min(1.0, omega / alpha), rtol=1e-12)
    np.testing.assert_array_equal(adv[shifted <= 0], shifted[shifted <= 0])


@pytest.mark.parametrize(
    "name",
    [
        "grpo",
        "dr_grpo",
        "rloo",
        "dgpo",
        "passk",
        "ha_dw",
        "a_grae",
        "pos_dominant",
        "neg_dominant",
        "hard_focused",
        "easy_focused",
        "grpo_lead",
    ],
)
def test_identical_rewards_give_exactly_zero_advantage(name):
    rewards = np.vstack([binary_groups(4, [0, 4, 2]), np.full((1, 4), 1.0)])
    adv = get_estimator(name).advantages(rewards)
    assert np.all(adv[[0, 1, 3]] == 0.0) and np.all(np.isfinite(adv))


def test_avspo_leaves_collapsed_groups_at_zero_while_acr_is_not_above_tau():
    rewards = binary_groups(4, [0, 4, 2, 1])  # acr = 0.5 = tau0: no augmentation (strict >)
    adv = get_estimator("avspo").advantages(rewards)
    assert np.all(adv[:2] == 0.0) and np.all(adv[2:] != 0.0)


def test_diagnostics_are_empty_before_the_first_step():
    assert get_estimator("ha_dw").diagnostics() == {}


def test_acr_diagnostics_split_all_wrong_and_all_correct():
    est = get_estimator("grpo")
    est.advantages(binary_groups(4, [0, 0, 4, 1, 2]))
    diag = est.diagnostics()
    assert (diag["acr"], diag["acr_all_wrong"], diag["acr_all_correct"]) == (0.6, 0.4, 0.2)
