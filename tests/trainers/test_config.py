"""TrainConfig resolution: precedence and sources, recipes, bad input as one line (exit 2), resume rules."""

import json
import sys

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.results.train_run import write_config
from benchctl.trainers import RECIPES, TrainConfig, build_config
from benchctl.trainers.config import parse_set, read_config_file
from benchctl.trainers.plan import config_warnings, record, resolve

runner = CliRunner()


def test_precedence_is_default_then_recipe_then_file_then_flag_with_sources():
    cfg = build_config({"clip_high": 0.3, "group_size": 4}, {"recipe": "dapo", "group_size": 16})
    assert (cfg.clip_low, cfg.sources["clip_low"]) == (0.2, "recipe")
    assert (cfg.clip_high, cfg.sources["clip_high"]) == (0.3, "file")
    assert (cfg.group_size, cfg.sources["group_size"]) == (16, "flag")
    assert cfg.sources.get("seed", "default") == "default"
    stored = record(resolve(cfg))
    assert stored["loss_agg"] == {"value": "token-mean", "source": "recipe"}


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_sets_what_spec_section_6_says(recipe):
    cfg = build_config(flag_values={"recipe": recipe})
    for key, value in RECIPES[recipe].items():
        assert getattr(cfg, key) == value


def test_dapo_recipe_turns_on_dynamic_sampling_and_clip_higher():
    cfg = build_config(flag_values={"recipe": "dapo"})
    assert cfg.dynamic_sampling and (cfg.clip_low, cfg.clip_high) == (0.2, 0.28) and cfg.kl_coef == 0


def test_gspo_recipe_uses_sequence_ratio_and_tiny_clip():
    cfg = build_config(flag_values={"recipe": "gspo"})
    assert (cfg.ratio, cfg.clip_low, cfg.clip_high) == ("sequence", 3e-4, 4e-4)


def test_set_values_are_read_as_yaml_scalars():
    assert parse_set(["lambda_scale=1.5", "base=dr_grpo", "shift=false", "m=10"]) == {
        "lambda_scale": 1.5,
        "base": "dr_grpo",
        "shift": False,
        "m": 10,
    }


def test_estimator_hyperparameters_from_file_and_flags_merge():
    cfg = build_config(
        {"estimator": "ha_dw", "estimator_params": {"base": "dr_grpo", "lambda_scale": 1.3}},
        {"estimator_params": {"lambda_scale": 1.5}},
    )
    assert dict(cfg.estimator_params) == {"base": "dr_grpo", "lambda_scale": 1.5}


