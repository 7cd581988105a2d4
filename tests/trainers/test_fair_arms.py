"""Fair arms: `benchctl train` and `benchctl matrix run` refuse, before any work and in one line (exit 2),
an evaluation task that shares questions with the training task (unless --allow-overlap, recorded in config.json),
a training task without held-out counterpart evaluated without --eval-task, and a token-level estimator (OAR) on
a task whose completions are the answer alone; OAR reshapes tokens on `arith_steps` (`oar/reshaped_frac` > 0)."""

import json
import re

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.matrix.runner import check_cells, run_matrix
from benchctl.matrix.spec import parse_matrix
from benchctl.results.runs import ResolvedModel
from benchctl.trainers import build_config
from benchctl.trainers.build import preflight, prepare_folder
from benchctl.trainers.plan import resolve

runner = CliRunner()


def _refused(args, tmp_path):
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "run"), "--no-progress", *args])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    assert not (tmp_path / "run").exists()  # nothing written
    return lines[0]


def test_gsm8k_evaluated_without_eval_task_is_refused(tmp_path, fixture_data_dir):
    line = _refused(["--task", "gsm8k", "--eval-every", "5", "--data-dir", str(fixture_data_dir)], tmp_path)
    assert "task 'gsm8k' has no held-out counterpart here" in line and "--eval-task" in line


def test_an_eval_task_sharing_questions_is_refused_with_the_count(tmp_path, fixture_data_dir):
    args = ["--task", "gsm8k", "--eval-task", "gsm8k", "--eval-every", "5", "--data-dir", str(fixture_data_dir)]
    line = _refused(args, tmp_path)
    assert "10 of the 10 distinct questions of evaluation task 'gsm8k'" in line and "--allow-overlap" in line


def test_allow_overlap_lets_the_pair_through_and_is_recorded_in_config_json(monkeypatch, tmp_path, fixture_data_dir):
    seen = {}

    def fake_train(cfg, display=None):  # the CLI's one call into the trainer, patched
        seen["cfg"] = cfg
        raise SystemExit(0)

    monkeypatch.setattr("benchctl.trainers.train", fake_train)
    args = ["--task", "gsm8k", "--eval-task", "gsm8k", "--eval-every", "5", "--data-dir", str(fixture_data_dir)]
    result = runner.invoke(app, ["train", "--allow-overlap", "--out", str(tmp_path / "run"), *args])
    assert result.exit_code == 0, result.output
    cfg = seen["cfg"]
    assert cfg.allow_overlap is True and cfg.sources["allow_overlap"] == "flag"
    plan = resolve(cfg)
    preflight(plan)  # accepted: the trainer's refusal lets it through
    run = prepare_folder(plan, ResolvedModel("unused", "tiny", "tiny")).path
    record = json.loads((run / "config.json").read_text())["config"]  # what the trainer writes into the run
    assert record["allow_overlap"] == {"value": True, "source": "flag"}
    assert record["eval_task_resolved"]["value"] == "gsm8k"


@pytest.mark.parametrize(
    "task, held_out", [("arith", "arith"), ("arith_steps", "arith_steps"), ("math_train", "math500")]
)
def test_the_default_eval_task_is_the_held_out_one(task, held_out):
    assert resolve(build_config(flag_values={"task": task, "eval_every": 5})).eval_task == held_out


@pytest.mark.parametrize("estimator", ["oar_g", "oar_p"])
def test_oar_is_refused_on_arith_whose_completion_is_the_answer(estimator, tmp_path):
    line = _refused(["--estimator", estimator], tmp_path)
    assert f"{estimator}(base=grpo) reshapes the reasoning tokens" in line and "arith_steps" in line


def test_oar_is_accepted_on_arith_steps_and_other_estimators_on_arith():
    preflight(resolve(build_config(flag_values={"task": "arith_steps", "estimator": "oar_g", "eval_every": 5})))
    preflight(resolve(build_config(flag_values={"task": "arith", "estimator": "grpo", "eval_every": 5})))


MATRIX = {"models": ["tiny"], "task": "arith", "estimators": {"grpo": {}}, "group_sizes": [4], "seeds": [1]}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"estimators": {"grpo": {}, "oar_g": {}}}, "oar_g(base=grpo) reshapes the reasoning tokens"),
        ({"task": "gsm8k", "eval": {"tasks": ["gsm8k"]}}, "10 of the 10 distinct questions"),
        ({"task": "arith", "eval": {"tasks": ["arith"]}, "train": {"eval_every": 5, "eval_task": "gsm8k"}}, None),
    ],
)
def test_matrix_run_refuses_before_any_cell_starts(changes, message, tmp_path, fixture_data_dir):
    data = {**MATRIX, **changes, "train": {"data_dir": str(fixture_data_dir), **changes.get("train", {})}}
    spec = parse_matrix(data)
    if message is None:  # arith vs arith test, gsm8k evaluated during training: disjoint, accepted
        check_cells(spec.cells)
        return
    with pytest.raises(BenchctlError, match=re.escape(message)):
        run_matrix(spec, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_matrix_allow_overlap_lets_the_pair_through(fixture_data_dir):
    train = {"data_dir": str(fixture_data_dir), "allow_overlap": True}
    check_cells(parse_matrix({**MATRIX, "task": "gsm8k", "eval": {"tasks": ["gsm8k"]}, "train": train}).cells)


def test_matrix_cli_refusal_is_one_line_exit_2(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("models: [tiny]\ntask: arith\nestimators: {oar_p: {}}\ngroup_sizes: [4]\nseeds: [1]\n")
    result = runner.invoke(app, ["matrix", "run", str(path), "--results", str(tmp_path / "r")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "reshapes the reasoning tokens" in lines[0], result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.vllm
@pytest.mark.slow
def test_oar_reshapes_tokens_on_the_task_that_shows_its_work(tiny_model, tmp_path):
    from benchctl.trainers import train

    values = {"task": "arith_steps", "estimator": "oar_g", "steps": 2, "prompts_per_step": 8, "group_size": 4}
    result = train(build_config(flag_values={**values, "save_every": 0, "progress": False, "out": str(tmp_path)}))
    rows = result.metrics
    assert all(0 <= row["oar/reshaped_frac"] <= 1 and row["oar/no_span_frac"] < 1 for row in rows)
    assert max(row["oar/reshaped_frac"] for row in rows) > 0
    assert "est/reshaped_frac" not in rows[0]
