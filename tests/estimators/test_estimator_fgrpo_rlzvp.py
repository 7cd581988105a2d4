"""F-GRPO (focal scaling, arXiv:2602.06717) and RL-ZVP (entropy-guided zero-variance advantages, arXiv:2509.21880):
the formulas' properties, RL-ZVP's token advantages equal to the test vectors of the two ports found (NeMo-RL's
RLZVPAdvantageEstimator test, a TRL bridge's entropy_guided_advantages test), acted evidence, and bad input."""

import math

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator


def binary_batch(seed=0, groups=40, g=8):
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], size=groups)
    return (rng.random((groups, g)) < p[:, None]).astype(float)  # (P, G) with all-wrong and all-correct groups


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
def test_f_grpo_scales_grpos_absolute_mass_by_the_focal_factor(gamma):
    """GRPO (population std) has sum_i |A_i| = 2 G sqrt(p (1 - p)); F-GRPO multiplies it by (1 - p)^gamma."""
    r = binary_batch(1)
    adv = get_estimator("f_grpo", gamma=gamma, std="population").advantages(r)
    p, g = r.mean(axis=1), r.shape[1]
    live = (p > 0) & (p < 1)
    want = 2 * g * np.sqrt(p * (1 - p)) * (1 - p) ** gamma
    np.testing.assert_allclose(np.abs(adv).sum(axis=1)[live], want[live], rtol=1e-5)
    assert np.all(adv[~live] == 0.0)


def test_f_grpo_down_weights_easy_groups_more_than_hard_ones_and_keeps_signs():
    r = np.array([[1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 0]], dtype=float)  # p = 1/8 and 7/8
    base = get_estimator("grpo").advantages(r)
    adv = get_estimator("f_grpo").advantages(r)
    ratio = adv / base
    np.testing.assert_allclose(ratio[0], 7 / 8, rtol=1e-12)
    np.testing.assert_allclose(ratio[1], 1 / 8, rtol=1e-12)
    assert np.array_equal(np.sign(adv), np.sign(base))


def test_f_grpo_acts_on_non_degenerate_groups_and_gamma_zero_is_its_base():
    r = binary_batch(2)
    est = get_estimator("f_grpo")
    est.advantages(r)
    live = r.std(axis=1) > 0
    assert est.diagnostics()["focal_scaled_frac"] == pytest.approx(live.mean())
    assert est.mechanisms() == {"f_grpo": 1.0}
    zero = get_estimator("f_grpo", gamma=0.0)
    np.testing.assert_array_equal(zero.advantages(r), get_estimator("grpo").advantages(r))
    assert zero.mechanisms() == {"f_grpo": 0.0}


def test_rl_zvp_gives_zero_variance_groups_a_direction_and_others_grpo():
    r = binary_batch(3)
    adv = get_estimator("rl_zvp", alpha=0.1).advantages(r)
    grpo = get_estimator("grpo").advantages(r)
    p = r.mean(axis=1)
    assert np.all(adv[p == 1.0] == 0.1) and np.all(adv[p == 0.0] == -0.1)
    live = (p > 0) & (p < 1)
    np.testing.assert_array_equal(adv[live], grpo[live])


def test_rl_zvp_acted_is_the_share_of_zero_variance_groups_given_a_signal():
    est = get_estimator("rl_zvp")
    est.advantages(binary_batch(4))
    assert est.diagnostics()["zvp_acted_frac"] == 1.0 and est.mechanisms()["rl_zvp"] == 1.0
    est.advantages(np.array([[1.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]]))  # no all-correct / all-wrong group
    assert est.diagnostics()["zvp_acted_frac"] == 0.0 and est.mechanisms()["rl_zvp"] == 0.0


def test_rl_zvp_token_advantages_equal_the_trl_bridge_test_vector():
    """entropy_guided_advantages(entropy, mask, kinds=[1, -1], 0.1) == [[0.1, 0.3, 0], [-0.3, 0, 0]] (its test)."""
    est = get_estimator("rl_zvp", alpha=0.1)
    entropy = np.array([[1.0, 3.0, 99.0], [2.0, 5.0, 0.0]])
    mask = np.array([[1, 1, 0], [1, 1, 0]], dtype=bool)
    got = est.token_advantages(np.array([0.1, -0.1]), entropy, mask, np.array([True, True]))
    np.testing.assert_allclose(got * mask, [[0.1, 0.3, 0.0], [-0.3, 0.0, 0.0]], rtol=1e-12, atol=1e-15)


