"""AVSPO (contract.md §4) and HA-DW (contract.md §5): worked examples, trigger/threshold dynamics, Phi table, anchor
updates."""

import math

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator


def binary_groups(g, counts):
    return np.array([[1.0] * c + [0.0] * (g - c) for c in counts])


# ---- AVSPO ---------------------------------------------------------------------------------------------------


def test_avspo_worked_example_www_k6_mean_0_8214_advantage_0_642():
    rewards = binary_groups(8, [8, 8, 3, 4, 5])  # acr = 0.4
    est = get_estimator("avspo", virtual="www", std="population", tau0=0.3)
    adv = est.advantages(rewards)
    assert est.diagnostics()["virtual_k"] == 6
    values = np.concatenate([np.ones(8), [1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6]])
    assert values.mean() == pytest.approx(0.8214, abs=1e-4)
    np.testing.assert_allclose(adv[:2], 0.642, atol=1e-3)  # spec quotes 3 digits (exact: 0.64253)
    assert np.ptp(adv[:2]) == 0.0  # one common advantage
    sample = get_estimator("avspo", virtual="www", tau0=0.3).advantages(rewards)
    np.testing.assert_allclose(sample[:2], 0.619, atol=1e-3)  # estimators-sources §4.2, sample std


def test_avspo_stratified_gives_common_negative_to_all_wrong_and_positive_to_all_correct():
    rewards = binary_groups(8, [0, 8, 0, 8, 2])  # acr = 0.8 > tau0
    est = get_estimator("avspo")
    adv = est.advantages(rewards)
    k = est.diagnostics()["virtual_k"]
    assert k == math.ceil(8 * math.sqrt(0.8)) and 1 <= k <= 8
    assert np.all(adv[[0, 2]] < 0) and np.all(adv[[1, 3]] > 0)
    assert np.ptp(adv[0]) == 0.0 and np.ptp(adv[1]) == 0.0


def test_avspo_www_gives_no_signal_to_all_wrong_groups():
    adv = get_estimator("avspo", virtual="www").advantages(binary_groups(8, [0, 0, 8, 3]))
    assert np.all(adv[:2] == 0.0) and np.all(adv[2] > 0)


def test_avspo_non_collapsed_groups_get_plain_grpo_advantages():
    rewards = binary_groups(6, [0, 0, 0, 2, 5])
    np.testing.assert_allclose(
        get_estimator("avspo").advantages(rewards)[3:], get_estimator("grpo").advantages(rewards)[3:], rtol=1e-12
    )


def tau_after(batches, **settings):
    est = get_estimator("avspo", **settings)
    for rewards in batches:
        est.advantages(rewards)
    return est.state_dict()["state"]["tau"], est.diagnostics()


LOW, HIGH = binary_groups(4, [0, 0, 0, 1]), binary_groups(4, [4, 4, 3, 3])  # acr 0.75 / 0.5


def test_avspo_tau_is_unchanged_on_the_first_call():
    assert tau_after([LOW])[0] == 0.5


def test_avspo_tau_moves_towards_acr_when_reward_improves_and_away_when_it_drops():
    up, _ = tau_after([LOW, HIGH], eta=0.1)  # dJ > 0, acr = 0.5: tau + 0.1 * (0.5 - 0.5)
    assert up == pytest.approx(0.5)
    up, _ = tau_after([binary_groups(4, [0, 1, 2, 3]), LOW], eta=0.1)  # dJ < 0, acr = 0.75
    assert up == pytest.approx(0.5 - 0.1 * (0.75 - 0.5))
    up, _ = tau_after([binary_groups(4, [0, 0, 0, 0]), LOW], eta=0.1)  # dJ > 0, acr = 0.75
    assert up == pytest.approx(0.5 + 0.1 * (0.75 - 0.5))


def test_avspo_tau_stays_when_reward_is_flat_and_is_clipped_to_bounds():
    assert tau_after([LOW, LOW], eta=0.5)[0] == 0.5
    assert tau_after([binary_groups(4, [0] * 4), LOW], eta=10.0, tau_max=0.6)[0] == 0.6
    assert tau_after([binary_groups(4, [0, 1, 2, 3]), LOW], eta=10.0, tau_min=0.3)[0] == 0.3


