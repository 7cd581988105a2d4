"""The storage layer for train runs, eval folders and the matrix index: round trips, resume, discovery."""

import ast
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from benchctl.errors import BenchctlError
from benchctl.results import index, runinfo, train_run

from .fixtures import train_config, write_eval, write_matrix, write_train_run

PACKAGE = Path(__file__).resolve().parents[2] / "benchctl"


def test_metrics_table_puts_step_first_then_documented_order_with_est_columns_after_acr(tmp_path):
    rows = [{"time/step": 1.0, "step": 1, "est/tau": 0.5, "reward/mean": 0.25, "acr/all": 0.1, "custom": 3}]
    train_run.write_train_metrics(tmp_path, rows)
    table = train_run.read_train_metrics(tmp_path)
    assert table.column_names == ["step", "reward/mean", "acr/all", "est/tau", "time/step", "custom"]
    assert str(table.schema.field("step").type) == "int64"
    assert all(str(table.schema.field(c).type) == "double" for c in table.column_names[1:])


def test_missing_metric_at_a_step_is_null_not_zero(tmp_path):
    train_run.write_train_metrics(tmp_path, [{"step": 1, "est/tau": 0.5}, {"step": 2}])
    assert train_run.read_train_metrics(tmp_path).column("est/tau").to_pylist() == [0.5, None]


def test_rollout_table_flattens_groups_row_major_with_the_documented_schema(tmp_path):
    rewards = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    table = train_run.rollout_table(
        7, ["a", "b"], rewards, rewards - 0.5, [[3, 4, 5], [6, 7, 8]], [["stop"] * 3, ["length"] * 3], ["t"] * 6
    )
    assert table.schema == train_run.ROLLOUT_SCHEMA
    assert table.column("group").to_pylist() == [0, 0, 0, 1, 1, 1]
    assert table.column("sample").to_pylist() == [0, 1, 2, 0, 1, 2]
    assert table.column("problem_id").to_pylist() == ["a"] * 3 + ["b"] * 3
    assert table.column("num_tokens").to_pylist() == [3, 4, 5, 6, 7, 8]
    train_run.write_rollouts(tmp_path, 7, table)
    assert [s for s, _ in train_run.rollout_parts(tmp_path)] == [7]
    assert train_run.read_rollouts(tmp_path).equals(table)


def test_truncate_after_drops_metrics_and_rollouts_logged_after_the_checkpoint(tmp_path):
    write_train_run(tmp_path / "run", train_config("grpo", 1), {"q": [True, False]}, steps=3)
    run = tmp_path / "run"
    assert train_run.latest_checkpoint_step(run) == 3
    train_run.truncate_after(run, 1)
    assert train_run.read_train_metrics(run).column("step").to_pylist() == [1]
    assert [s for s, _ in train_run.rollout_parts(run)] == [1]


def test_empty_run_reads_as_no_metrics_and_an_empty_rollout_table(tmp_path):
    assert train_run.read_train_metrics(tmp_path) is None
    assert train_run.read_rollouts(tmp_path).num_rows == 0
    assert train_run.latest_checkpoint_step(tmp_path) is None


def test_index_round_trip_types_est_params_and_relative_run_paths(tmp_path):
    cells = [
        ("a", train_config("ha_dw", 1, params={"lambda_scale": 1.3, "base": "grpo"}), {"q": [True]}),
        ("b", train_config("grpo", 2), {"q": [False]}),
    ]
    write_matrix(tmp_path, cells)
    table = index.read_index(tmp_path)
    assert table.column_names[: len(index.INDEX_COLUMNS)] == list(index.INDEX_COLUMNS)
    assert table.column_names[-2:] == ["status", "reason"]
    assert table.column("run").to_pylist() == ["runs/a", "runs/b"]
    assert str(table.schema.field("est.lambda_scale").type) == "double"
    assert table.column("est.lambda_scale").to_pylist() == [1.3, None]
    assert str(table.schema.field("seed").type) == "int64"