def test_rl_zvp_token_advantages_equal_the_nemo_rl_test_vector():
    """NeMo-RL's test: groups {0,1,0,1} (mixed), {1,1} (all correct), {0,0} (all wrong), alpha 0.1."""
    entropy = np.array([[0.2, 0.6], [0.3, 0.5], [0.4, 0.7], [0.2, 0.9], [0.2, 0.8], [0.4, 0.6], [0.2, 0.8], [0.5, 0.7]])
    est = get_estimator("rl_zvp", alpha=0.1)
    seq = np.concatenate([est.advantages(np.array([[0.0, 1.0, 0.0, 1.0]]))[0]]
                         + [est.advantages(np.array([[1.0, 1.0], [0.0, 0.0]])).reshape(-1)])  # fmt: skip
    degenerate = np.array([False] * 4 + [True] * 4)
    got = est.token_advantages(seq, entropy, np.ones(entropy.shape, dtype=bool), degenerate)
    assert np.all(got[0] < 0) and np.all(got[1] > 0)
    np.testing.assert_allclose(got[4:6], 0.1 * entropy[4:6], rtol=1e-12)
    np.testing.assert_allclose(got[6:], [[-0.06, 0.0], [-0.02, 0.0]], rtol=1e-12, atol=1e-15)


def test_rl_zvp_token_advantages_are_the_formula_on_random_rows_and_keep_torch():
    rng = np.random.default_rng(5)
    n, t = 9, 7
    h = rng.exponential(1.0, (n, t))
    mask = np.arange(t)[None, :] < rng.integers(1, t + 1, n)[:, None]
    seq = rng.choice([0.3, -0.3, 1.2, -0.7], size=n)
    deg = np.abs(seq) == 0.3
    est = get_estimator("rl_zvp", alpha=0.3)
    got = est.token_advantages(torch.tensor(seq), torch.tensor(h), torch.tensor(mask), deg)
    assert isinstance(got, torch.Tensor)
    for i in range(n):
        top = max(h[i][mask[i]])
        for j in range(t):
            if not mask[i, j] or not deg[i]:
                want = seq[i]
            else:
                want = 0.3 * h[i, j] if seq[i] > 0 else -0.3 * (top - h[i, j])
            assert math.isclose(float(got[i, j]), want, rel_tol=1e-12, abs_tol=1e-15)


def test_rl_zvp_logs_its_shaped_share_under_its_own_name_not_oars():
    from benchctl.trainers.metrics import estimator_metrics

    est = get_estimator("rl_zvp")
    est.advantages(np.array([[1.0, 1.0], [0.0, 1.0]]))
    h = np.array([[0.5, 2.0], [1.0, 3.0], [0.2, 0.1], [0.4, 0.4]])  # (N, T)
    est.token_advantages(np.array([0.1, 0.1, -0.5, 0.5]), h, np.ones((4, 2), dtype=bool), np.array([1, 1, 0, 0], bool))
    row = estimator_metrics(est.diagnostics())
    assert row["est/zvp_shaped_frac"] == 0.5  # the two rows of the all-correct group
    assert not any(key.startswith("oar/") or key.endswith("reshaped_frac") for key in row)


def test_rl_zvp_needs_entropies_and_degenerate_flags():
    est = get_estimator("rl_zvp")
    assert est.token_scores == "entropy"
    with pytest.raises(BenchctlError, match="entropy"):
        est.token_advantages(np.array([0.1]), None, np.ones((1, 2), dtype=bool), np.array([True]))
    with pytest.raises(BenchctlError, match="degenerate flag"):
        est.token_advantages(np.array([0.1]), np.ones((1, 2)), np.ones((1, 2), dtype=bool))
    with pytest.raises(BenchctlError, match="finite and >= 0"):
        est.token_advantages(np.array([0.1]), np.array([[-1.0, 0.0]]), np.ones((1, 2), dtype=bool), np.array([True]))


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("f_grpo", {"gamma": -1.0}, "gamma=-1.0"),
        ("rl_zvp", {"alpha": 0.0}, "alpha=0.0"),
        ("f_grpo", {"gamma": "x"}, "gamma"),
    ],
)
def test_out_of_range_hyperparameters_are_one_line_errors(name, params, message):
    with pytest.raises(BenchctlError, match=message) as info:
        get_estimator(name, **params)
    assert "\n" not in str(info.value)


def test_f_grpo_refuses_rewards_outside_the_unit_interval():
    with pytest.raises(BenchctlError, match="f_grpo needs rewards in"):
        get_estimator("f_grpo").advantages(np.array([[2.0, 0.0]]))


def test_cli_bad_value_exits_2_with_one_line():
    result = CliRunner().invoke(app, ["estimators", "show", "f_grpo(gamma=-1)"])
    assert result.exit_code == 2 and "Traceback" not in result.output and "gamma" in result.output
