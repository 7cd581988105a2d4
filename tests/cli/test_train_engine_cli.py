"""`benchctl train --engine verl` in the main venv, which has no veRL: the files and the printed
cluster command; the launch entry point patched where the test is about the config it receives."""

import json
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.integrations import verl_launch
from benchctl.trainers import build_config

runner = CliRunner()


def one_line_error(args, *words):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in result.output


def test_train_engine_verl_hands_the_flags_config_to_the_verl_launch(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHCTL_DATA_DIR", raising=False)  # the CLI reads it as data_dir's source
    seen = []

    def fake_launch(cfg):
        seen.append(cfg)
        return verl_launch.VerlLaunch(tmp_path, tmp_path / "verl", "bash x/launch.sh", False, "no GPU")

    monkeypatch.setattr(verl_launch, "launch", fake_launch)
    args = ["train", "--engine", "verl", "--estimator", "ha_dw", "--set", "lambda_scale=1.5", "-G", "4", "--steps", "9"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    want = build_config(
        flag_values={
            "engine": "verl",
            "estimator": "ha_dw",
            "estimator_params": {"lambda_scale": 1.5},
            "group_size": 4,
            "steps": 9,
        }
    )
    assert seen == [want]
    assert "  bash x/launch.sh" in result.stdout.splitlines()


def test_the_default_engine_stays_native(monkeypatch):
    import benchctl.trainers

    seen = []
    monkeypatch.setattr(benchctl.trainers, "train", lambda cfg, display=None: seen.append(cfg) or _Done())
    assert runner.invoke(app, ["train", "--steps", "3"]).exit_code == 0
    assert seen[0].engine == "native" and seen[0].sources.get("engine", "default") == "default"


class _Done:
    metrics, steps, interrupted, run = [], 3, False, "results/train/x"


def test_an_unknown_engine_is_one_line_listing_the_valid_ones():
    one_line_error(["train", "--engine", "dask"], "engine='dask'", "native, verl")


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--token-budget", "1000"], "token_budget"),
        (["--recipe", "dapo"], "dynamic_sampling"),
        (["--loss-agg", "token-mean-nondegenerate"], "token-mean-nondegenerate"),
        (["--estimator", "oar_g"], "oar_g"),
        (["--codapo-resample"], "codapo_resample"),
        (["--prompts-per-step", "6", "--mini-batches", "4"], "mini_batches"),
        (["--dtype", "float32"], "dtype float32"),
        (["--micro-batch-tokens", "4096"], "micro_batch_tokens"),
        (["--rollout-correction", "tis"], "rollout_correction"),
        (["--report-to", "tensorboard"], "report_to"),
        (["--sync-check", "0.01"], "sync_check"),
    ],
)
def test_settings_verl_cannot_reproduce_are_refused_in_one_line(extra, words, tmp_path, chat_model):
    args = ["train", "--engine", "verl", "--model", str(chat_model), "--out", str(tmp_path / "run"), *extra]
    one_line_error(args, "engine=verl", words)
    assert not (tmp_path / "run").exists()  # refused before any file is written


