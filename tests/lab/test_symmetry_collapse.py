"""`simulate symmetry` (A-GRAE Thm. 2, Table 1b, DGPO) and `simulate collapse` (degeneracy, ACR)."""

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.lab import CollapseConfig, SymmetryConfig, run_collapse, run_symmetry


def _by(result, estimator):
    return [r for r in result.rows if r["estimator"] == estimator and 0 < r["c"] < r["G"]]


def test_grpo_population_std_total_is_2G_sqrt_p_one_minus_p_with_equal_halves():
    result = run_symmetry(SymmetryConfig(estimators="grpo(std=population)", G=(4, 8, 16)))
    for row in _by(result, "grpo(std=population)"):
        G, p = row["G"], row["p_hat"]
        assert row["total"] == pytest.approx(2 * G * np.sqrt(p * (1 - p)), rel=1e-5)
        assert row["sum_abs_correct"] == pytest.approx(row["sum_abs_wrong"], rel=1e-12)
        assert abs(row["net"]) < 1e-9


def test_hard_and_easy_focused_totals_follow_table_1b_and_dgpo_is_constant_G():
    est = "hard_focused(std=population),easy_focused(std=population),dgpo"
    result = run_symmetry(SymmetryConfig(estimators=est, G=(8,)))
    for row in _by(result, "hard_focused(std=population)"):
        assert row["total"] == pytest.approx(8 * np.sqrt(1 - row["p_hat"]), rel=1e-5)
    for row in _by(result, "easy_focused(std=population)"):
        assert row["total"] == pytest.approx(8 * np.sqrt(row["p_hat"]), rel=1e-5)
    for row in _by(result, "dgpo"):
        assert row["total"] == pytest.approx(8.0, rel=1e-3)
        assert row["sum_abs_correct"] == pytest.approx(row["sum_abs_wrong"], rel=1e-9)


def test_dominant_controls_break_the_zero_sum_in_opposite_directions():
    result = run_symmetry(SymmetryConfig(estimators="pos_dominant,neg_dominant", G=(8,)))
    assert all(r["net"] > 0 for r in _by(result, "pos_dominant"))
    assert all(r["net"] < 0 for r in _by(result, "neg_dominant"))


def test_pooled_context_changes_batch_coupled_dgpo_but_not_grpo():
    single = run_symmetry(SymmetryConfig(estimators="grpo,dgpo", G=(8,)))
    pooled = run_symmetry(SymmetryConfig(estimators="grpo,dgpo", G=(8,), context="pooled"))
    assert [r["total"] for r in _by(single, "grpo")] == pytest.approx([r["total"] for r in _by(pooled, "grpo")])
    assert not np.allclose([r["total"] for r in _by(single, "dgpo")], [r["total"] for r in _by(pooled, "dgpo")])


def test_collapse_expected_acr_matches_simulation_for_points_and_beta_prior():
    config = CollapseConfig(G=(4, 8), p=(0.05, 0.5, 0.9), beta=(0.5, 1.5), method="mc", batch=128, batches=300)
    for row in run_collapse(config).rows:
        assert row["expected_acr"] == pytest.approx(row["p_all_wrong"] + row["p_all_correct"])
        assert abs(row["mc_acr"] - row["expected_acr"]) < 4 * row["mc_acr_se"] + 1e-12, row["dist"]
        sd_batch = row["mc_acr_se"] * np.sqrt(300)
        assert sd_batch == pytest.approx(row["acr_sd"], rel=0.25)


def test_collapse_oversampling_is_inverse_non_degenerate_probability():
    row = run_collapse(CollapseConfig(G=(8,), p=(0.1,))).rows[0]
    assert row["oversample"] == pytest.approx(1 / (1 - 0.9**8 - 0.1**8))
    assert np.isnan(row["mc_acr"])


@pytest.mark.parametrize("bad", [dict(p=(1.2,)), dict(G=(0,)), dict(beta=(0.0, 1.0)), dict(method="nope")])
def test_collapse_bad_config_raises_benchctl_error(bad):
    with pytest.raises(BenchctlError):
        run_collapse(CollapseConfig(**bad))
