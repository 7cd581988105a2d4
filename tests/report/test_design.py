"""The design advisor (`benchctl plan`, benchctl/report/design*.py): components recovered, the predicted mde is the
report's own mde on the expected mean squares, the cost model reproduces a matrix's measured time, bad input."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from benchctl.report.design import (
    Components,
    PlanInputError,
    _matrix_with_mean_squares,
    components_of,
    expected_mean_squares,
    predicted_mde,
)
from benchctl.report.stats import POWER, crossed_estimate, mean_squares, minimum_detectable_effect


def _draw(rng, seeds, questions, samples, comp, delta=0.0):
    """D (P, S) from known components (fractions): seed, arm x problem, seed x problem, per-sample sd."""
    seed_sd, prob_sd, inter_sd, sample_sd = comp
    d = (
        delta
        + rng.normal(0, seed_sd, seeds)[None, :]
        + rng.normal(0, prob_sd, questions)[:, None]
        + rng.normal(0, inter_sd, (questions, seeds))
        + rng.normal(0, sample_sd / np.sqrt(samples), (questions, seeds))
    )
    return d, np.full(d.shape, sample_sd**2 / samples), np.full(d.shape, float(samples))


def test_variance_components_recover_known_components_on_synthetic_data():
    rng = np.random.default_rng(0)
    truth = (0.03, 0.05, 0.04, 0.4)
    est = np.array([components_of(*_draw(rng, 8, 300, 8, truth)) for _ in range(200)])  # (reps, 4)
    mean = est.mean(axis=0)
    np.testing.assert_allclose(mean, np.square(truth), rtol=0.1)


def test_no_sampling_split_at_k_above_one_keeps_the_whole_error_in_the_interaction():
    rng = np.random.default_rng(1)
    d, _, _ = _draw(rng, 5, 200, 8, (0.02, 0.03, 0.04, 0.4))
    seed, prob, inter, sampling = components_of(d, None, None)
    assert sampling == 0.0
    assert inter == pytest.approx(float(mean_squares(d)[3]))


@pytest.mark.parametrize(("questions", "seeds"), [(2, 3), (50, 3), (200, 7)])
def test_constructed_matrix_has_exactly_the_expected_mean_squares(questions, seeds):
    _, ms_s, ms_p, ms_e = mean_squares(_matrix_with_mean_squares(0.3, 0.02, 0.05, questions, seeds))
    np.testing.assert_allclose([ms_s, ms_p, ms_e], [0.3, 0.02, 0.05], rtol=1e-9)


def test_predicted_mde_is_the_reports_mde_at_the_expected_mean_squares():
    c = Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, 0.02**2, 0.05**2, 0.04**2, 0.4**2)
    ms = expected_mean_squares(c, 6, 300, 4.0)
    assert ms == pytest.approx(
        (300 * 0.02**2 + 0.04**2 + 0.4**2 / 4, 6 * 0.05**2 + 0.04**2 + 0.4**2 / 4, 0.04**2 + 0.04)
    )
    est = crossed_estimate(_matrix_with_mean_squares(*ms, 300, 6), 0.95)
    by_hand = minimum_detectable_effect(est.se, est.df, 0.025, POWER, est.seed_share, 5)
    assert predicted_mde(c, 6, 300, 4.0, 0.025) == pytest.approx(by_hand, rel=1e-12)


def test_predicted_mde_near_the_floor_scales_the_variance_with_the_levels_as_the_report_prints_it():
    c = Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, 0.002**2, 0.01**2, 0.01**2, 0.2**2, 0.05, 0.04)
    ms = expected_mean_squares(c, 5, 200, 8.0)
    est = crossed_estimate(_matrix_with_mean_squares(*ms, 200, 5), 0.95)
    plain = minimum_detectable_effect(est.se, est.df, 0.025, POWER, est.seed_share, 4)
    by_hand = minimum_detectable_effect(
        est.se, est.df, 0.025, POWER, est.seed_share, 4, arm_level=0.05, base_level=0.04, spread_power=2.0
    )
    assert by_hand > plain
    assert predicted_mde(c, 5, 200, 8.0, 0.025) == pytest.approx(by_hand, rel=1e-12)


def test_more_samples_shrink_only_the_sampling_part_and_more_seeds_shrink_the_mde():
    c = Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, 0.02**2, 0.05**2, 0.04**2, 0.4**2)
    by_seeds = [predicted_mde(c, s, 200, 8, 0.025) for s in (3, 5, 10, 20)]
    assert all(a > b for a, b in zip(by_seeds, by_seeds[1:]))
    no_sampling = dataclasses.replace(c, sampling=0.0)
    assert predicted_mde(no_sampling, 5, 200, 1, 0.025) == pytest.approx(predicted_mde(no_sampling, 5, 200, 64, 0.025))


def test_median_printed_mde_of_simulated_runs_is_within_15_percent_of_the_prediction():
    rng = np.random.default_rng(2)
    truth = (0.02, 0.04, 0.05, 0.45)
    c = Components("a", "b", "t", 1, 3, 100, 8.0, 0.0, *np.square(truth))
    predicted = predicted_mde(c, 10, 200, 8, 0.025)
    printed = []
    for _ in range(150):
        d, _, _ = _draw(rng, 10, 200, 8, truth)
        est = crossed_estimate(d, 0.95)
        printed.append(minimum_detectable_effect(est.se, est.df, 0.025, POWER, est.seed_share, 9))
    assert abs(np.median(printed) / predicted - 1) < 0.15


def _draw_paired_streams(rng, seeds, questions, samples):
    """Two arms' pass@1 on common random numbers (the same seed's sampling stream in both arms): a cell's verdicts are
    u < rate with the same uniforms u for both arms -> (D (P, S), both arms' a(1 - a) / (n - 1) summed, n, truth).
    The arm's rate is the baseline's plus a seed and an arm x problem shift; the truth: those shifts' variances (of
    the ones drawn, ddof 1), no seed x problem, and per sample the variance of 1[u < a] - 1[u < b], |a - b| -
    (a - b)**2, averaged over cells."""
    base = rng.uniform(0.2, 0.6, questions)[:, None] + rng.normal(0, 0.05, seeds)[None, :]  # (P, S)
    seed_shift, prob_shift = rng.normal(0, 0.01, seeds), rng.normal(0, 0.02, questions)  # (S,), (P,)
    arm = base + seed_shift[None, :] + prob_shift[:, None]  # (P, S)
    u = rng.uniform(size=(questions, seeds, samples))  # (P, S, n): one stream per seed and question, both arms
    a, b = (u < arm[..., None]).mean(-1), (u < base[..., None]).mean(-1)  # (P, S)
    cell_var = (a * (1 - a) + b * (1 - b)) / (samples - 1)
    gap = np.abs(arm - base)
    truth = (float(seed_shift.var(ddof=1)), float(prob_shift.var(ddof=1)), 0.0, float((gap - gap**2).mean()))
    return a - b, cell_var, np.full(a.shape, float(samples)), truth


def test_paired_sampling_streams_recover_the_sampling_component_and_the_pilots_own_mde():
    d, cell_var, n, truth = _draw_paired_streams(np.random.default_rng(5), 4, 400, 16)
    assert cell_var.mean() > 5 * mean_squares(d)[3]  # the arms' summed variance far above D's: the case at hand
    seed, prob, inter, sampling = components_of(d, cell_var, n)
    assert inter == 0.0
    assert sampling == pytest.approx(truth[3], rel=0.15)
    recovered = Components("a", "b", "t", 1, 4, 400, 16.0, 0.0, seed, prob, inter, sampling)
    known = Components("a", "b", "t", 1, 4, 400, 16.0, 0.0, *truth)
    for design in ((4, 400, 16.0), (10, 1000, 4.0)):
        assert predicted_mde(recovered, *design, 0.025) == pytest.approx(predicted_mde(known, *design, 0.025), rel=0.15)
    est = crossed_estimate(d, 0.95)
    printed = minimum_detectable_effect(est.se, est.df, 0.025, POWER, est.seed_share, 3)
    assert predicted_mde(recovered, 4, 400, 16.0, 0.025) == pytest.approx(printed, rel=0.15)


# ---- the pilot: a matrix on disk ---------------------------------------------------------------------------------


def _pilot(
    tmp_path, seeds=(1, 2, 3), arms=("grpo", "other"), questions=40, samples=8, wall=None, final_s=None, periodic=True
):
    """A results folder: each arm x seed a train run with 3 steps (time/step 2 s), a timed periodic evaluation at
    step 2 (5 s for 10 questions x 4 samples; `periodic=False`: none, no time/eval column) and a final evaluation of
    questions x samples; `wall`: seconds from config.json to the final summary, set on the files; `final_s`: seconds
    from RUN/model's weights to it."""
    from tests.report.fixtures import train_config, write_eval, write_matrix

    rng = np.random.default_rng(3)
    rates = rng.uniform(0.1, 0.9, questions)
    cells = []
    for arm in arms:
        for seed in seeds:
            shift = (0.05 if arm != "grpo" else 0.0) + rng.normal(0, 0.02)
            correct = {f"q{i}": list(rng.random(samples) < np.clip(r + shift, 0, 1)) for i, r in enumerate(rates)}
            metrics = {"time/step": [2.0, 2.0, 2.0]} | ({"time/eval": [None, 5.0, None]} if periodic else {})
            cells.append((f"{arm}-s{seed}", train_config(arm, seed), correct, metrics))
    runs = write_matrix(tmp_path, cells)
    for i, run in enumerate(runs):
        if periodic:
            write_eval(run / "eval" / "step-000002", "arith", {f"q{j}": [True, False, False, True] for j in range(10)})
        if wall is not None:
            start = 1_000_000.0 + 1000 * i
            os.utime(run / "config.json", (start, start))
            os.utime(run / "eval" / "final" / "summary.parquet", (start + wall, start + wall))
        if final_s is not None:
            (run / "model").mkdir()
            (run / "model" / "model.safetensors").write_bytes(b"w")
            os.utime(run / "model" / "model.safetensors", (start + wall - final_s, start + wall - final_s))
    return tmp_path


