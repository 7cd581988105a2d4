"""Matrix files: expansion into cells, stable run folder names, one-line errors, the CLI's calls (no engine)."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.matrix import parse_matrix, read_matrix
from benchctl.matrix.runner import cell_row
from benchctl.matrix.spec import cell_name

REPO = Path(__file__).resolve().parents[2]
ISSUE_YAML = """\
models: [tiny]
task: arith
estimators:
  grpo: {}
  ha_dw: {lambda_scale: [1.3, 1.5]}
  a_grae: {base: dr_grpo, alpha: [0.5, 1.0]}
group_sizes: [4, 8]
seeds: [1, 2]
train: {steps: 20}
eval: {tasks: [arith], n: 16, k: [1, 4, 16]}
"""


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_issue_example_expands_to_every_grid_point_times_g_times_seed(tmp_path):
    spec = read_matrix(_write(tmp_path, ISSUE_YAML))
    # grpo: 1 point, ha_dw: 2, a_grae: 2 -> 5 x 2 G x 2 seeds
    assert len(spec.cells) == 20
    assert [c.name for c in spec.cells[:4]] == [
        "tiny-grpo-G4-s1",
        "tiny-grpo-G4-s2",
        "tiny-grpo-G8-s1",
        "tiny-grpo-G8-s2",
    ]
    names = {c.name for c in spec.cells}
    assert len(names) == 20
    assert "tiny-ha_dw-lambda_scale=1.5-G8-s2" in names
    assert "tiny-a_grae-alpha=0.5-base=dr_grpo-G4-s1" in names
    cell = next(c for c in spec.cells if c.name == "tiny-a_grae-alpha=1.0-base=dr_grpo-G8-s2")
    assert (cell.estimator, dict(cell.params), cell.group_size, cell.seed) == (
        "a_grae",
        {"base": "dr_grpo", "alpha": 1.0},
        8,
        2,
    )
    assert cell.arm == "a_grae(alpha=1.0,base=dr_grpo)"
    assert dict(cell.train_settings) == {"steps": 20}
    assert (cell.eval.tasks, cell.eval.ks, cell.eval.n) == (("arith",), (1, 4, 16), 16)


def test_names_are_stable_and_depend_only_on_the_cell_configuration(tmp_path):
    first = [c.name for c in read_matrix(_write(tmp_path, ISSUE_YAML)).cells]
    reordered = yaml.safe_load(ISSUE_YAML)
    reordered["estimators"]["a_grae"] = {"alpha": [0.5, 1.0], "base": "dr_grpo"}  # key order does not matter
    reordered["train"] = {"steps": 50}  # shared settings are not part of the name
    second = [c.name for c in parse_matrix(reordered).cells]
    assert first == second


def test_recipe_entry_and_recipe_axis(tmp_path):
    spec = parse_matrix(
        {
            "estimators": {"grpo": {}, "dapo": {"estimator": "grpo", "recipe": "dapo"}},
            "recipes": [None, "gspo"],
            "group_sizes": [4],
            "seeds": [0],
        }
    )
    assert [(c.name, c.estimator, c.recipe) for c in spec.cells] == [
        ("tiny-grpo-G4-s0", "grpo", None),
        ("tiny-grpo-gspo-G4-s0", "grpo", "gspo"),
        ("tiny-dapo-G4-s0", "grpo", "dapo"),
    ]  # an entry's own recipe replaces the axis; not repeated in the name
    assert spec.cells[2].train_values()["recipe"] == "dapo"


def test_names_colliding_after_sanitising_get_a_hash(tmp_path):
    spec = parse_matrix({"models": ["a/m", "b/m"], "estimators": {"grpo": {}}, "group_sizes": [4], "seeds": [0]})
    names = [c.name for c in spec.cells]
    assert len(set(names)) == 2 and all(n.startswith("m-grpo-G4-s0-h") for n in names)
    assert cell_name(spec.cells[0]) == "m-grpo-G4-s0"


def test_index_row_of_a_cell_has_its_configuration_columns(tmp_path):
    spec = read_matrix(_write(tmp_path, ISSUE_YAML))
    cell = next(c for c in spec.cells if c.name == "tiny-ha_dw-lambda_scale=1.3-G4-s2")
    row = cell_row(tmp_path, cell, "pending")
    assert row["run"] == "runs/tiny-ha_dw-lambda_scale=1.3-G4-s2"
    assert (row["model"], row["task"], row["estimator"], row["estimator_label"], row["recipe"]) == (
        "tiny",
        "arith",
        "ha_dw",
        "ha_dw(base=grpo)",  # Estimator.label, as in the run's config.json; the matrix arm is its own column
        None,
    )
    assert row["arm"] == "ha_dw(lambda_scale=1.3)"
    assert (row["group_size"], row["seed"], row["est.lambda_scale"], row["status"]) == (4, 2, 1.3, "pending")


@pytest.mark.parametrize(
    "text, message",
    [
        ("estimators: {grpo: {}}\nfoo: 1\n", "unknown key 'foo'; valid keys: models, task, estimators, recipes"),
        ("estimators: {grpo: {}}\ntrain: {stepz: 3}\n", "train: unknown key 'stepz'; valid keys: data_dir,"),
        ("estimators: {grpo: {}}\neval: {kk: [1]}\n", "eval: unknown key 'kk'; valid keys: tasks, n, k,"),
        ("estimators: {ha_dw: {lambdax: [1.0]}}\n", "unknown hyperparameter 'lambdax' for ha_dw"),
        ("estimators: {nope: {}}\n", "unknown estimator 'nope'"),
        ("estimators: {grpo: {}}\ntrain: {model: tiny}\n", "train: unknown key 'model'"),
        ("estimators: {grpo: {}}\neval: {n: 4, k: [1, 8]}\n", "k=8 > n=4"),
        ("estimators: {grpo: {}}\ngroup_sizes: [0]\n", "group_sizes must list integers >= 1"),
        ("models: [tiny]\n", "'estimators' must map estimator names"),
        ("[1, 2]\n", "must hold a mapping"),
    ],
)
def test_bad_matrix_file_is_one_line_naming_valid_keys_exit_2(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(BenchctlError, match=None) as info:
        read_matrix(path)
    assert message in str(info.value) and str(path) in str(info.value)
    result = CliRunner().invoke(app, ["matrix", "run", str(path), "--dry-run"])
    assert result.exit_code == 2
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_yaml_float_written_as_5e_4_is_read_as_a_number():
    spec = parse_matrix({"estimators": {"grpo": {}}, "train": {"lr": "5e-4"}})
    assert dict(spec.cells[0].train_settings)["lr"] == 5e-4


def test_dry_run_lists_cells_and_runs_nothing(tmp_path):
    path = _write(tmp_path, ISSUE_YAML)
    result = CliRunner().invoke(
        app, ["matrix", "run", str(path), "--dry-run", "--results", str(tmp_path / "r")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "20 cells" in result.stdout and "tiny-ha_dw-lambda_scale=1.5-G8-s2" in result.stdout
    assert not (tmp_path / "r").exists()


def test_matrix_run_calls_run_matrix_with_the_file_cells_and_results(tmp_path, monkeypatch):
    import benchctl.matrix as matrix
    from benchctl.matrix.runner import MatrixOutcome

    seen = {}

    def fake(spec, results, executor="serial", on_event=None, address=None, report_to=None, retries=None):
        seen.update(
            cells=[c.name for c in spec.cells],
            results=results,
            executor=executor,
            address=address,
            report_to=report_to,
            retries=retries,
        )
        return MatrixOutcome(Path(results) / "index.parquet", ())

    monkeypatch.setattr(matrix, "run_matrix", fake)
    path = _write(tmp_path, ISSUE_YAML)
    result = CliRunner().invoke(app, ["matrix", "run", str(path), "--results", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert seen == {
        "cells": [c.name for c in read_matrix(path).cells],
        "results": str(tmp_path / "r"),
        "executor": "serial",
        "address": None,
        "report_to": None,
        "retries": 2,
    }
    args = ["matrix", "run", str(path), "--results", str(tmp_path / "r"), "--report-to", "tensorboard"]
    assert CliRunner().invoke(app, [*args, "--retries", "0"]).exit_code == 0
    assert (seen["report_to"], seen["retries"]) == ("tensorboard", 0)


def test_matrix_status_of_a_fresh_results_folder_lists_every_cell_pending(tmp_path):
    path = _write(tmp_path, ISSUE_YAML)
    result = CliRunner().invoke(
        app, ["matrix", "status", str(path), "--results", str(tmp_path / "r")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "0 done, 0 running, 0 failed, 20 pending of 20 cells" in result.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "examples").glob("*.yaml")))
def test_example_matrix_files_parse(name):
    assert read_matrix(REPO / "examples" / name).cells


def test_train_setting_lists_are_grid_axes_and_an_entry_may_set_its_own(tmp_path):
    text = """\
