"""The group-sequential design of the claims: the Lan-DeMets O'Brien-Fleming boundary spends exactly its alpha at
every look, the looks number their seeds after the first wave, and a claim keeps the verdict of the look that
decided it."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchctl.errors import BenchctlError
from benchctl.report.claims import EXCLUDED, Claim
from benchctl.report.sequential import (
    SequentialDesign,
    boundary,
    is_decided,
    look_confidences,
    sequential_claims,
    spent_alpha,
    t_boundary,
)


@pytest.mark.parametrize("times", [(0.5, 0.75, 1.0), (0.4, 0.6, 0.8, 1.0), (3 / 9, 6 / 9, 1.0)])
def test_boundary_crossing_probability_equals_the_spent_alpha_at_every_look(times):
    c, t = np.array(boundary(times)), np.array(times)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))  # Corr(Z_j, Z_k) = sqrt(t_j / t_k)
    for k in range(1, len(t) + 1):
        inside = stats.multivariate_normal(np.zeros(k), cov[:k, :k]).cdf(c[:k], lower_limit=-c[:k])
        assert 1.0 - inside == pytest.approx(spent_alpha(times[k - 1]), abs=2e-5)


def test_obrien_fleming_spending_is_nearly_nothing_early_and_alpha_at_full_information():
    assert spent_alpha(0.0) == 0.0 and spent_alpha(1.0) == pytest.approx(0.05)
    assert spent_alpha(0.5) == pytest.approx(2 * stats.norm.sf(1.959964 * np.sqrt(2)), rel=1e-5)
    assert boundary((0.5, 1.0))[0] == pytest.approx(1.959964 * np.sqrt(2), rel=1e-5)


def test_one_look_at_full_information_is_the_fixed_design():
    assert look_confidences((1.0,)) == pytest.approx((0.95,))
    assert SequentialDesign((1, 2, 3, 4), 4).confidences() == pytest.approx((0.95,))


@pytest.mark.parametrize("first, top, wave", [((1, 2, 3), 9, 3), ((1, 2, 3, 4), 8, 2)])
def test_t_boundary_spends_the_lan_demets_alpha_on_paired_t_statistics_of_fresh_seeds(first, top, wave):
    design = SequentialDesign(first, top, wave)
    seeds = tuple(len(s) for s in design.looks())
    c = np.array(t_boundary(seeds, top))
    assert c[0] == pytest.approx(stats.t.isf(spent_alpha(seeds[0] / top) / 2, seeds[0] - 1))
    x = np.random.default_rng(7).standard_normal((100_000, top))  # not the boundary's own paths
    n = np.array(seeds)
    mean = np.cumsum(x, axis=1)[:, n - 1] / n
    sd = np.sqrt((np.cumsum(x * x, axis=1)[:, n - 1] - n * mean**2) / (n - 1))
    crossed = np.maximum.accumulate(np.abs(mean / (sd / np.sqrt(n))) >= c, axis=1).mean(axis=0)  # (K,)
    spent = [spent_alpha(k / top) for k in seeds]
    assert crossed == pytest.approx(spent, abs=0.0025)  # Monte Carlo se <= 0.0007


def test_later_looks_get_wider_confidence_than_the_fixed_design_and_narrower_than_the_first():
    conf = SequentialDesign((1, 2, 3, 4), 8).confidences()
    assert conf[0] > conf[1] > conf[2] > 0.95


def test_waves_number_their_seeds_after_the_first_wave_up_to_max_seeds():
    assert SequentialDesign((3, 1, 2), 7, 2).looks() == ((1, 2, 3), (1, 2, 3, 4, 5), (1, 2, 3, 4, 5, 6, 7))
    assert SequentialDesign((1, 2), 2).looks() == ((1, 2),)


@pytest.mark.parametrize(
    "first, top, wave, message",
    [((1, 2, 3, 4), 3, 2, "--max-seeds 3 is below the matrix's 4 seeds"), ((1, 2), 4, 0, "--wave-seeds")],
)
def test_a_design_below_the_first_wave_or_without_waves_is_refused(first, top, wave, message):
    with pytest.raises(BenchctlError, match=message):
        SequentialDesign(first, top, wave)


def test_holds_does_not_hold_and_effect_excluded_decide_and_inconclusive_does_not():
    assert all(is_decided(v) for v in ("holds", "does not hold", EXCLUDED)) and not is_decided("inconclusive")


def _data(per_seed: dict[str, list[float]]):
    """Runs with per-seed values of a training metric (seeds 1..S), one run per arm and seed."""
    runs, metrics = [], []
    for label, values in per_seed.items():
        for seed, value in enumerate(values, 1):
            runs.append({"run_id": len(runs), "estimator_label": label, "seed": seed})
            metrics.append({"run_id": len(runs) - 1, "step": 1, "score": value})
    return SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(), metrics=pd.DataFrame(metrics))


def _claim(**kw) -> Claim:
    return Claim(paper="0000.00000", claim="x", metric="score", **{"baseline": "grpo", **kw})


def test_a_claim_decided_at_the_first_look_keeps_that_looks_seeds_and_interval():
    rng = np.random.default_rng(0)
    base = rng.normal(0.0, 0.01, 8)
    wobble = np.array([0.05, -0.04, 0.03, -0.05, 0.04, -0.03, 0.02, -0.02])  # no effect: never decided
    big = {"grpo": list(base), "new": list(base + 1.0 + rng.normal(0, 0.01, 8)), "near": list(base + wobble)}
    table = sequential_claims(_data(big), [_claim(arm="new"), _claim(arm="near")], SequentialDesign((1, 2, 3, 4), 8))
    new, near = table.iloc[0], table.iloc[1]
    assert new.verdict == "holds" and new.decided and new.look == 1 and new.seeds_at_decision == 4
    assert new.confidence == pytest.approx(SequentialDesign((1, 2, 3, 4), 8).confidences()[0])
    assert new.alpha_spent == pytest.approx(spent_alpha(0.5)) and "decided at look 1 of 3" in new.reason
    assert near.verdict == "inconclusive" and near.look == 3 and near.seeds_at_decision == 8


def test_a_claim_never_decided_reports_its_last_looks_verdict_and_says_so():
    values = {"grpo": [0.0] * 6, "new": [0.05, -0.04, 0.03, -0.05, 0.04, -0.03]}
    row = sequential_claims(_data(values), [_claim(arm="new")], SequentialDesign((1, 2, 3, 4), 6)).iloc[0]
    assert row.verdict == "inconclusive" and not row.decided and row.look == 2 and row.seeds == 6
    assert "not decided by max seeds (6)" in row.reason and row.alpha_spent == pytest.approx(0.05)


def test_looks_stop_where_the_runs_stop_and_say_the_claim_is_not_decided_yet():
    values = {"grpo": [0.0] * 4, "new": [0.05, -0.04, 0.03, -0.05]}
    row = sequential_claims(_data(values), [_claim(arm="new")], SequentialDesign((1, 2, 3, 4), 8)).iloc[0]
    assert row.look == 1 and row.looks == 3 and "not decided yet at look 1 of 3" in row.reason


def test_a_claim_whose_premise_is_excluded_is_decided_inconclusive_with_the_premise():
    values = {"grpo": [0.0] * 8, "g": [0.001 * s for s in range(8)], "p": [0.002 * s for s in range(8)]}
    premise = _claim(arm="g", id="g_beats", stated_effect=0.5)
    parity = _claim(arm="p", baseline="g", direction="at_least", margin=0.1, requires="g_beats")
    table = sequential_claims(_data(values), [premise, parity], SequentialDesign((1, 2, 3, 4), 8))
    assert table.iloc[0].verdict == EXCLUDED and table.iloc[0].look == 1
    row = table.iloc[1]
    assert row.verdict == "inconclusive" and row.decided and row.look == 1 and "premise not established" in row.reason


def test_the_analysis_after_an_earlier_wave_ignores_the_seeds_of_later_waves():
    values = {"grpo": [0.0] * 8, "new": [0.05, -0.04, 0.03, -0.05, 0.04, -0.03, 0.02, -0.02]}
    design = SequentialDesign((1, 2, 3, 4), 8)
    row = sequential_claims(_data(values), [_claim(arm="new")], design, last_look=1).iloc[0]
    assert row.look == 1 and row.seeds == 4 and "not decided yet at look 1 of 3" in row.reason


# (arm, lr) -> (validation accuracy on seeds 1-4, on seeds 5-8, test accuracy): "new" looks best at lr 1e-4 on the
# first wave's seeds and at 3e-4 once seeds 5-8 are in, so a choice that saw the later waves flips
SWEPT = {("grpo", 1e-4): (0.3, 0.3, 0.3), ("new", 1e-4): (0.8, 0.05, 0.95), ("new", 3e-4): (0.5, 0.5, 0.3)}


def _swept_results(tmp_path):
    import json

    from benchctl.report.sequential import RECORD_FILE, RECORD_KIND, Selection
    from benchctl.results.index import index_row, write_index
    from benchctl.results.train_run import eval_dir
    from tests.report.fixtures import train_config, write_eval, write_train_run

    results, rows = tmp_path / "results", []
    for (arm, lr), (early, late, p_test) in SWEPT.items():
        for seed in range(1, 9):
            rng = np.random.default_rng([seed, int(lr * 1e5), len(arm)])
            config = {**train_config(arm, seed), "lr": lr, "task": "arith"}
            run = results / "runs" / f"{arm}-lr{lr}-s{seed}"
            write_train_run(run, config, {f"q{i}": list(rng.random(8) < p_test) for i in range(30)}, rng_seed=seed)
            p_val = early if seed <= 4 else late
            val = {f"v{i}": list(rng.random(8) < p_val) for i in range(30)}
            write_eval(eval_dir(run), "arith_val", val, model=run.name, seed=seed)
            rows.append(index_row(results, run, config, "done"))
    write_index(results, rows)
    design = SequentialDesign((1, 2, 3, 4), 8, 2)
    record = {"kind": RECORD_KIND, "design": design.as_record(), "selection": Selection().as_record()}
    (results / RECORD_FILE).write_text(json.dumps(record))
    return results, design


@pytest.mark.slow
def test_a_swept_setting_is_chosen_at_each_look_on_its_seeds_and_the_report_reproduces_the_looks_choice(tmp_path):
    from typer.testing import CliRunner

    from benchctl.cli import app
    from benchctl.matrix.waves import analyse

    results, design = _swept_results(tmp_path)
    claim = Claim(paper="0000.00000", claim="new beats grpo", arm="new", baseline="grpo", eval_task="arith")
    (tmp_path / "c.yaml").write_text(
        "claims:\n  - {paper: '0000.00000', claim: new beats grpo, arm: new, baseline: grpo, eval_task: arith}\n"
    )
    look = analyse(results, [claim], design, 1)  # what the matrix run decided after wave 1
    assert look.attrs["settings"][0]["new"] == {"lr=0.0001": "1,2,3,4"}  # the first wave's seeds choose 1e-4
    out = tmp_path / "report"
    args = ["report", str(results), "--claims", str(tmp_path / "c.yaml"), "--out", str(out), "--k", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    settings = pd.read_parquet(out / "settings.parquet")
    assert set(settings[settings["chosen"] & (settings["arm"] == "new")]["setting"]) == {"lr=0.0003"}  # all seeds
    row, first = pd.read_parquet(out / "claims.parquet").iloc[0], look.iloc[0]
    assert first.decided and first.look == 1 and first.verdict == "holds" and first.effect > 0.5
    assert (row.verdict, row.look, row.seeds) == (first.verdict, first.look, first.seeds)
    assert row.effect == pytest.approx(first.effect) and row.low == pytest.approx(first.low)


def test_the_skewed_boundary_holds_the_level_on_exponential_seeds_where_the_normal_one_does_not():
    design, normal = SequentialDesign((1, 2, 3, 4), 8, 2, shape="skewed"), SequentialDesign((1, 2, 3, 4), 8, 2)
    seeds = tuple(len(s) for s in design.looks())
    x = np.random.default_rng(7).standard_exponential((100_000, 8)) - 1.0  # not the boundary's own paths
    n = np.array(seeds)
    mean = np.cumsum(x, axis=1)[:, n - 1] / n
    sd = np.sqrt((np.cumsum(x * x, axis=1)[:, n - 1] - n * mean**2) / (n - 1))
    t_stat = np.abs(mean / (sd / np.sqrt(n)))
    level = {
        d.shape: (t_stat >= np.array(t_boundary(seeds, 8, 0.05, d.shape))).any(axis=1).mean() for d in (design, normal)
    }
    assert level["skewed"] == pytest.approx(0.05, abs=0.0035)  # Monte Carlo se 0.0007
    assert level["normal"] > 0.11
    assert design.confidences()[-1] > normal.confidences()[-1]


def test_an_unknown_seed_shape_is_refused_with_the_choices():
    with pytest.raises(BenchctlError, match="choose one of: normal, skewed"):
        SequentialDesign((1, 2, 3), 6, shape="lognormal")