@pytest.mark.parametrize("estimator", ["rl_zvp", "dbb", "codapo"])
def test_estimators_needing_veRLs_old_log_prob_pass_run_veRLs_trainer_that_has_one(estimator, tmp_path, chat_model):
    """RL-ZVP's entropies, DBB's prompt ids, CoDaPO's old log-probs: the plug-in keeps them from RayPPOTrainer's
    old-log-prob pass, which veRL 0.9.1's default v1 trainer does not run; a sequence-level estimator keeps v1."""
    run = tmp_path / "run"
    args = ["train", "--engine", "verl", "--model", str(chat_model), "--estimator", estimator, "--out", str(run)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    overrides = (run / "verl" / "overrides.txt").read_text().splitlines()
    assert f"algorithm.adv_estimator=benchctl_{estimator}" in overrides
    assert "trainer.use_v1=False" in overrides
    info = pq.read_table(run / "verl" / "train.parquet").column("extra_info").to_pylist()
    assert [row["index"] for row in info] == list(range(len(info)))  # DBB's stable prompt id: the row number
    grpo = tmp_path / "grpo"
    args = ["train", "--engine", "verl", "--model", str(chat_model), "--estimator", "grpo", "--out", str(grpo)]
    assert runner.invoke(app, args).exit_code == 0
    assert not any(line.startswith("trainer.use_v1") for line in (grpo / "verl" / "overrides.txt").read_text().split())


def test_a_model_without_chat_template_is_refused_for_verl(tmp_path):
    one_line_error(["train", "--engine", "verl", "--out", str(tmp_path / "r")], "no chat template")
    assert not (tmp_path / "r").exists()


def test_engine_verl_without_verl_here_writes_the_run_folder_and_prints_the_cluster_command(tmp_path, chat_model):
    run = tmp_path / "run"
    args = ["train", "--engine", "verl", "--model", str(chat_model), "--estimator", "dr_grpo", "-G", "4"]
    args += ["--prompts-per-step", "8", "--steps", "5", "--clip-high", "0.28", "--out", str(run)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "not run here: veRL is not importable by" in lines[0]
    assert lines[2].strip() == shlex.join(["bash", str(run / "verl" / "launch.sh")])
    assert lines[3] == f"then: benchctl ingest verl {run / 'verl'} --out {run}"
    rows = pq.read_table(run / "verl" / "train.parquet").to_pylist()
    assert set(rows[0]) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert rows[0]["prompt"] == [{"role": "user", "content": rows[0]["extra_info"]["question"]}]
    assert rows[0]["reward_model"]["style"] == "rule" and rows[0]["data_source"] == "arith"
    overrides = (run / "verl" / "overrides.txt").read_text().splitlines()
    for item in ("algorithm.adv_estimator=benchctl_dr_grpo", "actor_rollout_ref.rollout.n=4"):
        assert item in overrides
    for item in ("data.train_batch_size=8", "trainer.total_training_steps=5", "data.max_response_length=8"):
        assert item in overrides
    assert "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm" in overrides  # Dr.GRPO's default
    assert "actor_rollout_ref.actor.loss_scale_factor=8" in overrides  # its constant: max_tokens, as benchctl's
    assert "actor_rollout_ref.actor.optim.clip_grad=1.0" in overrides  # veRL 0.9.1 never reads actor.grad_clip
    assert "actor_rollout_ref.actor.clip_ratio_high=0.28" in overrides
    launch = json.loads((run / "verl" / "launch.json").read_text())["config"]
    assert launch["engine"] == {"value": "verl", "source": "flag"}


def test_the_launch_command_appends_the_gpu_count_and_python(tmp_path):
    argv = verl_launch.launch_command(tmp_path, "/opt/verl/bin/python", 8)
    script = str(tmp_path / "launch.sh")
    assert argv == ["env", "PYTHON=/opt/verl/bin/python", "bash", script, "trainer.n_gpus_per_node=8"]


def test_runtime_check_says_when_verl_is_missing():
    import sys

    python, gpus, reason = verl_launch.runtime(sys.executable)
    assert (python, gpus) == (sys.executable, 0)
    assert reason.startswith(f"veRL is not importable by {sys.executable}")


def test_runtime_check_names_a_python_that_cannot_start():
    _, gpus, reason = verl_launch.runtime(str(Path("/nonexistent/python")))
    assert gpus == 0 and "could not be started" in reason


def test_rerunning_launch_sh_keeps_the_earlier_log_that_verls_file_logger_would_truncate(tmp_path, chat_model):
    import subprocess

    cfg = build_config(flag_values={"model": str(chat_model), "prompts_per_step": 8, "out": str(tmp_path / "run")})
    _, folder, _ = verl_launch.prepare(cfg)
    (folder / "metrics.jsonl").write_text('{"step": 1, "data": {}}\n')
    env = {"PYTHON": "true", "PATH": "/usr/bin:/bin"}  # `true` stands in for veRL's Python
    subprocess.run(["bash", str(folder / "launch.sh")], check=True, env=env)
    (segment,) = folder.glob("metrics.*.jsonl")
    assert segment.read_text() == '{"step": 1, "data": {}}\n' and not (folder / "metrics.jsonl").exists()