models: [tiny]
task: arith
estimators:
  grpo: {}
  avspo: {train: {lr: [1e-4, 3e-4], warmup_steps: 2}}
group_sizes: [4]
seeds: [1, 2]
train: {steps: 20, lr: [3e-4, 1e-3]}
"""
    spec = read_matrix(_write(tmp_path, text))
    grpo = [c for c in spec.cells if c.label == "grpo"]
    avspo = [c for c in spec.cells if c.label == "avspo"]
    # the matrix's lr axis for grpo; avspo's own axis replaces it (not crossed with it)
    assert sorted({dict(c.train_settings)["lr"] for c in grpo}) == [3e-4, 1e-3]
    assert sorted({dict(c.train_settings)["lr"] for c in avspo}) == [1e-4, 3e-4]
    assert len(grpo) == len(avspo) == 4
    assert all(dict(c.train_settings)["warmup_steps"] == 2 and dict(c.train_settings)["steps"] == 20 for c in avspo)
    assert "tiny-avspo-lr=0.0001-G4-s2" in {c.name for c in avspo}
    assert all(c.swept == (("lr", dict(c.train_settings)["lr"]),) for c in spec.cells)
    # the arm is the estimator entry, not the setting: a sweep's runs share it
    assert {c.arm for c in avspo} == {"avspo"}
    assert {c.train_values()["lr"] for c in avspo} == {1e-4, 3e-4}


def test_a_train_setting_axis_with_a_bad_value_names_the_cell(tmp_path):
    text = "estimators: {grpo: {train: {lr: [3e-4, -1.0]}}}\n"
    with pytest.raises(BenchctlError, match="cell tiny-grpo-lr=-1.0-G8-s0: lr"):
        read_matrix(_write(tmp_path, text))
    with pytest.raises(BenchctlError, match=r"estimators.grpo.train: unknown key 'lrr'"):
        read_matrix(_write(tmp_path, "estimators: {grpo: {train: {lrr: 1}}}\n"))