# ---- HA-DW -----------------------------------------------------------------------------------------------------


def test_hadw_phi_sign_table():
    lam, c0 = 1.3, 0.5
    rewards = binary_groups(4, [1, 3, 2])  # p = 0.25 (harder than C), 0.75 (easier), 0.5 (= C)
    base = get_estimator("grpo").advantages(rewards)
    phi = get_estimator("ha_dw", c0=c0, lambda_scale=lam).advantages(rewards) / base
    m = 0.25
    assert phi[0, 0] == pytest.approx(lam * math.exp(m))  # harder, correct: boost
    assert phi[0, -1] == pytest.approx(lam * math.exp(-m))  # harder, wrong: soften penalty
    assert phi[1, 0] == pytest.approx(lam * math.exp(-m))  # easier, correct: damp
    assert phi[1, -1] == pytest.approx(lam * math.exp(m))  # easier, wrong: sharpen penalty
    np.testing.assert_allclose(phi[2], lam)  # p = C: D = 0, Phi = lambda


def test_hadw_zero_advantage_and_degenerate_groups_keep_base_values():
    rewards = np.vstack([binary_groups(4, [0, 4]), [[0.2, 0.5, 0.8, 0.5]]])  # last group: A = 0 at r = mean
    base = get_estimator("w_reinforce").advantages(rewards)
    adv = get_estimator("ha_dw", base="w_reinforce", c0=0.9).advantages(rewards)
    np.testing.assert_array_equal(adv[:2], base[:2])
    grpo = get_estimator("ha_dw", c0=0.9).advantages(rewards)
    assert grpo[2, 1] == 0.0 and grpo[2, 3] == 0.0


def anchor_trace(batches, **settings):
    est = get_estimator("ha_dw", **settings)
    trace = []
    for rewards in batches:
        est.advantages(rewards)
        d = est.diagnostics()
        trace.append((d["anchor_prior"], d["anchor"], d["anchor_sigma"]))
    return trace


BATCHES = [binary_groups(4, c) for c in ([1, 2], [4, 3], [0, 1], [2, 2], [3, 4])]  # y = .375 .875 .125 .5 .875


def test_hadw_first_call_prior_is_c0_or_the_batch_accuracy():
    assert anchor_trace(BATCHES[:1])[0][0] == 0.375
    assert anchor_trace(BATCHES[:1], c0=0.7)[0][0] == 0.7


def test_hadw_eq10_soft_update_uses_sigma_1_until_two_anchors_then_their_population_std():
    eta = 0.2
    trace = anchor_trace(BATCHES[:3], eta=eta, c0=0.5, gain="anchor_std")
    assert trace[0][2] == 1.0 and trace[0][1] == pytest.approx(0.8 * 0.5 + 0.2 * 0.375)
    assert trace[1][2] == 1.0 and trace[1][0] == trace[0][1]
    assert trace[1][1] == pytest.approx(0.8 * trace[1][0] + 0.2 * 0.875)
    sigma = float(np.std([trace[0][1], trace[1][1]]))
    assert trace[2][2] == pytest.approx(sigma)
    eta_t = min(eta * sigma, 1.0)
    assert trace[2][1] == pytest.approx((1 - eta_t) * trace[1][1] + eta_t * 0.125)


def test_hadw_sigma_uses_only_the_last_m_anchors():
    trace = anchor_trace(BATCHES, m=2, eta=1.0, c0=0.0)
    posts = [t[1] for t in trace]
    assert trace[4][2] == pytest.approx(float(np.std(posts[2:4])))


def test_hadw_hard_update_is_the_mean_of_the_last_h_batch_accuracies():
    trace = anchor_trace(BATCHES, update="hard", h=3)
    ys = [b.mean() for b in BATCHES]
    assert [t[1] for t in trace] == pytest.approx([np.mean(ys[max(0, i - 2) : i + 1]) for i in range(5)])
    assert [t[0] for t in trace[1:]] == [t[1] for t in trace[:-1]]


def test_hadw_fixed_anchor_stays_at_c0_and_requires_c0():
    assert {t for trace in anchor_trace(BATCHES, anchor="fixed", c0=0.4) for t in trace[:2]} == {0.4}
    with pytest.raises(BenchctlError, match="c0"):
        get_estimator("ha_dw", anchor="fixed")