def test_index_arm_is_the_matrix_arm_and_estimator_label_stays_the_estimators_label(tmp_path):
    config = train_config("a_grae", 1, params={"base": "dr_grpo"}, label="a_grae(base=dr_grpo)")
    write_matrix(tmp_path, [("a", {**config, "arm": "agrae_dr+cispo"}, {"q": [True]})])
    row = index.read_index(tmp_path).to_pylist()[0]
    assert (row["arm"], row["estimator_label"]) == ("agrae_dr+cispo", "a_grae(base=dr_grpo)")
    (ref,) = runinfo.find_runs([tmp_path])
    assert (ref.columns["arm"], ref.columns["estimator_label"]) == ("agrae_dr+cispo", "a_grae(base=dr_grpo)")


def test_an_index_without_arm_reads_its_estimator_label_as_the_arm(tmp_path):
    config = train_config("ha_dw", 1, params={"lambda_scale": 1.3}, label="ha_dw(base=grpo)")
    write_matrix(tmp_path, [("a", {**config, "arm": "ha_dw(lambda_scale=1.3)"}, {"q": [True]})], old_index=True)
    assert "arm" not in index.read_index(tmp_path).column_names
    (ref,) = runinfo.find_runs([tmp_path])
    assert (ref.columns["arm"], ref.columns["estimator_label"]) == ("ha_dw(lambda_scale=1.3)", "ha_dw(base=grpo)")


def test_index_row_rejects_an_unknown_status(tmp_path):
    with pytest.raises(BenchctlError, match="choose one of: pending, running, done, failed"):
        index.index_row(tmp_path, tmp_path / "r", train_config("grpo", 1), "finished")


def test_find_runs_accepts_index_folders_run_folders_and_parents_without_listing_inner_evals(tmp_path):
    write_matrix(tmp_path / "results", [("a", train_config("grpo", 1), {"q": [True]})])
    write_eval(tmp_path / "plain", "arith", {"q": [True, False]})
    write_train_run(tmp_path / "more" / "x" / "run", train_config("dapo", 3), {"q": [True]})
    refs = runinfo.find_runs(
        [tmp_path / "results", tmp_path / "plain", tmp_path / "more", tmp_path / "results" / "runs" / "a"]
    )
    assert [r.path.name for r in refs] == ["a", "plain", "run"]
    assert [r.kind for r in refs] == [train_run.TRAIN_KIND, runinfo.EVAL_KIND, train_run.TRAIN_KIND]
    assert refs[0].columns["estimator"] == "grpo" and refs[0].columns["prompts_per_step"] == 2
    assert refs[1].columns["model"] == "m" and refs[1].columns["estimator"] is None
    assert refs[2].columns["seed"] == 3


def test_find_runs_names_a_folder_without_runs(tmp_path):
    with pytest.raises(BenchctlError, match="holds no run folder"):
        runinfo.find_runs([tmp_path])


def test_eval_reader_reads_the_eval_layout_written_by_the_eval_tables(tmp_path):
    write_eval(tmp_path, "arith", {"q1": [True, False, True, False], "q2": [False] * 4})
    assert runinfo.eval_tasks(tmp_path) == ["arith"]
    problems = runinfo.read_eval_problems(tmp_path, "arith")
    assert problems.column("c").to_pylist() == [2, 0]
    assert problems.column("pass@1").to_pylist() == pytest.approx([0.5, 0.0])
    assert pq.read_table(tmp_path / "summary.parquet").num_rows == 3


@pytest.mark.parametrize("path", sorted((PACKAGE / "results").glob("*.py")), ids=lambda p: p.name)
def test_storage_layer_imports_no_orchestration(path):
    banned = (
        "benchctl.evaluation",
        "benchctl.trainers",
        "benchctl.report",
        "benchctl.replay",
        "benchctl.cli",
        "benchctl.engine",
        "benchctl.matrix",
        "benchctl.tasks",
        "benchctl.grading",
    )
    tree = ast.parse(path.read_text())
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m.startswith(banned)]