def test_yaml_file_accepts_dashed_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("group-size: 4\nestimator: avspo\n")
    assert read_config_file(path) == {"group_size": 4, "estimator": "avspo"}


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage\x81", b"", b"- a\n- b\n", b"key: [unclosed\n"])
def test_unreadable_or_non_mapping_config_files_are_one_line_errors(tmp_path, content):
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    with pytest.raises(BenchctlError):
        read_config_file(path)


def test_derived_defaults_depend_on_model_and_task():
    assert resolve(TrainConfig()).max_tokens == 8
    assert resolve(TrainConfig(task="math500")).max_tokens == 1024
    assert resolve(TrainConfig(task="arith_mix")).max_tokens == 20  # the task's max_new_tokens
    assert resolve(TrainConfig()).lr == 3e-4
    assert resolve(TrainConfig(model="Qwen/Qwen2.5-Math-1.5B")).lr == 1e-6


BAD = [
    (["--estimator", "nope"], "unknown estimator 'nope'"),
    (["--estimator", "ha_dw", "--set", "bogus=1"], "unknown hyperparameter 'bogus'"),
    (["--estimator", "ha_dw", "--set", "lambda_scale=-1"], "lambda_scale=-1 is out of range"),
    (["--set", "novalue"], "is not key=value"),
    (["--recipe", "ppo"], "unknown recipe 'ppo'"),
    (["--loss-agg", "sum"], "loss_agg='sum' is not valid"),
    (["--clip-low", "1.5"], "clip_low=1.5 is out of range"),
    (["--temperature", "0"], "temperature=0.0 is out of range"),
    (["--group-size", "0"], "group_size=0 is out of range"),
    (["--mini-batches", "1000"], "mini_batches=1000 exceeds"),
    (["--recipe", "dapo", "--group-size", "1"], "dynamic_sampling needs group_size >= 2"),
    (["--device", "tpu"], "device='tpu' is not valid"),
    (["--config", "/nonexistent/c.yaml"], "does not exist"),
    (["--config", "/"], "config file / is not readable YAML (IsADirectoryError)"),
    (["--resume", "/nonexistent/run"], "is not a training run folder"),
    (["--dtype", "float16"], "dtype='float16' is not valid; choose one of: auto, float32, bfloat16"),
    (["--micro-batch-tokens", "0"], "micro_batch_tokens=0 is out of range"),
    (["--rollout-correction", "ppo-is"], "rollout_correction='ppo-is' is not valid; choose one of: none, tis"),
    (["--rollout-correction", "tis", "--rollout-correction-low", "3"], "low=3.0 is above high=2.0"),
    (["--report-to", "mlflow"], "--report-to 'mlflow' is not valid"),
    (["--sync-check", "-1"], "sync_check=-1.0 is out of range"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_configuration_is_one_line_exit_2_before_any_work(args, message, tmp_path):
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "run"), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_cli_passes_exactly_the_given_flags_to_the_trainer(monkeypatch, tmp_path):
    seen = {}

    def fake_train(cfg, display=None):
        seen["cfg"] = cfg
        raise SystemExit(0)

    monkeypatch.setattr("benchctl.trainers.train", fake_train)
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("steps: 7\nlr: 0.001\n")
    result = runner.invoke(
        app,
        [
            "train",
            "--estimator",
            "ha_dw",
            "--set",
            "lambda_scale=1.5",
            "--set",
            "base=dr_grpo",
            "--config",
            str(cfg_file),
            "--lr",
            "0.002",
            "--no-progress",
            "--out",
            "x",
        ],
    )
    assert result.exit_code == 0, result.output
    cfg = seen["cfg"]
    assert (cfg.estimator, dict(cfg.estimator_params)) == ("ha_dw", {"lambda_scale": 1.5, "base": "dr_grpo"})
    assert (cfg.steps, cfg.sources["steps"]) == (7, "file")
    assert (cfg.lr, cfg.sources["lr"]) == (0.002, "flag")
    assert cfg.progress is False and cfg.out == "x"


def _fake_run(tmp_path, **values):
    run = tmp_path / "run"
    run.mkdir()
    cfg = build_config(flag_values=values)
    (run / "config.json").write_text(json.dumps({"kind": "benchctl-train-run", "config": record(resolve(cfg))}))
    return run


def test_resume_keeps_the_stored_config_and_allows_more_steps(tmp_path):
    run = _fake_run(tmp_path, estimator="avspo", group_size=4, steps=5)
    cfg = build_config(flag_values={"resume": str(run), "steps": 9})
    assert (cfg.estimator, cfg.group_size, cfg.steps, cfg.resume) == ("avspo", 4, 9, str(run))


def test_resume_refuses_a_change_that_would_break_exactness(tmp_path):
    run = _fake_run(tmp_path, estimator="avspo")
    with pytest.raises(BenchctlError, match="estimator='avspo' \\(now 'grpo'\\)"):
        build_config(flag_values={"resume": str(run), "estimator": "grpo"})


def test_cli_passes_the_gpu_flags_to_the_trainer(monkeypatch):
    monkeypatch.delenv("BENCHCTL_DATA_DIR", raising=False)  # the CLI reads it as data_dir's source
    seen = []
    monkeypatch.setattr("benchctl.trainers.train", lambda cfg, display=None: seen.append(cfg) or sys.exit(0))
    flags = {
        "dtype": "bfloat16",
        "micro_batch_tokens": 4096,
        "logprob_chunk_tokens": 512,
        "gpu_memory_utilization": 0.5,
        "rollout_correction": "icepop",
        "rollout_correction_low": 0.4,
        "rollout_correction_high": 4.0,
        "sync_check": 0.5,
        "report_to": "tensorboard,wandb",
    }
    args = [x for key, value in flags.items() for x in (f"--{key.replace('_', '-')}", str(value))]
    assert runner.invoke(app, ["train", *args]).exit_code == 0
    assert seen == [build_config(flag_values=flags)]


def test_resume_may_change_the_trackers_and_the_sync_threshold_but_not_the_compute(tmp_path):
    run = _fake_run(tmp_path, dtype="bfloat16")
    cfg = build_config(flag_values={"resume": str(run), "report_to": "tensorboard", "sync_check": 0.5})
    assert (cfg.report_to, cfg.sync_check, cfg.dtype) == ("tensorboard", 0.5, "bfloat16")
    with pytest.raises(BenchctlError, match="dtype='bfloat16' \\(now 'float32'\\)"):
        build_config(flag_values={"resume": str(run), "dtype": "float32"})


def test_a_logprob_chunk_without_micro_batches_and_bounds_without_a_correction_are_named_inert():
    plan = resolve(build_config(flag_values={"logprob_chunk_tokens": 64, "rollout_correction_high": 3.0}))
    assert plan.inert == ("logprob_chunk_tokens=64", "rollout_correction_high=3.0")
    assert len(config_warnings(plan)) == 2
    acting = resolve(
        build_config(
            flag_values={
                "logprob_chunk_tokens": 64,
                "micro_batch_tokens": 512,
                "rollout_correction": "tis",
                "rollout_correction_high": 3.0,
            }
        )
    )
    assert acting.inert == () and config_warnings(acting) == []


def test_every_setting_is_a_train_flag_whose_help_is_the_fields_help():
    import dataclasses

    import typer

    from benchctl.trainers.config import TrainConfig

    command = typer.main.get_command(app).commands["train"]
    helps = {p.name: (p.opts, p.help) for p in command.params}
    for f in dataclasses.fields(TrainConfig):
        if f.name != "sources":
            opts, text = helps[f.name]
            assert (f.metadata["flags"] or (f"--{f.name.replace('_', '-')}",))[0] in opts, f.name
            assert text.startswith(f.metadata["help"]), f.name


def test_what_a_resume_may_change_is_read_from_the_field_metadata_and_threads_is_one_of_them(tmp_path):
    from benchctl.trainers.config import RESUMABLE_CHANGES, settings

    assert set(RESUMABLE_CHANGES) == set(settings("resume")) | set(settings("free"))
    run = _fake_run(tmp_path, threads=1)
    assert build_config(flag_values={"resume": str(run), "threads": 2}).threads == 2


def test_the_tiny_default_learning_rate_follows_the_square_root_rule_in_the_mini_batch_count():
    assert resolve(TrainConfig(mini_batches=4)).lr == pytest.approx(1.5e-4)
    assert resolve(build_config(flag_values={"recipe": "dapo"})).lr == pytest.approx(7.5e-5)  # 16 updates a batch
    assert resolve(TrainConfig(mini_batches=16, lr=3e-4)).lr == 3e-4  # a rate given is the rate used
    assert resolve(TrainConfig(model="Qwen/Qwen2.5-Math-1.5B", mini_batches=16)).lr == 1e-6  # the papers' rate


def test_a_resumed_run_keeps_the_default_learning_rate_it_started_with(tmp_path):
    cfg = build_config(flag_values={"recipe": "dapo", "out": str(tmp_path / "run")})
    write_config(tmp_path / "run", record(resolve(cfg), lr_resolved=3e-4))  # started when the default was 3e-4
    resumed = build_config(flag_values={"resume": str(tmp_path / "run")})
    assert resolve(resumed).lr == 3e-4 and resolve(cfg).lr == pytest.approx(7.5e-5)
