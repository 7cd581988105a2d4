"""Run health on synthetic metric tables: each state from the metric that defines it, with its evidence."""

import numpy as np
import pandas as pd
import pytest

from benchctl.report import ReportConfig, build_report
from benchctl.report.health import Health, classify, summarize

from .fixtures import train_config, write_matrix

STEPS = 40


def _metrics(**cols) -> pd.DataFrame:
    """A healthy 40-step run (reward rising, entropy slowly falling, informative groups), columns overridden."""
    steps = np.arange(1, STEPS + 1)
    base = {
        "step": steps,
        "reward/mean": np.linspace(0.3, 0.6, STEPS),
        "acr/all": np.full(STEPS, 0.4),
        "policy/entropy": np.linspace(1.2, 0.6, STEPS),
        "policy/grad_norm": 0.5 + 0.1 * np.sin(steps),
        "loss/total": np.full(STEPS, -0.01),
        "update/rows_trained": np.full(STEPS, 40.0),
    }
    base.update({k.replace("__", "/"): v for k, v in cols.items()})
    return pd.DataFrame(base)


def _evals(*points) -> pd.DataFrame:
    return pd.DataFrame([{"step": s, "eval_task": "arith", "pass@1": v} for s, v in points])


def test_a_healthy_run_is_ok_with_no_evidence():
    assert classify(_metrics(), _evals((0, 0.2), (20, 0.3), (40, 0.35))) == Health("ok", "")


def test_held_out_pass1_under_a_quarter_of_step_0_is_collapsed():
    health = classify(_metrics(), _evals((0, 0.2), (20, 0.1), (40, 0.04)))
    assert health.state == "collapsed"
    assert "held-out pass@1 on arith 0.2 (step 0) -> 0.04 (step 40)" in health.evidence
    assert classify(_metrics(), _evals((0, 0.2), (40, 0.06))).state == "ok"  # 0.3x: not under a quarter


def test_entropy_falling_under_5pct_of_its_first_value_is_collapsed():
    entropy = np.r_[np.linspace(1.0, 0.1, 30), np.full(10, 0.02)]
    health = classify(_metrics(policy__entropy=entropy))
    assert health.state == "collapsed"
    assert "policy/entropy 1 (first) -> 0.02 (step 37-40)" in health.evidence
    floor = classify(_metrics(policy__entropy=np.full(STEPS, 5e-4)))  # never high, but deterministic
    assert floor.state == "collapsed" and "under the floor" in floor.evidence


def test_training_reward_falling_under_a_quarter_of_its_start_is_collapsed():
    reward = np.r_[np.full(10, 0.3), np.linspace(0.3, 0.0, 20), np.zeros(10)]
    health = classify(_metrics(reward__mean=reward))
    assert health.state == "collapsed" and "reward/mean 0.3 (step 1-4) -> 0 (step 37-40)" in health.evidence


def test_solving_no_held_out_problem_of_the_training_task_after_a_nonzero_start_is_collapsed():
    final = pd.DataFrame({"eval_task": ["arith", "arith"], "k": [1, 16], "pass@k": [0.0, 0.0]})
    health = classify(_metrics(), final=final, tasks=("arith",))
    assert health.state == "collapsed"
    assert "held-out pass@16 on arith = 0 in the evaluation reported (no problem solved)" in health.evidence
    assert "reward/mean started at 0.308 (step 1-3)" in health.evidence  # mean of linspace(0.3, 0.6, 40)[:3]
    other = classify(_metrics(), final=final, tasks=("math_train", "math500"))
    assert other.state == "ok"  # arith is not this run's task: it may just be too hard
    math = final.assign(eval_task="math500")  # the designated held-out task of math_train: same distribution
    assert classify(_metrics(), final=math, tasks=("math_train", "math500")).state == "collapsed"
    assert classify(_metrics(reward__mean=np.zeros(STEPS)), final=final, tasks=("arith",)).state == "ok"  # never solved
    some = final.assign(**{"pass@k": [0.0, 0.05]})  # pass@1 rounds to 0 but pass@16 does not: alive
    assert classify(_metrics(), final=some, tasks=("arith",)).state == "ok"


def test_nan_loss_at_a_trained_step_is_diverged():
    loss = np.full(STEPS, -0.01)
    loss[25:] = np.nan
    health = classify(_metrics(loss__total=loss))
    assert health == Health("diverged", "diverged: loss/total = nan at step 26 (15 steps)")


def test_nan_loss_where_no_row_was_trained_is_not_divergence():
    loss, rows = np.full(STEPS, -0.01), np.full(STEPS, 40.0)
    loss[10], rows[10] = np.nan, 0.0  # a step with every group degenerate logs no loss
    assert classify(_metrics(loss__total=loss, update__rows_trained=rows)).state == "ok"


