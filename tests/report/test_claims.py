"""Claims: a paper's statement gets `holds` only when the seed-level interval says so; too few seeds, an
inconsistent gain or a claim the testbed cannot express never does."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchctl.errors import BenchctlError
from benchctl.matrix.spec import read_matrix
from benchctl.report.claims import EXCLUDED, Claim, evaluate_claims, log_ratio_interval, read_claims, verdict
from benchctl.report.stats import crossed_log_ratio, crossed_variance, mean_squares, minimum_detectable_effect


def _data(per_seed: dict[tuple[str, int], list[float]], acr: dict[str, float] | None = None):
    """Runs with given per-seed pass@1 (over 4 problems each); key (label, group_size) -> one value per seed."""
    runs, problems, metrics = [], [], []
    for (label, g), values in per_seed.items():
        for seed, value in enumerate(values):
            run_id = len(runs)
            runs.append({"run_id": run_id, "estimator_label": label, "group_size": g, "seed": seed})
            for p in range(4):
                problems.append({"run_id": run_id, "eval_task": "arith", "problem_id": str(p), "k": 1, "value": value})
            for step in range(1, 4):
                metrics.append({"run_id": run_id, "step": step, "acr/all": (acr or {}).get(label, 0.5) + 0.01 * seed})
    return SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=pd.DataFrame(metrics))


def _claim(**kw) -> Claim:
    return Claim(paper="0000.00000", claim="x", arm=kw.pop("arm", "new"), baseline=kw.pop("baseline", "grpo"), **kw)


def test_a_consistent_gain_over_five_seeds_holds():
    data = _data({("grpo", 8): [0.3, 0.32, 0.31, 0.29, 0.3], ("new", 8): [0.4, 0.41, 0.42, 0.39, 0.4]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "holds" and row.seeds == 5
    assert row.effect == pytest.approx(0.1, abs=1e-9) and row.low > 0


def test_gains_of_plus_25_minus_22_plus_3_points_do_not_make_a_claim_hold():
    data = _data({("grpo", 8): [0.3, 0.3, 0.3], ("new", 8): [0.55, 0.08, 0.33]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "inconclusive" and row.low < 0 < row.high


def test_two_seeds_get_no_verdict_and_say_why():
    data = _data({("grpo", 8): [0.3, 0.3], ("new", 8): [0.5, 0.5]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "inconclusive" and row.reason.startswith("too few seeds: 2")


def test_a_consistent_loss_means_a_greater_claim_does_not_hold():
    data = _data({("grpo", 8): [0.5, 0.52, 0.51], ("new", 8): [0.3, 0.31, 0.33]})
    assert evaluate_claims(data, [_claim()]).iloc[0].verdict == "does not hold"


def test_at_least_matches_compares_arms_from_different_contexts_with_a_margin():
    data = _data({("grpo", 16): [0.40, 0.42, 0.41, 0.40], ("ha_dw", 8): [0.39, 0.41, 0.40, 0.39]})
    claim = _claim(arm="ha_dw", direction="at_least", margin=0.02, arm_where={"group_size": 8})
    claim = Claim(**{**claim.__dict__, "baseline_where": {"group_size": 16}})
    row = evaluate_claims(data, [claim]).iloc[0]
    assert row.effect == pytest.approx(-0.01) and row.verdict == "holds"
    strict = Claim(**{**claim.__dict__, "margin": 0.0})
    assert evaluate_claims(data, [strict]).iloc[0].verdict == "does not hold"


def test_a_relative_training_metric_claim_uses_the_ratio_of_seed_means():
    data = _data({("grpo", 8): [0.3] * 5, ("avspo", 8): [0.3] * 5}, acr={"grpo": 0.5, "avspo": 0.2})
    claim = _claim(arm="avspo", metric="acr/all", direction="less", relative=True)
    row = evaluate_claims(data, [claim]).iloc[0]
    assert row.effect == pytest.approx(0.22 / 0.52 - 1, abs=0.02) and row.verdict == "holds" and pd.isna(row.k)


def test_a_claim_the_testbed_cannot_express_keeps_its_row_with_the_reason():
    data = _data({("grpo", 8): [0.3] * 3})
    row = evaluate_claims(data, [_claim(testbed="needs a 7B model")]).iloc[0]
    assert row.verdict == "inconclusive" and "needs a 7B model" in row.reason and np.isnan(row.effect)
    missing = evaluate_claims(data, [_claim(arm="dgpo")]).iloc[0]
    assert missing.verdict == "inconclusive" and "no finished run of 'dgpo'" in missing.reason


def test_verdict_rules_mirror_for_less_and_at_most():
    assert verdict("less", -0.3, -0.1, 5) == "holds"
    assert verdict("less", 0.0, 0.2, 5) == "does not hold"
    assert verdict("at_most", -0.1, 0.01, 5, margin=0.02) == "holds"
    assert verdict("greater", 0.1, 0.3, 2) == "inconclusive"


def test_claims_files_with_bad_entries_are_refused_in_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("claims:\n  - {paper: 1, claim: x, arm: a, baseline: b, direction: better}\n")
    with pytest.raises(BenchctlError, match="claim 1: direction 'better'; choose one of: greater"):
        read_claims(path)
    path.write_text("claims:\n  - {paper: 1, claim: x, arm: a, baseline: b, kk: 1}\n")
    with pytest.raises(BenchctlError, match="unknown key 'kk'"):
        read_claims(path)
    path.write_text("claims:\n  - {paper: 2601.08521, claim: x, arm: a, baseline: b, k: 4}\n")
    assert read_claims(path)[0].paper == "2601.08521" and read_claims(path)[0].k == 4


def _oar(g: list[float], p: list[float]):
    return _data({("grpo", 8): [0.30, 0.31, 0.29, 0.30, 0.30], ("oar_g", 8): g, ("oar_p", 8): p})


def _premise_and_parity() -> list[Claim]:
    premise = _claim(arm="oar_g", id="oar_g_beats_grpo")
    parity = _claim(arm="oar_p", baseline="oar_g", direction="at_least", margin=0.02, requires="oar_g_beats_grpo")
    return [parity, premise]  # the premise may come after the claim that requires it


def test_a_parity_claim_between_two_arms_equal_to_the_baseline_is_not_called_holds():
    rows = evaluate_claims(_oar([0.30, 0.31, 0.29, 0.30, 0.30], [0.30, 0.31, 0.29, 0.30, 0.30]), _premise_and_parity())
    parity, premise = rows.iloc[0], rows.iloc[1]
    assert premise.verdict == "does not hold"
    assert parity.verdict == "inconclusive" and parity.reason.startswith("premise not established")
    assert parity.effect == pytest.approx(0.0) and list(rows["id"]) == [None, "oar_g_beats_grpo"]


def test_a_parity_claim_is_tested_once_its_premise_holds():
    rows = evaluate_claims(_oar([0.40, 0.41, 0.39, 0.40, 0.40], [0.40, 0.40, 0.40, 0.40, 0.41]), _premise_and_parity())
    assert list(rows["verdict"]) == ["holds", "holds"] and pd.isna(rows.iloc[0].reason)
    assert list(rows["margin"]) == [0.02, 0.0]


def test_an_interval_short_of_the_stated_effect_excludes_the_papers_effect():
    data = _data({("grpo", 8): [0.30, 0.31, 0.29, 0.30, 0.30], ("new", 8): [0.31, 0.32, 0.30, 0.31, 0.31]})
    row = evaluate_claims(data, [_claim(stated_effect=0.04)]).iloc[0]
    assert row.high < 0.04 and row.verdict == EXCLUDED and row.stated_effect == 0.04
    assert evaluate_claims(data, [_claim(stated_effect=0.005)]).iloc[0].verdict == "holds"


def test_a_consistent_loss_still_does_not_hold_with_a_stated_effect():
    assert verdict("greater", -0.05, -0.01, 5, stated_effect=0.04) == "does not hold"
    assert verdict("greater", -0.01, 0.02, 5, stated_effect=0.04) == EXCLUDED  # inconclusive, but short of +4
    assert verdict("less", -0.5, -0.3, 5, stated_effect=0.58) == EXCLUDED  # 30-50% lower: short of 58% lower
    assert verdict("less", -0.7, -0.3, 5, stated_effect=0.58) == "holds"


def test_a_relative_effect_is_a_paired_t_interval_on_per_seed_log_ratios():
    arm, base = np.array([0.15, 0.2, 0.18, 0.12, 0.16]), np.array([0.40, 0.42, 0.45, 0.38, 0.41])
    effect, low, high = log_ratio_interval(arm, base)
    d = np.log(arm / base)
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert effect == pytest.approx(np.expm1(d.mean()))
    assert (low, high) == pytest.approx((np.expm1(d.mean() - half), np.expm1(d.mean() + half)))
    assert np.isnan(log_ratio_interval(np.array([0.0, 0.1, 0.2]), np.array([0.3, 0.3, 0.3]))[0])


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("{paper: 1, claim: x, arm: a, baseline: b, requires: nope}", "requires 'nope', no claim has that id"),
        ("{paper: 1, claim: x, arm: a, baseline: b, id: p, requires: p}", "its requires chain returns to itself"),
        ("{paper: 1, claim: x, arm: a, baseline: b, stated_effect: -0.04}", "stated_effect must be a number > 0"),
        ("{paper: 1, claim: x, arm: a, baseline: b, id: p}\n  - {paper: 1, claim: y, arm: a, baseline: b, id: p}",
         "id 'p' is already claim 1's"),
    ],
)  # fmt: skip
def test_claims_files_with_bad_ids_requires_or_stated_effects_are_refused_in_one_line(tmp_path, entries, message):
    path = tmp_path / "c.yaml"
    path.write_text(f"claims:\n  - {entries}\n")
    with pytest.raises(BenchctlError, match=re.escape(message)) as err:
        read_claims(path)
    assert "\n" not in str(err.value)


def test_the_shipped_claims_file_reads_and_its_parity_claims_require_a_premise():
    claims = read_claims(Path(__file__).parents[2] / "examples" / "claims" / "claims.yaml")
    ids = {c.id for c in claims if c.id}
    parity = [c for c in claims if c.direction == "at_least" and c.arm.startswith("oar")]
    assert parity and all(c.requires in ids for c in parity)
    assert {c.stated_effect for c in claims if c.id == "avspo_acr_lower"} == {0.58}


def test_every_tested_claim_says_the_smallest_effect_it_could_have_detected():
    data = _data({("grpo", 8): [0.30, 0.34, 0.29, 0.31, 0.30], ("new", 8): [0.31, 0.33, 0.30, 0.32, 0.31]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    half = (row.high - row.low) / 2
    assert half < row.mde < 2 * half  # 80% power at 5%: about (t_0.975 + t_0.8) se against t_0.975 se
    acr = _data({("grpo", 8): [0.3] * 5, ("avspo", 8): [0.3] * 5}, acr={"grpo": 0.5, "avspo": 0.2})
    rel = evaluate_claims(acr, [_claim(arm="avspo", metric="acr/all", direction="less", relative=True)]).iloc[0]
    assert 0 < rel.mde < 1  # a relative reduction


def _passk_data(per_cell: dict[str, np.ndarray]):
    """Runs with given per-problem pass@1: label -> (P, S) values, problem p of seed s."""
    runs, problems = [], []
    for label, values in per_cell.items():
        for seed in range(values.shape[1]):
            run_id = len(runs)
            runs.append({"run_id": run_id, "estimator_label": label, "group_size": 8, "seed": seed})
            problems += [
                {"run_id": run_id, "eval_task": "arith", "problem_id": f"p{p}", "k": 1, "value": values[p, seed]}
                for p in range(values.shape[0])
            ]
    metrics = pd.DataFrame(columns=["run_id", "step"])
    return SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=metrics)


def _arm_favoured_by_some_problems(seeds: int = 5) -> dict[str, np.ndarray]:
    """20 problems; the arm is 60% better on half of them and equal on the rest, the same on every seed but for a
    little seed noise: per-seed ratios agree, while another draw of problems would move the ratio."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.6, (20, 1)) + rng.normal(0, 0.01, (20, seeds))  # (P, S)
    gain = np.where(np.arange(20)[:, None] % 2 == 0, 1.6, 1.0) * rng.uniform(0.8, 1.25, (20, 1))  # (P, 1)
    return {"grpo": base, "new": base * gain + rng.normal(0, 0.01, (20, seeds))}


