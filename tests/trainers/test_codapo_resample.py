"""CoDaPO's resampling sampler (`benchctl.trainers.focus`): the authors' selection and refill, transcribed from
tmlr-group/CoDaPO @ 210c2051f54de76fdf92eb4cef9bb919dd404789 codapo/ray_trainer.py (`fit`, even/odd steps), the
refusal beside dynamic sampling, and a real run that re-rolls the top questions on every second step and resumes
bit-exactly across a focus step."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from benchctl.errors import BenchctlError
from benchctl.estimators.codapo import question_value
from benchctl.trainers import TrainConfig, build_config
from benchctl.trainers.focus import next_focus, seed_keys, tile
from benchctl.trainers.plan import resolve


def authors_refill(selected, repeat_count, original_batch_size):
    selected_entity_indices, question_idx = [], 0
    while len(selected_entity_indices) < original_batch_size:
        if question_idx < len(selected):
            for _ in range(repeat_count):
                if len(selected_entity_indices) < original_batch_size:
                    selected_entity_indices.extend([selected[question_idx]])
            question_idx += 1
        else:
            question_idx = 0
    return selected_entity_indices[:original_batch_size]


def authors_top(weights, percentile):
    question_weights = torch.tensor(weights, dtype=torch.float64)
    weight_threshold = torch.quantile(question_weights, percentile).item()
    return [i for i, w in enumerate(weights) if w >= weight_threshold]


@dataclass(frozen=True)
class FakeSampler:  # the three fields next_focus reads
    focus_quantile: float | None
    focus_repeat: int
    prompts_per_step: int


@pytest.mark.parametrize("seed", range(8))
def test_selection_and_refill_equal_the_authors_code(seed):
    rng = np.random.default_rng(seed)
    p, g = int(rng.integers(2, 20)), int(rng.integers(2, 9))
    rewards = (rng.random((p, g)) < rng.random((p, 1))).astype(float)
    logprob = -rng.exponential(0.5, size=(p, g)) if seed < 4 else np.zeros((p, g))  # zeros: many tied values
    percentile, repeat = float(rng.choice([0.5, 0.75, 0.9])), int(rng.integers(1, 6))
    positions = tuple(int(x) for x in rng.permutation(1000)[:p])
    got = next_focus(FakeSampler(percentile, repeat, p), rewards, logprob, positions, ())
    weights = question_value(rewards, logprob, 0.1).tolist()  # the authors rank the weights with the offset
    top = [positions[i] for i in authors_top(weights, percentile)]
    assert list(got) == authors_refill(top, repeat, p)
    assert tile(top, repeat, p) == got


def test_a_focus_step_is_followed_by_a_normal_step_and_off_means_never():
    rewards, logprob = np.array([[1.0, 0.0], [1.0, 1.0]]), np.zeros((2, 2))
    assert next_focus(FakeSampler(0.75, 4, 2), rewards, logprob, (5, 6), focus=(5, 5)) == ()
    assert next_focus(FakeSampler(None, 4, 2), rewards, logprob, (5, 6), focus=()) == ()
    assert next_focus(FakeSampler(0.75, 4, 2), rewards, logprob, (5, 6), focus=()) == (5, 5)


def test_each_copy_of_a_question_gets_its_own_seed_key_and_unique_positions_keep_the_old_keys():
    @dataclass
    class P:
        id: str

    batch = [P("a"), P("a"), P("b")]
    assert seed_keys(3, (7, 7, 9), batch) == ["3/7/a", "3/7/a/1", "3/9/b"]


def test_codapo_resample_beside_dynamic_sampling_is_one_line_naming_the_valid_combinations():
    with pytest.raises(BenchctlError, match="codapo_resample cannot run beside dynamic_sampling; valid: one of"):
        resolve(TrainConfig(codapo_resample=True, dynamic_sampling=True))


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5])
def test_codapo_percentile_outside_the_open_unit_interval_is_refused(value):
    with pytest.raises(BenchctlError, match="codapo_percentile"):
        build_config(flag_values={"codapo_resample": True, "codapo_percentile": value})


def test_sampler_settings_without_the_sampler_are_reported_inert():
    from benchctl.trainers.plan import config_warnings

    plan = resolve(build_config(flag_values={"codapo_repeat": 2}))
    assert list(plan.inert) == ["codapo_repeat=2"]
    assert "codapo_percentile / codapo_repeat have no effect: codapo_resample is off" in config_warnings(plan)


@pytest.mark.slow
def test_a_run_rerolls_the_top_questions_every_second_step_and_resumes_bit_exactly(tmp_path):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from benchctl.trainers.loop import train

    settings = {"steps": 3, "prompts_per_step": 4, "group_size": 4, "estimator": "codapo", "codapo_resample": True}
    whole = train(build_config(flag_values={**settings, "out": str(tmp_path / "a")})).run
    train(build_config(flag_values={**settings, "steps": 1, "out": str(tmp_path / "b")}))
    part = train(build_config(flag_values={"resume": str(tmp_path / "b"), "steps": 3})).run
    rows = pq.read_table(whole / "train_metrics.parquet").to_pylist()
    assert [r["mechanism/codapo_resample/acted"] for r in rows] == [0.0, 1.0, 0.0]
    ids = ds.dataset(whole / "rollouts").to_table().to_pandas().groupby("step").problem_id.apply(list)
    first, second = set(ids[1]), ids[2]
    assert set(second) < first and len(second) == 4 * 4  # P groups of G from the kept questions only
    again = ds.dataset(part / "rollouts").to_table().to_pandas()
    before = ds.dataset(whole / "rollouts").to_table().to_pandas()
    key = ["step", "group", "sample"]
    assert before.sort_values(key).completion.tolist() == again.sort_values(key).completion.tolist()


def test_no_selected_question_gives_a_normal_step_instead_of_an_endless_refill():
    assert tile([], 4, 64) == ()
