"""`benchctl report` numbers on hand-made run folders, checked against values computed by hand."""

from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from benchctl.errors import BenchctlError
from benchctl.report import ReportConfig, build_report

from .fixtures import train_config, write_eval, write_matrix

N = 4
# correct samples per problem (3 problems, n = 4) for each (estimator, seed)
COUNTS = {
    ("grpo", 1): [1, 2, 0],
    ("grpo", 2): [2, 2, 1],
    ("grpo", 3): [1, 1, 1],
    ("ha_dw", 1): [3, 2, 1],
    ("ha_dw", 2): [4, 3, 1],
    ("ha_dw", 3): [2, 3, 2],
}
SEEDS = (1, 2, 3)


def _verdicts(counts):
    return {f"q{i}": [j < c for j in range(N)] for i, c in enumerate(counts)}


def _pass(c: int, k: int) -> float:
    return 1.0 - comb(N - c, k) / comb(N, k)


@pytest.fixture()
def matrix(tmp_path):
    cells = [
        (
            f"{est}-s{seed}",
            train_config(est, seed, params={"lambda_scale": 1.3} if est == "ha_dw" else {}),
            _verdicts(c),
        )
        for (est, seed), c in COUNTS.items()
    ]
    write_matrix(tmp_path / "results", cells)
    return tmp_path / "results"


def _config(*inputs, **kw):
    kw.setdefault("rliable_reps", 200)
    return ReportConfig(inputs=tuple(str(i) for i in inputs), **kw)


def _hand_mean(est: str, k: int) -> float:
    return float(np.mean([np.mean([_pass(c, k) for c in COUNTS[(est, s)]]) for s in SEEDS]))


def _hand_matrix(est: str, k: int) -> np.ndarray:
    return np.array([[_pass(c, k) for c in COUNTS[(est, s)]] for s in SEEDS]).T  # (P, S)


def test_passk_is_the_mean_over_seeds_of_the_unbiased_estimator(matrix):
    passk = build_report(_config(matrix)).tables["passk"].set_index(["arm", "k"])
    for est in ("grpo", "ha_dw"):
        for k in (1, 2, 4):
            assert passk.loc[(est, k), "pass_at_k"] == pytest.approx(_hand_mean(est, k))
            assert passk.loc[(est, k), "low"] <= passk.loc[(est, k), "pass_at_k"] <= passk.loc[(est, k), "high"]
    assert passk.loc[("grpo", 1), "pass_at_k"] == pytest.approx((0.75 / 3 + 1.25 / 3 + 0.75 / 3) / 3)
    seed_means = [np.mean([c / N for c in COUNTS[("grpo", s)]]) for s in SEEDS]
    assert passk.loc[("grpo", 1), "seed_std"] == pytest.approx(np.std(seed_means, ddof=1))
    assert (passk["seeds"] == 3).all() and (passk["problems"] == 3).all() and not passk["too_few_seeds"].any()


def _two_way(d: np.ndarray) -> tuple[float, float]:
    """(se, df) of mean(d), d (P, S), by hand: two-way ANOVA mean squares, Satterthwaite df with the seed mean
    square also at its upper 75% chi-square limit (the smaller df kept), at least min(S, P) - 1."""
    n_prob, n_seed = d.shape
    ms_s = n_prob * d.mean(axis=0).var(ddof=1)
    ms_p = n_seed * d.mean(axis=1).var(ddof=1)
    resid = d - d.mean(axis=0) - d.mean(axis=1, keepdims=True) + d.mean()
    ms_e = (resid**2).sum() / ((n_seed - 1) * (n_prob - 1))
    part = max(ms_p - ms_e, 0.0)
    rest = ms_p**2 / (n_prob - 1) + ms_e**2 / ((n_seed - 1) * (n_prob - 1)) if part > 0 else 0.0
    upper = ms_s * (n_seed - 1) / sps.chi2.ppf(0.25, n_seed - 1)
    df = min((s + part) ** 2 / (s**2 / (n_seed - 1) + rest) for s in (ms_s, upper))
    return float(np.sqrt((ms_s + part) / (n_seed * n_prob))), max(df, min(n_seed, n_prob) - 1.0)


def test_paired_difference_to_baseline_matches_hand_values_and_holm_runs_over_the_primary_k(matrix):
    cmp = build_report(_config(matrix)).tables["comparisons"].set_index("k")
    assert list(cmp.index) == [1, 2, 4] and set(cmp["baseline"]) == {"grpo"}
    for k in (1, 2, 4):
        assert cmp.loc[k, "diff"] == pytest.approx(_hand_mean("ha_dw", k) - _hand_mean("grpo", k))
        d = _hand_matrix("ha_dw", k) - _hand_matrix("grpo", k)  # (P, S), paired by problem and seed
        se, df = _two_way(d)
        half = sps.t.ppf(0.975, df) * se
        assert (cmp.loc[k, "low"], cmp.loc[k, "high"]) == pytest.approx((d.mean() - half, d.mean() + half))
        assert cmp.loc[k, "p_value"] == pytest.approx(2 * sps.t.sf(abs(d.mean()) / se, df))
        assert cmp.loc[k, "seed_std"] == pytest.approx(d.mean(axis=0).std(ddof=1))
    assert cmp.loc[1, "diff"] == pytest.approx((6 / 4 + 8 / 4 + 7 / 4 - 3 / 4 - 5 / 4 - 3 / 4) / 9)
    assert cmp["primary"].tolist() == [True, False, False]  # pass@1 is the primary family, alone here: m = 1
    assert cmp.loc[1, "p_holm"] == pytest.approx(cmp.loc[1, "p_value"])
    assert cmp.loc[[2, 4], "p_holm"].isna().all() and not cmp.loc[[2, 4], "significant"].any()


