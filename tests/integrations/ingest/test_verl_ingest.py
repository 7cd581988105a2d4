"""`benchctl ingest verl` on a small recorded veRL run in veRL 0.9.1's formats
(tests/data/verl_run: file-logger JSONL, rollout dumps, Hydra overrides), then benchctl's own readers on it."""

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.estimators import get_estimator
from benchctl.results import train_run
from benchctl.results.runinfo import find_runs
from benchctl.results.runs import resolve_model

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "verl_run"
runner = CliRunner()


def ingest(source, out):
    result = runner.invoke(app, ["ingest", "verl", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def ingested(tmp_path):
    out = tmp_path / "run"
    ingest(FIXTURE, out)
    return out


def dumped(step):
    return [json.loads(line) for line in (FIXTURE / "rollouts" / f"{step}.jsonl").read_text().splitlines()]


def test_verl_metric_names_map_to_benchctls_columns_and_the_rest_keep_a_verl_prefix(ingested):
    metrics = train_run.read_train_metrics(ingested).to_pylist()
    log = [json.loads(line) for line in (FIXTURE / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in metrics] == [1, 2, 3]  # step 0 = veRL's validation before training
    for row, entry in zip(metrics, log[1:]):
        data = entry["data"]
        assert row["reward/mean"] == data["critic/score/mean"]
        assert row["policy/entropy"] == data["actor/entropy"] and row["policy/grad_norm"] == data["actor/grad_norm"]
        assert row["response/length_mean"] == data["response_length/mean"]
        assert row["time/rollout"] == data["timing_s/gen"] and row["time/step"] == data["timing_s/step"]
        assert row["verl/actor/ppo_kl"] == data["actor/ppo_kl"]
        assert row["rollout/tokens"] == data["response_length/mean"] * 8  # 2 prompts x 4 responses
    assert metrics[2]["verl/val-core/arith/acc/mean@1"] == 0.5
    assert metrics[2]["rollout/tokens_total"] == sum(r["rollout/tokens"] for r in metrics)


def test_rollout_groups_are_identical_inputs_even_when_balance_batch_interleaved_them(ingested):
    for step in (1, 2, 3):
        table = pq.read_table(ingested / "rollouts" / f"part-{step:05d}.parquet").to_pylist()
        rows = dumped(step)
        assert len(table) == len(rows) == 8
        inputs = list(dict.fromkeys(r["input"] for r in rows))  # groups in order of first appearance
        for group, prompt in enumerate(inputs):
            mine = [r for r in table if r["group"] == group]
            source = [r for r in rows if r["input"] == prompt]
            assert len({r["problem_id"] for r in mine}) == 1 and [r["sample"] for r in mine] == [0, 1, 2, 3]
            assert [r["completion"] for r in mine] == [r["output"] for r in source]
            assert [r["reward"] for r in mine] == [r["score"] for r in source]
    assert pq.read_table(ingested / "rollouts" / "part-00002.parquet").column("num_tokens").null_count == 8


def test_ingested_advantages_are_the_runs_estimator_replayed_step_by_step_with_its_state(ingested):
    est = get_estimator("ha_dw", base="grpo", lambda_scale=1.5)
    for step, table in train_run.iter_rollout_steps(ingested):
        rewards = np.array(table.column("reward").to_pylist()).reshape(2, 4)  # (P, G)
        want = est.advantages(rewards)
        assert np.array_equal(np.array(table.column("advantage").to_pylist()).reshape(2, 4), want), step
    config = json.loads((ingested / "config.json").read_text())["config"]
    assert config["estimator"]["value"] == "ha_dw" and config["estimator_params"]["value"] == {
        "base": "grpo",
        "lambda_scale": 1.5,
    }
    assert (config["group_size"]["value"], config["prompts_per_step"]["value"], config["steps"]["value"]) == (4, 2, 3)
    assert config["model"]["value"] == "Qwen/Qwen2.5-0.5B-Instruct" and config["engine"]["value"] == "verl"
    assert config["mini_batches"]["value"] == 1  # data.train_batch_size / actor.ppo_mini_batch_size, both 2


def test_the_last_hf_checkpoint_with_weights_becomes_the_model_eval_resolves(tmp_path):
    from benchctl.models.cache import cached_tiny_model

    source = tmp_path / "verl_run"
    shutil.copytree(FIXTURE, source)
    shutil.copytree(cached_tiny_model(), source / "checkpoints" / "global_step_3" / "actor" / "huggingface")
    shutil.copytree(cached_tiny_model(), source / "checkpoints" / "global_step_2" / "actor" / "huggingface")
    (source / "checkpoints" / "global_step_4" / "actor" / "huggingface").mkdir(parents=True)  # no weights: skipped
    printed = ingest(source, tmp_path / "run")
    assert "model/ from" in printed and "global_step_3/actor/huggingface" in printed
    resolved = resolve_model(str(tmp_path / "run"))
    assert resolved.kind == "run_final" and Path(resolved.path) == (tmp_path / "run" / "model").resolve()
    assert (tmp_path / "run" / "model" / "model.safetensors").is_file()


def test_report_and_replay_read_the_ingested_run_like_a_native_one(ingested, tmp_path):
    (ref,) = find_runs([ingested])
    assert ref.kind == "benchctl-train-run" and ref.columns["estimator_label"] == "ha_dw(base=grpo,lambda_scale=1.5)"
    result = runner.invoke(app, ["report", str(ingested), "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    training = pq.read_table(tmp_path / "report" / "training.parquet").to_pylist()
    assert {r["metric"] for r in training} >= {"reward/mean", "acr/all"}
    replay = ["replay", str(ingested), "--estimators", "ha_dw(base=grpo,lambda_scale=1.5)"]
    replay += ["--out", str(tmp_path / "rp")]
    assert runner.invoke(app, replay).exit_code == 0
    summary = pq.read_table(tmp_path / "rp" / "replay_summary.parquet").to_pylist()
    assert [r["max_diff_logged"] for r in summary if r["estimator"] != "logged"] == [0.0]


def test_reingesting_replaces_the_earlier_ingest(ingested):
    ingest(FIXTURE, ingested)
    assert len(train_run.rollout_parts(ingested)) == 3


def bad(tmp_path, name):
    source = tmp_path / "src"
    shutil.copytree(FIXTURE, source)
    if name == "no log":
        (source / "metrics.jsonl").unlink()
    elif name == "broken line":
        with open(source / "metrics.jsonl", "a") as fh:
            fh.write('{"step": 4, "data": \n')
    elif name == "uneven groups":
        lines = (source / "rollouts" / "1.jsonl").read_text().splitlines()
        (source / "rollouts" / "1.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    elif name == "no config":
        shutil.rmtree(source / ".hydra")
    elif name == "config not yaml":
        (source / ".hydra" / "overrides.yaml").write_text("- a: [\n")
    elif name == "launch record not benchctl's":
        (source / "launch.json").write_text('{"kind": "other"}')
    elif name in ("dump without score", "dump with text score"):
        rows = dumped(3)
        rows[1] = {k: v for k, v in rows[1].items() if k != "score"} if name == "dump without score" else rows[1]
        rows[2]["score"] = "1.0" if name == "dump with text score" else rows[2]["score"]
        (source / "rollouts" / "3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return source


@pytest.mark.parametrize(
    "name, words",
    [
        ("missing", "no such folder"),
        ("no log", "no veRL file-logger log"),
        ("broken line", "metrics.jsonl:5 is not JSON"),
        ("uneven groups", "groups of unequal size"),
        ("no config", "no veRL configuration"),
        ("config not yaml", "overrides.yaml is not YAML"),
        ("launch record not benchctl's", "launch.json is not a launch record"),
        ("dump without score", "3.jsonl:2 is not a veRL rollout dump line"),
        ("dump with text score", "3.jsonl:3 is not a veRL rollout dump line"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_anything_is_written(tmp_path, name, words):
    source = tmp_path / "nothing" if name == "missing" else bad(tmp_path, name)
    result = runner.invoke(app, ["ingest", "verl", str(source), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_log_segments_a_rerun_of_launch_sh_moved_aside_are_read_first_and_a_later_step_line_wins(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(FIXTURE, source)
    lines = (source / "metrics.jsonl").read_text().splitlines(keepends=True)
    (source / "metrics.1700000000.jsonl").write_text("".join(lines[:3]))  # steps 0-2, killed after step 2
    resumed = json.loads(lines[2])
    resumed["data"]["critic/score/mean"] = 0.125  # step 2 again, after resuming from the step-1 checkpoint
    (source / "metrics.jsonl").write_text(json.dumps(resumed) + "\n" + lines[3])
    ingest(source, tmp_path / "run")
    metrics = train_run.read_train_metrics(tmp_path / "run").to_pylist()
    assert [r["step"] for r in metrics] == [1, 2, 3] and metrics[1]["reward/mean"] == 0.125


def test_two_unrelated_logs_in_one_folder_are_refused(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(FIXTURE, source)
    shutil.copy(source / "metrics.jsonl", source / "other.jsonl")
    result = runner.invoke(app, ["ingest", "verl", str(source), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "several veRL logs" in result.stderr


def test_an_out_folder_holding_something_else_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["ingest", "verl", str(FIXTURE), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "not an ingested veRL run" in result.stderr
    assert (tmp_path / "run" / "notes.txt").read_text() == "mine"


def test_nested_estimator_keys_of_a_verl_config_become_nested_hyperparameters():
    from benchctl.integrations.verl_ingest import record_from_settings

    settings = {"algorithm.adv_estimator": "benchctl_ha_dw", "algorithm.benchctl.base": "rloo"}
    settings["algorithm.benchctl.base_params.eps"] = 1e-4  # `+algorithm.benchctl.base_params.eps=1e-4`
    record = record_from_settings(settings, steps=1)
    assert record["estimator_params"]["value"] == {"base": "rloo", "base_params": {"eps": 1e-4}}
