"""The planted control (`reward_flip`): a noisy verifier flips training rewards at a known rate, the same draws
for every arm of a seed, and never touches the task's grade that reward/mean and the held-out evaluation use."""

import numpy as np
import pytest

from benchctl.errors import BenchctlError
from benchctl.trainers import build_config
from benchctl.trainers.shaping import noisy_verifier


def test_no_flip_returns_the_grades_themselves():
    correct = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert noisy_verifier(correct, 0.0, (1, 1, 0)) is correct


def test_flips_happen_at_the_given_rate_and_only_flip():
    correct = (np.random.default_rng(0).random((400, 8)) < 0.3).astype(float)
    said = noisy_verifier(correct, 0.2, (3, 7, 128))
    flipped = said != correct
    assert set(np.unique(said)) <= {0.0, 1.0}
    assert np.array_equal(said[flipped], 1.0 - correct[flipped])
    assert abs(flipped.mean() - 0.2) < 4 * np.sqrt(0.2 * 0.8 / flipped.size)


def test_the_same_key_flips_the_same_entries_and_another_key_others():
    correct = np.zeros((50, 8))
    a, b, c = (noisy_verifier(correct, 0.3, key) for key in ((1, 2, 64), (1, 2, 64), (1, 3, 64)))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("flip", [-0.1, 1.5])
def test_a_flip_probability_outside_0_1_is_refused(flip):
    with pytest.raises(BenchctlError, match="reward_flip"):
        build_config(flag_values={"reward_flip": flip})


def test_a_noisy_run_logs_that_its_verifier_acted_and_reward_mean_stays_the_true_accuracy(tiny_model, tmp_path):
    from benchctl.results import train_run
    from benchctl.trainers import train

    flags = {"prompts_per_step": 8, "group_size": 4, "steps": 2, "save_every": 0, "progress": False}
    result = train(build_config(flag_values={**flags, "reward_flip": 0.5, "out": str(tmp_path / "noisy")}))
    assert all(row["mechanism/reward_flip/acted"] == 1.0 for row in result.metrics)
    rollouts = train_run.read_rollouts(tmp_path / "noisy").to_pandas()  # the rewards the estimator saw
    for row in result.metrics:
        seen = rollouts[rollouts.step == row["step"]].reward.mean()
        assert row["reward/mean"] != pytest.approx(seen) or seen in (0.0, 1.0)


def test_mechanism_fractions_are_the_share_of_steps_each_mechanism_acted_on():
    import pandas as pd

    from benchctl.report.health import mechanism_activity

    rows = [{"step": 1, "mechanism/avspo/acted": 0.0}, {"step": 2, "mechanism/avspo/acted": 1.0, "x": 2.0}]
    rows += [{"step": 3, "mechanism/avspo/acted": 0.0, "mechanism/reward_flip/acted": 1.0}]
    assert dict(mechanism_activity(pd.DataFrame(rows)).fractions) == {"avspo": pytest.approx(1 / 3), "reward_flip": 1.0}
    assert dict(mechanism_activity(pd.DataFrame([{"step": 1}])).fractions) == {}


def test_train_warns_at_the_end_when_a_mechanism_never_acted(monkeypatch, tmp_path):
    from pathlib import Path

    from typer.testing import CliRunner

    from benchctl.cli import app
    from benchctl.trainers.loop import TrainResult

    rows = tuple({"step": s, "reward/mean": 0.2, "mechanism/avspo/acted": 0.0} for s in (1, 2, 3))
    monkeypatch.setattr("benchctl.trainers.train", lambda cfg, display=None: TrainResult(Path("r"), 3, rows, False))
    result = CliRunner().invoke(app, ["train", "--estimator", "avspo", "--out", str(tmp_path / "r"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "warning: avspo acted on 0% of the steps (under 5%): this run trained as its base" in result.output
