"""`simulate bias`: exact finite sums agree with HA-DW Lemma 2 and with Monte Carlo within a few SE."""

from dataclasses import dataclass

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.estimators import register_estimator
from benchctl.estimators.registry import unregister_estimator
from benchctl.lab import BiasConfig, conditional_bias, run_bias
from benchctl.lab.specs import parse_estimators, probe

P_GRID = (0.05, 0.1, 0.25, 0.5, 0.75)


def _rows(result, estimator):
    return [r for r in result.rows if r["estimator"] == estimator]


def test_dr_grpo_exact_path_bias_equals_lemma2_closed_form():
    result = run_bias(BiasConfig(estimators="dr_grpo", G=(2, 8, 16), p=P_GRID))
    for row in result.rows:
        assert row["method"] == "exact"
        assert row["adv_any"] == pytest.approx(0.0, abs=1e-12)
        assert row["bias_any"] == pytest.approx(float(conditional_bias(row["p"], row["G"])), abs=1e-12)
        assert row["lemma2"] == pytest.approx(row["bias_any"], abs=1e-12)


def test_dr_grpo_conditional_advantages_match_direct_conditioning_on_the_rollout():
    # given r_i = 1 and S, the other G-1 rollouts hold c' ~ Bin(G-1, p) correct, c' <= G-2
    G, p = 8, 0.25
    from benchctl.lab.theory import binomial_pmf

    c_other = np.arange(G - 1)
    w = binomial_pmf(c_other, G - 1, p)
    expected_correct = (w * (1 - (c_other + 1) / G)).sum() / w.sum()
    row = run_bias(BiasConfig(estimators="dr_grpo", G=(G,), p=(p,))).rows[0]
    assert row["adv_correct"] == pytest.approx(expected_correct, abs=1e-12)


@pytest.mark.parametrize("estimator", ["dr_grpo", "grpo"])
def test_exact_path_agrees_with_monte_carlo_within_four_standard_errors(estimator):
    exact = run_bias(BiasConfig(estimators=estimator, G=(8,), p=P_GRID))
    mc = run_bias(BiasConfig(estimators=estimator, G=(8,), p=P_GRID, method="mc", groups=6000, seed=3))
    for e, m in zip(exact.rows, mc.rows):
        assert m["method"] == "mc"
        for key in ("correct", "wrong", "any"):
            se = m[f"adv_{key}_se"]
            assert 0 <= se < 0.1 and (se > 0 or key == "any")  # zero-sum: E[A|S] is exactly 0
            assert abs(e[f"adv_{key}"] - m[f"adv_{key}"]) < 4 * se + 1e-12, (key, e["p"])


def test_batch_coupled_and_stateful_estimators_fall_back_to_monte_carlo_and_say_so():
    result = run_bias(BiasConfig(estimators="dgpo,ha_dw", G=(8,), p=(0.25,), groups=2000))
    assert {r["method"] for r in result.rows} == {"mc"}
    assert probe(parse_estimators("ha_dw")[0], 8).stateful
    assert not probe(parse_estimators("dgpo")[0], 8).group_local
    assert any("ha_dw" in n and "stateful" in n and "fresh estimator per batch" in n for n in result.notes)
    assert all(np.isfinite(r["adv_correct_se"]) for r in result.rows)


def test_carried_state_differs_from_fresh_state_for_ha_dw():
    # c0 = 0.9: a fresh estimator always starts from anchor 0.9; a carried one drifts towards p = 0.1
    common = dict(estimators="ha_dw(c0=0.9)", G=(8,), p=(0.1,), groups=3000, seed=1)
    fresh = run_bias(BiasConfig(**common)).rows[0]
    carry = run_bias(BiasConfig(**common, state="carry")).rows[0]
    assert fresh["state"] == "fresh" and carry["state"] == "carry"
    assert abs(fresh["adv_correct"] - carry["adv_correct"]) > 4 * max(fresh["adv_correct_se"], carry["adv_correct_se"])


@dataclass(frozen=True)
class _HalfParams:
    pass


def _half_centred(rewards, params, state):
    return 0.5 * (rewards - rewards.mean(axis=1, keepdims=True)), state, {}


def test_third_party_registered_estimator_works_through_the_exact_path():
    register_estimator("lab_test_half", kind="base", params=_HalfParams)(_half_centred)
    try:
        result = run_bias(BiasConfig(estimators="lab_test_half,dr_grpo", G=(6,), p=(0.2, 0.6)))
        half, dr = _rows(result, "lab_test_half"), _rows(result, "dr_grpo")
        for h, d in zip(half, dr):
            assert h["method"] == "exact"
            assert h["adv_correct"] == pytest.approx(0.5 * d["adv_correct"], abs=1e-12)
            assert h["adv_wrong"] == pytest.approx(0.5 * d["adv_wrong"], abs=1e-12)
    finally:
        unregister_estimator("lab_test_half")


@pytest.mark.parametrize("spec", ["nope", "grpo(std=bogus)", "grpo(colour=1)", "grpo(std=population", "grpo(std)"])
def test_unknown_estimators_and_bad_hyperparameters_raise_benchctl_error(spec):
    with pytest.raises(BenchctlError):
        run_bias(BiasConfig(estimators=spec))


def test_hyperparameters_reach_the_estimator_and_label_the_rows():
    result = run_bias(BiasConfig(estimators="grpo(std=population),grpo", G=(8,), p=(0.5,)))
    pop, smp = result.rows
    assert pop["estimator"] == "grpo(std=population)"
    assert pop["adv_correct"] == pytest.approx(smp["adv_correct"] * np.sqrt(8 / 7), rel=1e-5)
