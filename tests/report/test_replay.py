"""`benchctl replay`: re-scoring a run's logged rollouts, state carried step by step, mass bookkeeping."""

import numpy as np
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator
from benchctl.replay import ReplayConfig, run_replay, weighting
from benchctl.results.train_run import rollout_table, write_rollouts

from .fixtures import train_config, write_train_run


@pytest.fixture()
def run(tmp_path):
    """A dr_grpo-like run: logged advantage = r - group mean (fixture), 6 steps of 4 groups x 4."""
    path = tmp_path / "run"
    write_train_run(path, train_config("dr_grpo", 1) | {"prompts_per_step": 4}, {"q": [True]}, steps=6)
    return path


def test_replaying_the_runs_own_estimator_reproduces_the_logged_advantages(run):
    result = run_replay(ReplayConfig(run=str(run), estimators="dr_grpo,grpo"))
    summary = result.summary.set_index("estimator")
    assert list(summary.index) == ["logged", "dr_grpo", "grpo"]
    assert summary.loc["dr_grpo", "max_diff_logged"] == 0.0
    assert summary.loc["dr_grpo", "steps"] == 6


def test_stateful_estimators_carry_state_across_steps_as_in_training(run):
    result = run_replay(ReplayConfig(run=str(run), estimators="ha_dw"))
    est = get_estimator("ha_dw")
    from benchctl.replay import step_arrays
    from benchctl.results.train_run import iter_rollout_steps

    expected = []
    for _, table in iter_rollout_steps(run):
        rewards, _ = step_arrays(table)
        expected.append(np.abs(np.asarray(est.advantages(rewards))).mean())
    got = result.steps[result.steps["estimator"] == "ha_dw"]["abs_per_rollout"].to_numpy()
    assert got == pytest.approx(expected)
    assert any(c.startswith("diag/") for c in result.steps.columns)


def test_weighting_splits_mass_between_correct_wrong_hard_easy_and_degenerate_groups():
    rewards = np.array([[1.0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])  # hard, easy, degenerate (all wrong)
    adv = np.array([[3.0, -1, -1, -1], [1, 1, 1, -3], [0.5, 0.5, 0.5, 0.5]])
    w = weighting(rewards, adv, correct_above=0.0, hard_below=0.5)
    total = 6 + 6 + 2
    assert w["share_correct"] == pytest.approx((3 + 3) / total)
    assert w["share_hard"] == pytest.approx(6 / 12)
    assert w["degenerate_mass"] == pytest.approx(2 / total)
    assert w["degenerate_groups"] == pytest.approx(1 / 3)
    assert (w["signed_correct"], w["signed_wrong"]) == (6.0, -6.0 + 2.0)


def test_grpo_puts_no_mass_on_degenerate_groups(tmp_path):
    rewards = np.array([[1.0, 0, 1, 0], [1, 1, 1, 1]])
    write_rollouts(
        tmp_path,
        1,
        rollout_table(1, ["a", "b"], rewards, np.zeros_like(rewards), np.ones((2, 4)), ["stop"] * 8, ["x"] * 8),
    )
    result = run_replay(ReplayConfig(run=str(tmp_path), estimators="grpo"))
    assert result.steps.set_index("estimator").loc["grpo", "degenerate_mass"] == 0.0


def test_replay_writes_tables_and_plot(run, tmp_path):
    result = run_replay(ReplayConfig(run=str(run), estimators="grpo", out=str(tmp_path / "o")))
    assert {p.name for p in result.files} == {"replay_steps.parquet", "replay_summary.parquet", "replay.png"}
    assert (tmp_path / "o" / "replay.png").read_bytes()[:4] == b"\x89PNG"


def test_replay_without_rollouts_or_with_an_unknown_estimator_is_one_line_exit_2(run, tmp_path):
    with pytest.raises(BenchctlError, match="no rollouts"):
        run_replay(ReplayConfig(run=str(tmp_path / "empty")))
    result = CliRunner().invoke(app, ["replay", str(run), "--estimators", "grpo,nosuch"])
    assert result.exit_code == 2 and "nosuch" in result.output and "grpo" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_replay_cli_hands_the_library_the_parsed_config(monkeypatch):
    import benchctl.replay

    seen = {}
    monkeypatch.setattr(
        benchctl.replay,
        "run_replay",
        lambda c: seen.setdefault("c", c) and None or type("R", (), {"rich_table": lambda self: "", "files": []})(),
    )
    result = CliRunner().invoke(
        app, ["replay", "R", "--estimators", "grpo,ha_dw(lambda_scale=1.5)", "--hard-below", "0.25"]
    )
    assert result.exit_code == 0, result.output
    assert seen["c"] == ReplayConfig(
        run="R",
        estimators="grpo,ha_dw(lambda_scale=1.5)",
        hard_below=0.25,
        sources={
            "run": "flag",
            "estimators": "flag",
            "out": "default",
            "correct_above": "default",
            "hard_below": "flag",
        },
    )


def test_replay_hands_each_groups_problem_id_to_a_history_aware_estimator(run):
    """DBB replayed = DBB fed each step's problem ids in group order, not the row-number fallback (the fixture's
    problems are new every step, so rows 0..3 would wrongly share a history)."""
    from benchctl.replay import step_arrays, step_prompt_ids
    from benchctl.results.train_run import iter_rollout_steps

    result = run_replay(ReplayConfig(run=str(run), estimators="dbb"))
    est, fallback, expected, by_row = get_estimator("dbb"), get_estimator("dbb"), [], []
    for _, table in iter_rollout_steps(run):
        rewards, _ = step_arrays(table)
        ids = step_prompt_ids(table)
        expected.append(np.abs(np.asarray(est.advantages(rewards, prompt_ids=ids))).mean())
        by_row.append(np.abs(np.asarray(fallback.advantages(rewards))).mean())
    got = result.steps[result.steps["estimator"] == "dbb"]["abs_per_rollout"].to_numpy()
    assert got == pytest.approx(expected, rel=1e-12)
    assert got != pytest.approx(by_row, rel=1e-6) and fallback.mechanisms() == {"dbb": 1.0}
    assert "diag/dbb_history_frac" in result.steps.columns