def test_a_relative_passk_claim_is_the_ratio_of_means_with_the_crossed_delta_method_interval():
    values = _arm_favoured_by_some_problems()
    row = evaluate_claims(_passk_data(values), [_claim(relative=True)]).iloc[0]
    arm, base = values["new"], values["grpo"]
    z = arm / arm.mean() - base / base.mean()  # the linearised log ratio per cell
    _, var, df = crossed_variance(z)
    log_ratio, half = np.log(arm.mean() / base.mean()), stats.t.ppf(0.975, df) * np.sqrt(var)
    assert row.effect == pytest.approx(arm.mean() / base.mean() - 1)
    assert (row.low, row.high) == pytest.approx((np.expm1(log_ratio - half), np.expm1(log_ratio + half)))
    seeds = z.shape[1]
    share = mean_squares(z)[1] / z.size / var  # the part of the variance estimated on seeds - 1 df
    mde = minimum_detectable_effect(np.sqrt(var), df, 0.05, seed_share=share, seed_df=seeds - 1)
    assert row.mde == pytest.approx(np.expm1(mde))


def test_problems_that_favour_the_arm_widen_a_relative_passk_interval_only_for_new_problems():
    data, claim = _passk_data(_arm_favoured_by_some_problems()), _claim(relative=True)
    problems = evaluate_claims(data, [claim], population="problems").iloc[0]
    fixed = evaluate_claims(data, [claim], population="fixed").iloc[0]
    assert problems.high - problems.low > 3 * (fixed.high - fixed.low)
    assert problems.mde > 3 * fixed.mde