def test_cost_model_reproduces_the_measured_time_of_a_matrix(tmp_path):
    from benchctl.report.config import ReportConfig
    from benchctl.report.design_cost import cell_cost
    from benchctl.report.load import load_report_data

    # 6 s of steps + 5 s of periodic evaluation + 320 final samples at 5 / 40 s each + 9 s of start-up
    results = _pilot(tmp_path, wall=6 + 5 + 320 * 5 / 40 + 9)
    cost = cell_cost(load_report_data(ReportConfig(inputs=(str(results),))))
    assert cost.eval_source == "periodic evaluations"
    assert cost.eval_sample_s == pytest.approx(5 / 40)
    assert cost.startup_s == pytest.approx(9, abs=1e-6)
    assert cost.cell_s(40, 8, 40, 8) == pytest.approx(cost.measured_s, rel=1e-9)
    assert cost.cell_s(80, 16, 40, 8) == pytest.approx(6 + 5 + 9 + 4 * 320 * 5 / 40)


def test_cost_model_times_the_final_evaluation_from_its_files_when_it_can(tmp_path):
    from benchctl.report.config import ReportConfig
    from benchctl.report.design_cost import cell_cost
    from benchctl.report.load import load_report_data

    results = _pilot(tmp_path, wall=6 + 5 + 16 + 9, final_s=16)  # 320 final samples in 16 s: 0.05 s each
    cost = cell_cost(load_report_data(ReportConfig(inputs=(str(results),))))
    assert cost.eval_source == "final evaluations"
    assert cost.eval_sample_s == pytest.approx(16 / 320)
    assert cost.startup_s == pytest.approx(9, abs=1e-6)
    assert cost.cell_s(40, 8, 40, 8) == pytest.approx(cost.measured_s, rel=1e-9)


