"""Seed-level statistics on synthetic runs whose truth is known: the training run is the unit of the test."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from benchctl.report import ReportConfig, build_report
from benchctl.report.stats import MIN_SEEDS, crossed_estimate, seeds_for_power

from .fixtures import train_config, write_matrix

P, N = 40, 20  # problems, samples per problem: a run's pass@1 is (correct samples) / 800
DIFFICULTY = np.linspace(-0.3, 0.3, P)  # the same problems are easy in every run, as on a real benchmark


def _verdicts(mean: float) -> dict[str, list[bool]]:
    """P problems x N samples, exactly round(mean P N) correct, problem i near mean + DIFFICULTY[i]."""
    counts = np.clip(np.round(N * (mean + DIFFICULTY)), 0, N).astype(int)  # (P,)
    step = 1 if counts.sum() < round(mean * P * N) else -1
    i = 0
    while counts.sum() != round(mean * P * N):  # spread the rounding error one sample at a time
        if 0 <= counts[i % P] + step <= N:
            counts[i % P] += step
        i += 7
    return {f"q{i}": [j < c for j in range(N)] for i, c in enumerate(counts)}


def _results(tmp_path, arms: dict[str, list[float]], base: float = 0.40):
    """arms: name -> pass@1 of each seed; the baseline `grpo` has `base` on every seed the arm has."""
    seeds = max(len(v) for v in arms.values())
    cells = [(f"grpo-s{s}", train_config("grpo", s), _verdicts(base)) for s in range(1, seeds + 1)]
    for name, means in arms.items():
        for s, mean in enumerate(means, start=1):
            cells.append((f"{name}-s{s}", train_config(name, s), _verdicts(mean)))
    write_matrix(tmp_path / "results", cells)
    config = ReportConfig(inputs=(str(tmp_path / "results"),), ks=(1,), rliable_reps=100, resamples=200)
    return build_report(config)


def _seed_blind_p(means: list[float], base: float = 0.40) -> float:
    """The previous report's test on the same runs: per-problem means over seeds, paired bootstrap over problems."""
    per_problem = lambda m: np.array([np.mean(v) for v in _verdicts(m).values()])  # noqa: E731  (P,)
    diff = np.mean([per_problem(m) for m in means], axis=0) - per_problem(base)  # (P,)
    boot = sps.bootstrap((diff,), np.mean, n_resamples=4000, random_state=0, method="percentile")
    below = np.mean(boot.bootstrap_distribution <= 0)
    return min(1.0, 2 * min(below, 1 - below) + 2 / 4001)


def test_a_gain_of_plus25_minus22_plus3_points_over_three_seeds_is_not_significant(tmp_path):
    result = _results(tmp_path, {"avspo": [0.65, 0.18, 0.43]})
    assert _seed_blind_p([0.65, 0.18, 0.43]) < 0.01  # averaging seeds away would have called it a gain
    row = result.tables["comparisons"].set_index("arm").loc["avspo"]
    assert row["diff"] == pytest.approx(0.02)
    assert row["seeds"] == 3 and not row["too_few_seeds"]
    assert row["seed_std"] == pytest.approx(np.std([0.25, -0.22, 0.03], ddof=1))
    assert row["low"] < 0 < row["high"] and row["p_value"] > 0.5 and not row["significant"]
    se = np.sqrt(np.var([0.25, -0.22, 0.03], ddof=1) / 3)  # the seed component dominates: the paired t-test
    assert row["p_value"] == pytest.approx(2 * sps.t.sf(0.02 / se, 2), abs=0.03)


def test_a_consistent_gain_of_10_points_over_five_seeds_is_significant(tmp_path):
    result = _results(tmp_path, {"dgpo": [0.49, 0.51, 0.50, 0.505, 0.495]})
    row = result.tables["comparisons"].set_index("arm").loc["dgpo"]
    assert row["diff"] == pytest.approx(0.10)
    assert row["seeds"] == 5 and 0.05 < row["low"] < row["diff"] < row["high"] < 0.15
    assert row["p_holm"] < 0.01 and row["significant"]
    main = result.tables["main"].set_index("arm").loc["dgpo"]
    assert main["p (Holm)"].endswith(" *") and main["seeds"] == "5"


def test_an_arm_with_two_seeds_gets_the_mark_and_no_claim_and_holm_skips_it(tmp_path):
    result = _results(tmp_path, {"big": [0.80, 0.81], "dgpo": [0.49, 0.51, 0.50]})
    cmp = result.tables["comparisons"].set_index("arm")
    two = cmp.loc["big"]
    assert two["too_few_seeds"] and two["seeds"] == 2
    assert np.isnan(two["p_value"]) and np.isnan(two["p_holm"]) and not two["significant"]
    assert two["diff"] == pytest.approx(0.405) and two["low"] < two["diff"] < two["high"]  # estimate still shown
    three = cmp.loc["dgpo"]
    assert three["p_holm"] == pytest.approx(three["p_value"])  # Holm over one eligible comparison: unchanged
    main = result.tables["main"].set_index("arm")
    assert main.loc["big", "p (Holm)"] == "too few seeds (2)" and "*" not in main.loc["big", "p (Holm)"]
    assert main.loc["big", "seeds"] == "2 (too few)"
    assert result.tables["passk"].set_index("arm").loc["big", "too_few_seeds"]