def test_a_relative_passk_claim_for_this_problem_set_keeps_the_per_seed_log_ratios():
    values = _arm_favoured_by_some_problems()
    row = evaluate_claims(_passk_data(values), [_claim(relative=True)], population="fixed").iloc[0]
    effect, low, high = log_ratio_interval(values["new"].mean(axis=0), values["grpo"].mean(axis=0))
    assert (row.effect, row.low, row.high) == pytest.approx((effect, low, high))


def test_the_crossed_log_ratio_scales_with_an_arm_and_is_undefined_at_a_zero_mean():
    rng = np.random.default_rng(0)
    arm, base = rng.uniform(0.1, 0.9, (30, 4)), rng.uniform(0.1, 0.9, (30, 4))  # (P, S)
    est, scaled = crossed_log_ratio(arm, base, 0.95), crossed_log_ratio(2.0 * arm, base, 0.95)
    assert scaled.mean == pytest.approx(est.mean + np.log(2.0))
    assert (scaled.se, scaled.df) == pytest.approx((est.se, est.df))
    assert np.isnan(crossed_log_ratio(np.zeros((30, 4)), base, 0.95).mean)


def test_the_crossed_log_ratio_variance_matches_the_spread_of_log_ratios_over_replications():
    rng = np.random.default_rng(1)
    reps, n_prob, n_seed = 4000, 40, 5

    def draw(mean: float, problem: np.ndarray) -> np.ndarray:  # (R, P, S)
        return mean + problem + rng.normal(0, 0.03, (reps, 1, n_seed)) + rng.normal(0, 0.1, (reps, n_prob, n_seed))

    shared = rng.normal(0, 0.15, (reps, n_prob, 1))  # difficulty, shared by the arms
    arm = draw(0.45, shared + rng.normal(0, 0.05, (reps, n_prob, 1)))
    base = draw(0.30, shared + rng.normal(0, 0.05, (reps, n_prob, 1)))
    spread = np.log(arm.mean(axis=(1, 2)) / base.mean(axis=(1, 2))).var()
    estimated = np.mean([crossed_log_ratio(a, b, 0.95).se ** 2 for a, b in zip(arm[:400], base[:400])])
    assert estimated == pytest.approx(spread, rel=0.15)