def test_rliable_iqm_of_three_runs_on_one_task_is_their_mean(matrix):
    agg = build_report(_config(matrix)).tables["aggregates"]
    row = agg[(agg["arm"] == "grpo") & (agg["k"] == 1) & (agg["metric"] == "IQM")].iloc[0]
    assert row["value"] == pytest.approx(_hand_mean("grpo", 1))
    assert (row["runs"], row["tasks"]) == (3, 1)
    imp = build_report(_config(matrix)).tables["improvement"]
    assert imp.iloc[0][["arm", "baseline"]].tolist() == ["ha_dw", "grpo"]
    assert imp.iloc[0]["probability_of_improvement"] == pytest.approx(1.0)  # every ha_dw run beats every grpo run


def test_cost_table_sums_phase_times_and_takes_the_final_token_count(matrix):
    cost = build_report(_config(matrix)).tables["cost"].set_index("arm")
    assert cost.loc["grpo", "steps"] == 3
    assert cost.loc["grpo", "rollout_tokens"] == 300  # 100 tokens per step x 3 steps (fixture)
    assert cost.loc["grpo", "time/step_s"] == pytest.approx(3 * 3.5)
    assert cost.loc["ha_dw", "pass@1:arith"] == pytest.approx(_hand_mean("ha_dw", 1))


def test_where_filters_runs_and_group_by_changes_the_arms(matrix):
    only = build_report(_config(matrix, where=("estimator=ha_dw",), baseline=None)).tables["passk"]
    assert set(only["arm"]) == {"ha_dw"}
    by_seed = build_report(_config(matrix, group_by=("seed",), baseline=None)).tables["passk"]
    assert set(by_seed["arm"]) == {"seed=1", "seed=2", "seed=3"}
    est_param = build_report(_config(matrix, where=("est.lambda_scale=1.3",), baseline=None)).tables["passk"]
    assert set(est_param["arm"]) == {"ha_dw"}
    not_grpo = build_report(_config(matrix, where=("estimator!=grpo",), baseline=None)).tables["passk"]
    assert set(not_grpo["arm"]) == {"ha_dw"}


def test_plain_eval_folders_are_arms_named_by_model(tmp_path):
    write_eval(tmp_path / "a", "arith", _verdicts([1, 2, 0]), model="base-model")
    write_eval(tmp_path / "b", "arith", _verdicts([3, 2, 1]), model="tuned-model")
    result = build_report(_config(tmp_path / "a", tmp_path / "b", baseline="base-model"))
    cmp = result.tables["comparisons"]
    assert cmp.iloc[0][["arm", "baseline"]].tolist() == ["tuned-model", "base-model"]
    assert cmp.iloc[0]["diff"] == pytest.approx((6 - 3) / 12)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"where": ("nosuch=1",)}, "unknown column 'nosuch'"),
        ({"where": ("estimator=nothing",)}, "no run left"),
        ({"group_by": ("nosuch",)}, "unknown column"),
    ],
)
def test_bad_filters_name_the_problem(matrix, kwargs, message):
    with pytest.raises(BenchctlError, match=message):
        build_report(_config(matrix, **kwargs))


def test_written_tables_are_plain_parquet_with_the_documented_columns(matrix, tmp_path):
    result = build_report(_config(matrix, out=str(tmp_path / "rep")))
    names = {p.name for p in result.files}
    assert {"report.md", "report.html", "passk.parquet", "comparisons.parquet", "cost.parquet"} <= names
    cmp = pd.read_parquet(tmp_path / "rep" / "comparisons.parquet")
    assert list(cmp.columns) == [
        "arm",
        "baseline",
        "eval_task",
        "k",
        "arm_pass_at_k",
        "baseline_pass_at_k",
        "diff",
        "low",
        "high",
        "p_value",
        "p_holm",
        "significant",
        "primary",
        "mde",
        "df",
        "seeds",
        "seed_std",
        "too_few_seeds",
        "problems",
        "arm_health",
        "baseline_health",
        "unhealthy",
        "seeds_expected",
        "seeds_lost",
    ]
    runs = pd.read_parquet(tmp_path / "rep" / "runs.parquet")
    assert {"arm", "estimator", "seed", "est.lambda_scale", "eval", "health", "health_evidence"} <= set(runs.columns)
    assert set(runs["health"]) == {"ok"}
    assert "Holm" in (tmp_path / "rep" / "report.md").read_text()


def test_eval_curve_places_periodic_and_final_evals_at_the_tokens_spent_by_then(tmp_path):
    from benchctl.results.train_run import eval_dir

    from .fixtures import write_train_run

    run = tmp_path / "run"
    write_train_run(run, train_config("grpo", 1), _verdicts([4, 4, 4]), steps=3, tokens_per_step=100)
    write_eval(eval_dir(run, 0), "arith", _verdicts([0, 0, 0]))
    write_eval(eval_dir(run, 2), "arith", _verdicts([2, 2, 2]))
    curve = build_report(_config(run)).tables["eval_curve"].sort_values("step")
    assert curve["step"].tolist() == [0, 2, 3]
    assert curve["tokens"].tolist() == [0.0, 200.0, 300.0]
    assert curve["pass@1"].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_a_baseline_that_matches_no_run_is_a_note_not_a_silent_empty_table(matrix):
    result = build_report(_config(matrix, baseline="dapo"))
    assert result.tables["comparisons"].empty
    assert any("--baseline dapo matches no run" in n for n in result.notes)