def test_one_seed_gives_an_estimate_without_interval(tmp_path):
    row = _results(tmp_path, {"solo": [0.6]}).tables["comparisons"].iloc[0]
    assert row["diff"] == pytest.approx(0.2) and np.isnan(row["low"]) and np.isnan(row["p_value"])
    assert row["too_few_seeds"] and np.isnan(row["seed_std"])


def test_seeds_for_80pct_power_matches_the_one_sample_t_test_tables():
    # Cohen (1988), one-sample / paired t, two-sided alpha 0.05, power 0.8: d = 1 -> 10, d = 0.5 -> 34 (33.4)
    assert seeds_for_power(0.10, 0.10, alpha=0.05) == 10
    assert seeds_for_power(0.05, 0.10, alpha=0.05) == 34
    assert seeds_for_power(1.0, 0.01, alpha=0.05) == MIN_SEEDS  # huge effect: never below the claim minimum
    assert np.isnan(seeds_for_power(0.0, 0.1, alpha=0.05)) and np.isnan(seeds_for_power(0.1, np.nan, alpha=0.05))


def test_report_power_column_uses_the_observed_seed_differences(tmp_path):
    result = _results(tmp_path, {"ha_dw": [0.40, 0.50, 0.60]})  # per-seed differences 0, 10, 20 points: d = 1
    row = result.tables["comparisons"].iloc[0]
    assert row["seed_std"] == pytest.approx(0.10) and row["seeds_for_80pct_power"] == 10


def test_crossed_estimate_adds_the_seed_and_problem_variances_with_seeds_minus_one_df():
    rng = np.random.default_rng(3)
    x = rng.normal(0.3, 0.1, size=(25, 4))  # (P, S)
    est = crossed_estimate(x, 0.95)
    var = x.mean(axis=0).var(ddof=1) / 4 + x.mean(axis=1).var(ddof=1) / 25
    half = sps.t.ppf(0.975, 3) * np.sqrt(var)
    assert (est.low, est.high, est.df) == pytest.approx((x.mean() - half, x.mean() + half, 3))
    assert est.p_value == pytest.approx(2 * sps.t.sf(x.mean() / np.sqrt(var), 3))
    same = crossed_estimate(np.zeros((5, 3)), 0.95)
    assert (same.mean, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("seeds", [3, 5])
@pytest.mark.parametrize(
    "seed_sd,problem_sd,noise_sd",
    [(0.10, 0.0, 0.05), (0.10, 0.10, 0.05), (0.02, 0.20, 0.10)],
    ids=["seed-dominated", "both", "problem-dominated"],
)
def test_null_arms_reject_at_most_alpha_and_seed_dominated_p_values_are_uniform(seeds, seed_sd, problem_sd, noise_sd):
    """Arm - baseline with no true difference: per-seed offsets (training runs), per-problem offsets (the problem
    set favours one arm by chance) and noise; 4000 replications of 30 problems."""
    rng = np.random.default_rng(seeds)
    reps, problems = 4000, 30
    d = (
        rng.normal(0, seed_sd, (reps, 1, seeds))
        + rng.normal(0, problem_sd, (reps, problems, 1))
        + rng.normal(0, noise_sd, (reps, problems, seeds))
    )  # (R, P, S)
    p = np.array([crossed_estimate(x, 0.95).p_value for x in d])
    tol = 3 * np.sqrt(0.05 * 0.95 / reps)
    assert np.mean(p < 0.05) <= 0.05 + tol
    if problem_sd == 0:  # the t reference is (nearly) exact: p ~ U(0, 1)
        for level in (0.01, 0.05, 0.1, 0.25, 0.5):
            assert np.mean(p < level) == pytest.approx(level, abs=3 * np.sqrt(level * (1 - level) / reps) + 0.005)


def test_holm_runs_over_the_comparisons_with_enough_seeds_only(tmp_path):
    result = _results(tmp_path, {"a": [0.45, 0.47, 0.44], "b": [0.30, 0.35, 0.33], "c": [0.9, 0.1]})
    cmp = result.tables["comparisons"]
    ok = ~cmp["too_few_seeds"]
    _, hand, _, _ = multipletests(cmp.loc[ok, "p_value"], method="holm")
    assert cmp.loc[ok, "p_holm"].to_numpy() == pytest.approx(hand)
    assert cmp.loc[~ok, "p_holm"].isna().all() and ok.sum() == 2


def test_power_cell_tells_an_undefined_analysis_from_a_hopeless_one():
    from benchctl.report.render import _diff_cells

    row = {"low": -0.1, "high": 0.1, "too_few_seeds": False, "seeds": 3, "p_holm": 0.9, "significant": False}
    tiny = pd.Series({**row, "diff": 1e-4, "seed_std": 0.1, "seeds_for_80pct_power": seeds_for_power(1e-4, 0.1, 0.05)})
    assert _diff_cells(tiny)["seeds for 80% power"] == "> 100000"
    flat = pd.Series({**row, "diff": 0.0, "seed_std": 0.1, "seeds_for_80pct_power": seeds_for_power(0.0, 0.1, 0.05)})
    assert _diff_cells(flat)["seeds for 80% power"] == "-"