# a swept arm: `new` at lr a or b, chosen leave-one-seed-out on t_val (seed 0 is tested at b, seeds 1 and 2 at a;
# re-chosen without seed 0: seed 1 at a, seed 2 at b; without seed 1: a, a; without seed 2: seed 0 at b, seed 1
# at a); `old` and `grpo` at one lr, not swept. Test values per seed, scaled by 1 + problem / 2 (2 problems)
NEW_TEST = {"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0]}
BASE_TEST, OLD_TEST = [4.0, 5.0, 6.0], [5.0, 3.0, 8.0]


def _tuned(population_scale: float = 0.5):
    """Report data after `select_settings` (runs, per-problem pass@1 on t and t_val, the metric acr/all equal to a
    run's test value at problem 0)."""
    from benchctl.report.tuning import select_settings

    val = {"a": [0.9, 0.1, 0.5], "b": [0.2, 0.6, 0.4]}
    sides = [("new", lr, val[lr], NEW_TEST[lr]) for lr in "ab"]
    sides += [("old", "a", [0.5] * 3, OLD_TEST), ("grpo", "a", [0.5] * 3, BASE_TEST)]
    runs, problems, metrics = [], [], []
    for arm, lr, v, t in sides:
        for seed in range(3):
            run_id = len(runs)
            runs.append({"run_id": run_id, "arm": arm, "estimator_label": arm, "task": "t", "seed": seed, "lr": lr})
            for task, value in (("t_val", v[seed]), ("t", t[seed])):
                problems += [{"run_id": run_id, "eval_task": task, "problem_id": i, "k": 1,
                              "value": value * (1 + population_scale * i)} for i in range(2)]  # fmt: skip
            metrics += [{"run_id": run_id, "step": step, "acr/all": t[seed]} for step in (1, 2)]
    data = SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=pd.DataFrame(metrics),
                           eval_curve=pd.DataFrame(), notes=[], group_by=("arm",), arm_column="arm")  # fmt: skip
    select_settings(data, None, "grpo")
    return data


