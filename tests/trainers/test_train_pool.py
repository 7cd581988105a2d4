"""`train_pool` (`--train-pool N`): a run trains on a fixed subset of N of the task's training problems, picked by the
run's seed (the first N of its unpooled epoch-0 order), and cycles through it in epochs, each a new seeded
permutation; without it the data order is the one of every earlier release. Refused in one line (exit 2) when not a
positive integer or above the task's size, on `benchctl train` and for a matrix cell before any starts; a resume
may not change it and continues the pool's stream exactly. On a pool, DBB's per-prompt history (arXiv:2603.18444)
acts from the second epoch on."""

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.matrix.runner import check_cells
from benchctl.matrix.spec import parse_matrix
from benchctl.trainers import build_config
from benchctl.trainers.build import draw, preflight, train_task, training_pool
from benchctl.trainers.config import CHANGES, settings
from benchctl.trainers.plan import resolve

runner = CliRunner()


@pytest.fixture(scope="module")
def problems():
    return train_task("arith_mix").load()  # the testbed's 10,000 training problems


def test_the_pool_holds_n_distinct_problems_of_the_task(problems):
    pool = training_pool(problems, 250, seed=1)
    ids = [p.id for p in pool]
    assert len(ids) == len(set(ids)) == 250
    assert set(ids) <= {p.id for p in problems}


def test_the_pool_is_what_the_unpooled_order_draws_first(problems):
    pool = training_pool(problems, 64, seed=3)
    assert {p.id for p in pool} == {draw(problems, 3, pos).id for pos in range(64)}


def test_each_epoch_is_a_permutation_of_the_pool_in_a_new_order(problems):
    pool = training_pool(problems, 50, seed=2)
    epochs = [[draw(pool, 2, e * 50 + i).id for i in range(50)] for e in range(4)]
    for ids in epochs:
        assert sorted(ids) == sorted(p.id for p in pool)  # every prompt once an epoch, nothing else
    assert len({tuple(ids) for ids in epochs}) == 4  # each epoch its own order


def test_the_pool_and_its_order_are_fixed_by_the_seed(problems):
    def stream(seed):
        pool = training_pool(problems, 100, seed)
        return [draw(pool, seed, pos).id for pos in range(300)]

    assert stream(5) == stream(5)
    assert set(stream(5)) != set(stream(6))  # another seed, another pool


def test_no_pool_leaves_the_data_order_untouched(problems):
    assert training_pool(problems, None, seed=1) is problems
    assert training_pool(problems, len(problems), seed=1) == problems  # the whole task, in the task's order


@pytest.mark.parametrize(
    "value,message",
    [("0", "train_pool=0 is out of range"), ("-5", "train_pool=-5 is out of range"), ("2.5", "valid integer")],
)
def test_a_bad_pool_is_one_line_exit_2_before_any_work(value, message, tmp_path):
    result = runner.invoke(app, ["train", "--train-pool", value, "--out", str(tmp_path / "run"), "--no-progress"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and message in lines[0], result.output
    assert not (tmp_path / "run").exists()


def test_a_pool_larger_than_the_task_is_refused_naming_the_valid_range(tmp_path):
    args = ["train", "--task", "arith", "--train-pool", "1001", "--out", str(tmp_path / "run"), "--no-progress"]
    result = runner.invoke(app, args)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "train_pool=1001 exceeds the 1000 training problems of arith; valid: 1..1000" in lines[0]
    assert not (tmp_path / "run").exists()
    with pytest.raises(BenchctlError, match="exceeds the 1000 training problems"):
        preflight(resolve(build_config(flag_values={"task": "arith", "train_pool": 1001})))


def test_a_matrix_cell_sets_the_pool_under_train_and_a_too_large_one_stops_the_matrix_before_any_cell(tmp_path):
    spec = {
        "models": ["tiny"],
        "task": "arith",
        "estimators": {"grpo": {}, "dbb_pool": {"estimator": "dbb", "train": {"train_pool": 200}}},
        "seeds": [1],
    }
    cells = parse_matrix(spec, "m.yaml").cells
    assert [c.train_values().get("train_pool") for c in cells] == [None, 200]
    check_cells(cells)
    spec["estimators"]["dbb_pool"]["train"]["train_pool"] = 5000
    with pytest.raises(BenchctlError, match="train_pool=5000 exceeds the 1000 training problems of arith"):
        check_cells(parse_matrix(spec, "m.yaml").cells)


def test_the_pool_is_part_of_what_is_trained():
    assert "train_pool" in settings("never", "train") and CHANGES[0] == "never"


@pytest.mark.vllm
@pytest.mark.slow
def test_a_pooled_run_cycles_its_pool_dbb_acts_from_epoch_two_and_a_resume_is_exact(tmp_path):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from benchctl.trainers.loop import train

    settings_ = {"steps": 4, "prompts_per_step": 4, "group_size": 4, "estimator": "dbb", "train_pool": 8}
    whole = train(build_config(flag_values={**settings_, "out": str(tmp_path / "a")})).run
    train(build_config(flag_values={**settings_, "steps": 1, "out": str(tmp_path / "b")}))
    with pytest.raises(BenchctlError, match="the run was made with train_pool=8"):
        build_config(flag_values={"resume": str(tmp_path / "b"), "train_pool": 16})
    part = train(build_config(flag_values={"resume": str(tmp_path / "b"), "steps": 4})).run
    rows = pq.read_table(whole / "train_metrics.parquet").to_pylist()
    assert [r["mechanism/dbb/acted"] for r in rows] == [0.0, 0.0, 1.0, 1.0]  # epochs: steps 1-2, steps 3-4
    rollouts = ds.dataset(whole / "rollouts").to_table().to_pandas()
    ids = rollouts.groupby("step").problem_id.apply(set)
    assert len(ids[1] | ids[2]) == 8 and ids[1] | ids[2] == ids[3] | ids[4]  # the pool, once an epoch
    again = ds.dataset(part / "rollouts").to_table().to_pandas()
    key = ["step", "group", "sample"]
    for column in ("problem_id", "completion"):
        assert rollouts.sort_values(key)[column].tolist() == again.sort_values(key)[column].tolist()
    shift = [pq.read_table(run / "train_metrics.parquet")["est/dbb_shift"].to_pylist() for run in (whole, part)]
    assert shift[0] == shift[1]  # the estimator's history is restored with the data position


def test_the_verl_launch_writes_the_same_pool_as_its_training_data():
    from benchctl.integrations.verl_launch import task_data

    cfg = build_config(flag_values={"task": "arith", "train_pool": 40, "seed": 4})
    train, _val = task_data(cfg)
    want = {p.id for p in training_pool(train_task("arith").load(), 40, seed=4)}
    ids = [row["extra_info"]["problem_id"] for row in train]
    assert len(ids) == 40 and set(ids) == want
