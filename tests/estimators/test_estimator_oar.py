"""OAR token reshaping (contract.md §7): mass preservation, floor, flat scores, reference equality, token advantages."""

import numpy as np
import pytest
import torch
from estimator_reference import ref_token_weights

from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator, reshape_token_weights


def random_scores(n=6, t=11, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.exponential(1.0, size=(n, t))  # (N, T)
    lengths = rng.integers(1, t + 1, size=n)  # (N,)
    return scores, lengths


@pytest.mark.parametrize("q,beta,floor", [(0.5, 0.5, 0.1), (0.2, 2.0, 0.3), (0.9, 0.0, 0.0), (0.0, 1.0, 0.1)])
def test_reshaping_matches_per_response_reference(q, beta, floor):
    scores, lengths = random_scores()
    w = reshape_token_weights(scores, lengths=lengths, q=q, beta=beta, floor=floor)
    for row, n in enumerate(lengths):
        np.testing.assert_allclose(w[row, :n], ref_token_weights(list(scores[row]), n, q, beta, floor), rtol=1e-10)
        assert np.all(w[row, n:] == 1.0)


def test_reshaping_preserves_mass_over_the_reasoning_span():
    scores, lengths = random_scores(seed=3)
    w = reshape_token_weights(scores, lengths=lengths)
    mask = np.arange(scores.shape[1])[None, :] < lengths[:, None]
    np.testing.assert_allclose((w * mask).sum(axis=1), lengths, rtol=1e-12)


def test_hand_computed_weights_with_floor_and_boost():
    # u = log(1 + s) = [0, 0, 0, 1, 2, 2] -> u_hat = [0, 0, 0, .5, 1, 1]; tau = quantile(u_hat, .5) = .25
    scores = np.expm1(np.array([[0.0, 0.0, 0.0, 1.0, 2.0, 2.0]]))
    raw = np.array([0.3, 0.3, 0.3, 1 + 0.5 * 0.25 / 0.75, 1.5, 1.5])  # floor 0.3 below tau, boost above
    w = reshape_token_weights(scores, q=0.5, beta=0.5, floor=0.3)
    np.testing.assert_allclose(w[0], raw * 6 / raw.sum(), rtol=1e-7)


def test_tokens_below_threshold_scale_with_u_hat_over_tau_above_the_floor():
    # u_hat = [0, .2, .4, .6, .8, 1]; tau = .5; the .4 token gets .4/.5 = .8 (> floor), the 0 token the floor
    scores = np.expm1(np.linspace(0.0, 1.0, 6)[None, :])
    w = reshape_token_weights(scores, q=0.5, beta=0.0, floor=0.1)
    assert w[0, 2] / w[0, 5] == pytest.approx(0.8, rel=1e-6) and w[0, 0] / w[0, 5] == pytest.approx(0.1, rel=1e-6)


def test_all_equal_scores_give_weight_one():
    w = reshape_token_weights(np.full((3, 5), 0.7), lengths=np.array([5, 2, 0]))
    np.testing.assert_array_equal(w, np.ones((3, 5)))


def test_reshaping_rejects_negative_or_nan_scores_on_reasoning_tokens_only():
    scores = np.array([[0.1, -1.0, np.nan]])
    with pytest.raises(BenchctlError, match="response 0"):
        reshape_token_weights(scores)
    assert reshape_token_weights(scores, lengths=np.array([1]))[0, 0] == 1.0


def test_reshaping_rejects_out_of_range_hyperparameters():
    with pytest.raises(BenchctlError, match=r"q=1\.5 is out of range; valid: \[0\.0, 1\.0\]"):
        reshape_token_weights(np.ones((1, 3)), q=1.5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reshaping_torch_matches_numpy_and_keeps_dtype(dtype):
    scores, lengths = random_scores(seed=5)
    expected = reshape_token_weights(
        scores.astype(np.float32 if dtype == torch.float32 else np.float64), lengths=lengths
    )
    got = reshape_token_weights(torch.tensor(scores, dtype=dtype), lengths=torch.tensor(lengths))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), expected)


def test_oar_sequence_advantage_is_the_base_advantage_and_token_advantage_scales_it():
    rewards = np.array([[1.0, 0.0, 1.0, 0.0]])
    est = get_estimator("oar_g", base="dr_grpo")
    seq = est.advantages(rewards)
    np.testing.assert_array_equal(seq, get_estimator("dr_grpo").advantages(rewards))
    scores, lengths = random_scores(n=4, t=7, seed=1)
    mask = np.arange(7)[None, :] < lengths[:, None]
    tokens = est.token_advantages(seq[0], scores, mask)
    np.testing.assert_allclose(tokens, seq[0][:, None] * reshape_token_weights(scores, mask), rtol=1e-12)
    assert est.token_scores == "gradient" and get_estimator("oar_p").token_scores == "perturbation"


def test_token_advantages_broadcast_for_sequence_level_estimators_and_need_scores_for_oar():
    est = get_estimator("grpo")
    assert est.token_scores is None
    tokens = est.token_advantages(np.array([0.5, -1.0]), None, np.ones((2, 3), dtype=bool))
    np.testing.assert_array_equal(tokens, [[0.5] * 3, [-1.0] * 3])
    with pytest.raises(BenchctlError, match="importance scores"):
        get_estimator("oar_p").token_advantages(np.zeros(2), None, np.ones((2, 3)))


def test_token_reshaping_works_under_a_stacked_modifier():
    est = get_estimator("ha_dw", base="oar_g")
    assert est.token_scores == "gradient"
    w = est.token_advantages(np.ones(1), np.array([[0.0, 1.0, 4.0]]), np.ones((1, 3)))
    np.testing.assert_allclose(w, reshape_token_weights(np.array([[0.0, 1.0, 4.0]])))


def test_reshaped_and_no_span_fractions_are_this_steps_diagnostics_under_oar():
    from benchctl.trainers.metrics import estimator_metrics

    est = get_estimator("oar_g")
    est.advantages(np.array([[1.0, 0.0, 1.0, 0.0]]))
    scores = np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 0.0], [5.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # (N, T)
    mask = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0], [0, 0, 0]], dtype=bool)  # row 1 flat, rows 2-3 no span
    est.token_advantages(np.ones(4), scores, mask)
    row = estimator_metrics(est.diagnostics())
    assert row["oar/reshaped_frac"] == 0.25 and row["oar/no_span_frac"] == 0.5  # only row 0's weights move
    assert "est/reshaped_frac" not in row and "est/acr" in row
    est.advantages(np.array([[1.0, 0.0]]))  # a new step forgets the last step's token diagnostics
    assert "reshaped_frac" not in est.diagnostics()