def _plain(data):
    """The same data with the re-choices left out: every seed taken as independent."""
    return SimpleNamespace(**{**vars(data), "refits": None, "refit_metrics": None})


def _jackknife(replicates: list[float]) -> float:
    r = np.asarray(replicates)
    return (len(r) - 1) / len(r) * ((r - r.mean()) ** 2).sum()


@pytest.mark.parametrize("population", ["problems", "fixed"])
def test_claims_on_arms_not_swept_are_bit_identical_with_or_without_the_re_choices(population):
    data = _tuned()
    claims = [_claim(arm="old", relative=r, metric=m) for r in (False, True) for m in ("pass@k", "acr/all")]
    got = evaluate_claims(data, claims, population=population)
    pd.testing.assert_frame_equal(got, evaluate_claims(_plain(data), claims, population=population))
    assert np.isfinite(got["low"]).all()


@pytest.mark.parametrize("population", ["problems", "fixed"])
def test_an_absolute_claim_on_a_cross_fitted_arm_has_the_comparisons_tables_interval(population):
    from benchctl.report.config import ReportConfig
    from benchctl.report.stats import comparisons_table

    data = _tuned()
    row = evaluate_claims(data, [_claim()], population=population).iloc[0]
    config = ReportConfig(inputs=("runs",), baseline="grpo", population=population)
    table = comparisons_table(data, config)
    compared = table[table["arm"] == "new"].iloc[0]
    assert np.allclose([row["effect"], row["low"], row["high"]], compared[["diff", "low", "high"]].to_numpy(float))
    plain = evaluate_claims(_plain(data), [_claim()], population=population).iloc[0]
    assert row["effect"] == plain["effect"] and row["high"] - row["low"] > plain["high"] - plain["low"]


def test_a_relative_claim_for_this_problem_set_takes_the_jackknife_of_the_mean_seed_log_ratio():
    from scipy import stats as sps

    row = evaluate_claims(_tuned(), [_claim(relative=True)], population="fixed").iloc[0]
    d = np.log(np.array([10.0, 2.0, 3.0]) / BASE_TEST)  # per-seed log ratios of the chosen runs
    replicates = [  # each seed left out, the choice redone (see NEW_TEST)
        np.mean(np.log([2.0 / 5.0, 30.0 / 6.0])),
        np.mean(np.log([1.0 / 4.0, 3.0 / 6.0])),
        np.mean(np.log([10.0 / 4.0, 2.0 / 5.0])),
    ]
    half = sps.t.ppf(0.975, 2) * np.sqrt(_jackknife(replicates))
    assert np.allclose([row["effect"], row["low"], row["high"]], np.expm1([d.mean(), d.mean() - half, d.mean() + half]))