def test_cost_model_of_a_pilot_without_periodic_evaluations_times_its_final_ones(tmp_path):
    from benchctl.report.config import ReportConfig
    from benchctl.report.design_cost import cell_cost
    from benchctl.report.load import load_report_data

    results = _pilot(tmp_path, wall=6 + 16 + 9, final_s=16, periodic=False)  # train, 320 final samples, start-up
    cost = cell_cost(load_report_data(ReportConfig(inputs=(str(results),))))
    assert cost.eval_source == "final evaluations"
    assert cost.eval_sample_s == pytest.approx(16 / 320)
    assert cost.startup_s == pytest.approx(9, abs=1e-6)
    assert cost.cell_s(40, 8, 40, 8) == pytest.approx(cost.measured_s, rel=1e-9)


def test_plan_names_a_design_that_meets_the_target_and_writes_its_files(tmp_path):
    from benchctl.report.design_plan import PlanConfig, build_plan

    results = _pilot(tmp_path / "r", wall=60)
    grid = {"seeds": (3, 5, 10, 20), "questions": (40, 100, 400), "samples": (4, 8, 16)}
    plan = build_plan(PlanConfig(inputs=(str(results),), target_mde=10.0, out=str(tmp_path / "o"), **grid))
    assert plan.choice is not None and plan.choice["mde"] <= 10.0
    cheaper = plan.designs[plan.designs["core_hours"] < plan.choice["core_hours"] - 1e-12]
    assert not cheaper["meets"].any()
    assert {p.name for p in plan.files} >= {"plan.png", "plan.json", "plan_designs.parquet"}
    assert set(plan.designs["family"]) == {"add seeds", "add questions", "add samples", "cheapest"}


def test_plan_never_asks_for_more_questions_than_the_benchmark_holds(tmp_path):
    from benchctl.report.design_plan import PlanConfig, build_plan
    from benchctl.tasks import get_task

    results = _pilot(tmp_path / "r", wall=60)  # evaluated on arith
    size = get_task("arith").size()
    plan = build_plan(PlanConfig(inputs=(str(results),), seeds=(3, 5), questions=(40, size // 2, 4 * size)))
    assert plan.designs["questions"].max() == size
    assert set(plan.designs["questions"]) <= {40, size // 2, size}


def test_plan_within_a_budget_too_small_says_so(tmp_path):
    from benchctl.report.design_plan import PlanConfig, build_plan

    plan = build_plan(PlanConfig(inputs=(str(_pilot(tmp_path, wall=60)),), target_mde=0.01, budget=0.001))
    assert plan.choice is None and "within 0.001 core-hours" in plan.message


@pytest.mark.parametrize(
    ("kwargs", "needs"), [({"seeds": (1,)}, "at least 2 seeds"), ({"arms": ("grpo",)}, "at least 2 arms")]
)
def test_a_pilot_with_one_seed_or_one_arm_is_refused(tmp_path, kwargs, needs):
    from benchctl.report.design_plan import PlanConfig, build_plan

    with pytest.raises(PlanInputError, match=needs):
        build_plan(PlanConfig(inputs=(str(_pilot(tmp_path, **kwargs)),)))


def test_a_target_mde_that_is_not_positive_is_refused():
    from benchctl.report.design_plan import PlanConfig

    with pytest.raises(PlanInputError, match="positive"):
        PlanConfig(inputs=("x",), target_mde=0.0)