def test_inf_gradient_norm_and_a_100x_blow_up_are_diverged():
    inf = np.full(STEPS, 0.5)
    inf[30] = np.inf
    assert classify(_metrics(policy__grad_norm=inf)).state == "diverged"
    spike = np.full(STEPS, 0.5)
    spike[33] = 80.0  # 160x the median
    health = classify(_metrics(policy__grad_norm=spike))
    assert health.state == "diverged"
    assert "policy/grad_norm 80 at step 34 = 160x the run's median 0.5" in health.evidence
    spike[33] = 40.0  # 80x: under the threshold
    assert classify(_metrics(policy__grad_norm=spike)).state == "ok"


def test_no_informative_group_in_the_last_quarter_is_stalled():
    acr = np.r_[np.full(28, 0.5), np.ones(12)]
    health = classify(_metrics(acr__all=acr))
    assert health == Health(
        "stalled", "stalled: no informative group in the last 10 steps (31-40): acr/all = 1 at each"
    )
    rows = np.r_[np.full(30, 40.0), np.zeros(10)]
    assert "update/rows_trained = 0" in classify(_metrics(update__rows_trained=rows)).evidence
    acr[-1] = 0.9  # one informative step in the window: not stalled
    assert classify(_metrics(acr__all=acr)).state == "ok"


def test_the_label_is_the_most_severe_state_and_the_evidence_lists_every_finding():
    loss = np.full(STEPS, -0.01)
    loss[-1] = np.inf
    health = classify(_metrics(loss__total=loss, acr__all=np.ones(STEPS)), _evals((0, 0.4), (40, 0.0)))
    assert health.state == "diverged"
    assert [part.split(":")[0] for part in health.evidence.split("; ")] == ["diverged", "collapsed", "stalled"]


def test_a_plain_eval_run_is_ok_and_short_runs_are_not_judged_on_noisy_windows():
    assert classify(None, _evals((-1, 0.0))).state == "ok"
    three = _metrics().iloc[:3].assign(**{"reward/mean": [0.6, 0.5, 0.0]})
    assert classify(three).state == "ok"  # fewer than 2 x 3 steps: the reward windows would be one noisy step


def test_summarize_names_the_seeds_of_each_state():
    assert summarize(["ok", "ok"], [1, 2]) == "ok"
    assert summarize(["collapsed", "ok", "stalled", "stalled"], [1, 2, 3, 4.0]) == (
        "collapsed: seed 1; stalled: seeds 3, 4"
    )


def test_report_marks_comparisons_whose_arm_has_a_collapsed_run(tmp_path):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    dead = {f"q{i}": [False] * 4 for i in range(5)}
    collapse = {"reward/mean": [0.5] * 4 + [0.3, 0.1] + [0.0] * 6, "acr/all": [0.5] * 6 + [1.0] * 6}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good) for s in (1, 2, 3)]
    cells += [(f"avspo-s{s}", train_config("avspo", s), good) for s in (2, 3)]
    cells += [("avspo-s1", train_config("avspo", 1), dead, collapse)]
    write_matrix(tmp_path / "results", cells, steps=12)
    out = tmp_path / "rep"
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), out=str(out), rliable_reps=100))
    runs = pd.read_parquet(out / "runs.parquet").set_index(["estimator", "seed"])
    assert runs.loc[("avspo", 1), "health"] == "collapsed"
    assert "reward/mean 0.5 (step 1-3) -> 0 (step 10-12)" in runs.loc[("avspo", 1), "health_evidence"]
    assert "stalled: no informative group in the last 3 steps (10-12)" in runs.loc[("avspo", 1), "health_evidence"]
    assert "held-out pass@4 on arith = 0" in runs.loc[("avspo", 1), "health_evidence"]
    assert (runs.drop(index=("avspo", 1))["health"] == "ok").all()
    cmp = pd.read_parquet(out / "comparisons.parquet")
    assert cmp["unhealthy"].all() and set(cmp["arm_health"]) == {"collapsed: seed 1"}
    assert set(cmp["baseline_health"]) == {"ok"}
    main = result.tables["main"].set_index("arm")
    assert (main.loc["avspo", "health"] == "\u26a0 collapsed: seed 1").all()
    assert (main.loc["grpo", "health"] == "ok").all()
    page = (out / "report.md").read_text()
    assert "avspo vs grpo (arm: collapsed: seed 1; baseline: ok)" in page
    assert "6 runs: 5 ok, 1 collapsed" in (out / "report.html").read_text()


@pytest.mark.parametrize("state", ["diverged", "stalled"])
def test_an_unhealthy_baseline_marks_every_comparison_against_it(tmp_path, state):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    bad = {"loss/total": [0.1] * 11 + [np.nan]} if state == "diverged" else {"acr/all": [0.5] * 8 + [1.0] * 4}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good, bad if s == 2 else {}) for s in (1, 2, 3)]
    cells += [(f"dgpo-s{s}", train_config("dgpo", s), good) for s in (1, 2, 3)]
    write_matrix(tmp_path / "results", cells, steps=12)
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), rliable_reps=100))
    cmp = result.tables["comparisons"]
    assert cmp["unhealthy"].all() and set(cmp["baseline_health"]) == {f"{state}: seed 2"}
    assert result.tables["main"].set_index("arm").loc["dgpo", "health"].str.contains(f"baseline grpo: {state}").all()