def test_a_relative_passk_claim_on_a_cross_fitted_arm_takes_the_jackknife_of_its_log_ratio_of_means():
    data = _tuned()
    row = evaluate_claims(data, [_claim(relative=True)], population="problems").iloc[0]
    replicates = [np.log(16.0 / 5.5), np.log(2.0 / 5.0), np.log(6.0 / 4.5)]  # the ratio of means, as above
    arm = np.array([[10.0, 2.0, 3.0], [15.0, 3.0, 4.5]])  # problems x seeds of the chosen runs
    base = np.array([BASE_TEST, [6.0, 7.5, 9.0]])
    est = crossed_log_ratio(arm, base, 0.95, seed_variance=_jackknife(replicates))
    assert np.allclose([row["effect"], row["low"], row["high"]], np.expm1([est.mean, est.low, est.high]))
    plain = evaluate_claims(_plain(data), [_claim(relative=True)], population="problems").iloc[0]
    assert np.isclose(plain["low"], np.expm1(crossed_log_ratio(arm, base, 0.95).low)) and row["low"] < plain["low"]


def test_a_training_metric_claim_on_a_cross_fitted_arm_takes_the_jackknife_of_the_seed_differences():
    from scipy import stats as sps

    row = evaluate_claims(_tuned(), [_claim(metric="acr/all")]).iloc[0]
    replicates = [(2.0 + 30.0) / 2 - 5.5, (1.0 + 3.0) / 2 - 5.0, (10.0 + 2.0) / 2 - 4.5]  # acr/all as NEW_TEST
    half = sps.t.ppf(0.975, 2) * np.sqrt(_jackknife(replicates))
    assert np.allclose([row["effect"], row["low"], row["high"]], [0.0, -half, half])


def test_the_seed_jackknife_of_an_arm_not_swept_is_the_independent_seeds_variance():
    from benchctl.report.claims import seed_jackknife
    from benchctl.report.crossfit import REFIT_COLUMNS

    rng = np.random.default_rng(0)
    arm, base = (pd.DataFrame(rng.random((6, 5)) + 0.5) for _ in range(2))  # problems x seeds
    none = (pd.DataFrame(columns=REFIT_COLUMNS),) * 2
    diff = (arm - base).mean(axis=0)
    assert np.isclose(seed_jackknife(arm, base, none, "difference"), diff.var(ddof=1) / 5)
    d = np.log(arm.mean(axis=0) / base.mean(axis=0))
    assert np.isclose(seed_jackknife(arm, base, none, "seed log ratios"), d.var(ddof=1) / 5)
    z = arm / arm.to_numpy().mean() - base / base.to_numpy().mean()  # the log ratio's linearisation: first order
    assert np.isclose(seed_jackknife(arm, base, none, "log ratio"), z.mean(axis=0).var(ddof=1) / 5, rtol=0.1)


def test_the_2026_claims_name_arms_that_make_claims_2026_matrices_run_or_say_why_not():
    claims_dir = Path(__file__).parents[2] / "examples" / "claims"
    claims = read_claims(claims_dir / "claims-2026.yaml")
    arms = set()
    for name in ("testbed.yaml", "testbed-2026.yaml", "testbed-offpolicy.yaml"):
        arms |= {cell.arm for cell in read_matrix(claims_dir / name).cells}
    assert len(claims) == 10
    for c in claims:
        assert c.testbed or {c.arm, c.baseline} <= arms, (c.id, c.arm, c.baseline, sorted(arms))


def test_the_real_model_claims_name_arms_of_make_claims_real_and_its_eval_task():
    folder = Path(__file__).parents[2] / "examples" / "claims-real"
    claims = read_claims(folder / "claims.yaml")
    spec = read_matrix(folder / "testbed.yaml")
    arms = {cell.arm for cell in spec.cells}
    assert {"grpo", "dr_grpo", "noisy_verifier"} <= arms and len(arms - {"grpo", "dr_grpo", "noisy_verifier"}) >= 3
    assert any(c.arm == "noisy_verifier" and c.direction == "less" for c in claims)  # the planted control
    for c in claims:
        assert c.testbed is None and {c.arm, c.baseline} <= arms, (c.id, c.arm, c.baseline, sorted(arms))
        assert c.eval_task == "arith_words" and (c.k or 1) <= 4, c.id  # testbed.yaml evaluates n = 4
