"""Issue 16 wired into `benchctl train`, on the tiny model and this CPU: the weight sync is verified on a probe
(a broken sync stops the run at step 1 in one line), token-budget micro-batches give the one-batch metrics,
bf16 autocast trains over fp32 master weights, the rollout correction weights the update and logs the mismatch,
and `--report-to tensorboard` receives every step's row."""

import math

import pytest
import torch
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.engine import Engine
from benchctl.errors import BenchctlError
from benchctl.trainers import build_config, train

pytestmark = pytest.mark.vllm

SMALL = {"prompts_per_step": 8, "group_size": 8, "steps": 2, "save_every": 0, "progress": False}
BROKEN = "step 1: the engine does not sample with the policy's weights after the sync (weights read back from vLLM: "


def _run(tmp_path, name, **extra):
    return train(build_config(flag_values={**SMALL, **extra, "out": str(tmp_path / name)}))


def test_a_sync_that_changes_nothing_stops_the_run_at_step_1_in_one_line(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(Engine, "load_weights", lambda self, state_dict: None)
    args = ["train", "--prompts-per-step", "8", "-G", "8", "--steps", "2", "--save-every", "0", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    # (vLLM's weight-loading bar of the reused engine may come first: CliRunner's stderr is not the terminal's)
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1 and BROKEN in lines[0] and " values of " in lines[0] and " differ, first in " in lines[0]
    assert "Traceback" not in result.output


def test_a_working_sync_passes_the_probe_every_step_and_the_check_can_be_turned_off(tiny_model, tmp_path, monkeypatch):
    result = _run(tmp_path, "ok")
    assert result.steps == 2
    for row in result.metrics:  # fp32 engine and fp32 policy: the same weights give the same log-probs
        assert 0 <= row["sync/probe_gap"] < 1e-4 and row["time/sync_check"] >= 0
    monkeypatch.setattr(Engine, "load_weights", lambda self, state_dict: None)
    unchecked = _run(tmp_path, "off", sync_check=0.0)  # the escape hatch: nothing checked, nothing logged
    assert unchecked.steps == 2 and all(math.isnan(r["sync/probe_gap"]) for r in unchecked.metrics)


def test_the_probe_checks_the_restored_weights_of_a_resumed_run(tiny_model, tmp_path, monkeypatch):
    run = tmp_path / "run"
    train(build_config(flag_values={**SMALL, "steps": 1, "out": str(run)}))  # a checkpoint at step 1
    monkeypatch.setattr(Engine, "load_weights", lambda self, state_dict: None)  # the restore does not reach it
    with pytest.raises(BenchctlError, match=r"^step 1: the engine does not sample with the policy's weights"):
        train(build_config(flag_values={"resume": str(run), "steps": 2}))


def test_micro_batches_give_the_one_batch_metrics(tiny_model, tmp_path):
    whole = _run(tmp_path, "whole", mini_batches=2, kl_coef=0.01)  # old and reference log-probs too
    micro = _run(tmp_path, "micro", mini_batches=2, kl_coef=0.01, micro_batch_tokens=48, logprob_chunk_tokens=16)
    for a, b in zip(whole.metrics, micro.metrics):
        assert a["reward/mean"] == b["reward/mean"] and a["rollout/tokens"] == b["rollout/tokens"]  # same samples
        for key in ("loss/total", "policy/grad_norm", "policy/entropy", "policy/kl", "update/param_change"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key


def test_bf16_autocast_trains_fp32_master_weights_and_passes_the_bf16_probe(tiny_model, tmp_path):
    from benchctl.trainers.build import build
    from benchctl.trainers.sync import LOGGED_ONLY

    parts = build(build_config(flag_values={**SMALL, "dtype": "bfloat16", "out": str(tmp_path / "bf16")}))
    assert parts.policy.compute_dtype == torch.bfloat16 and parts.probe.threshold == LOGGED_ONLY
    assert {p.dtype for p in parts.policy.model.parameters()} == {torch.float32}
    parts.trackers.close()
    result = _run(tmp_path, "bf16-run", dtype="bfloat16")
    fp32 = _run(tmp_path, "fp32-run")
    for row, ref in zip(result.metrics, fp32.metrics):
        assert 1e-4 < row["sync/probe_gap"] < 0.25  # bf16 rounding shows (logged; the weights are checked exactly)
        assert row["update/param_change"] > 0 and math.isfinite(row["loss/total"])
        assert row["logprob/engine_gap"] > ref["logprob/engine_gap"]  # the bf16 policy against the fp32 engine


def test_rollout_correction_weights_the_update_and_the_mismatch_is_logged_in_every_mode(tiny_model, tmp_path):
    plain = _run(tmp_path, "none")
    tis = _run(tmp_path, "tis", rollout_correction="tis")
    for a, b in zip(plain.metrics, tis.metrics):
        assert abs(a["rollout_corr/kl_k3"]) < 1e-6 and a["rollout_corr/ratio_ess"] == pytest.approx(1.0, abs=1e-5)
        assert "rollout_corr/weight_mean" not in a  # no weights without a correction
        # fp32 engine and policy agree to ~1e-7: the weights are 1 and the update is the uncorrected one
        assert b["rollout_corr/weight_mean"] == pytest.approx(1.0, abs=1e-5) and b["rollout_corr/truncated_frac"] == 0
        assert b["loss/total"] == pytest.approx(a["loss/total"], rel=1e-4, abs=1e-6)


def test_rejection_drops_the_rows_whose_engine_log_probs_disagree(tiny_model, tmp_path, monkeypatch):
    import benchctl.trainers.loop as loop

    real = loop.sampled_logprobs

    def shifted(samples, batch):  # the engine "sampled" rows 0, 2, 4, ... 1 nat per token more likely
        out = real(samples, batch)
        out[::2] += batch.mask[::2]
        return out

    monkeypatch.setattr(loop, "sampled_logprobs", shifted)
    result = _run(tmp_path, "rs", rollout_correction="rs", steps=1)
    row = result.metrics[0]
    assert row["rollout_corr/kl_k1"] > 0.4  # measured on the groups' first rows, all shifted
    if row["update/rows_trained"]:
        assert 0 < row["rollout_corr/masked_frac"] < 1 and row["rollout_corr/weight_mean"] < 1


def test_report_to_tensorboard_receives_every_steps_row(tiny_model, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = _run(tmp_path, "tb", report_to="tensorboard")
    acc = EventAccumulator(str(tmp_path / "tb" / "tensorboard"))
    acc.Reload()
    for key in ("loss/total", "sync/probe_gap", "update/param_change", "rollout_corr/kl_k3"):
        events = acc.Scalars(key)
        assert [e.step for e in events] == [1, 2]
        assert [e.value for e in events] == pytest.approx([r[key] for r in result.metrics], rel=1e-6)


def test_an_exported_model_keeps_fp32_master_weights_and_declares_the_source_dtype(tiny_model, tmp_path):
    import json
    import shutil

    from safetensors.torch import load_file

    from benchctl.trainers.checkpoint import export_model
    from benchctl.trainers.weights import load_policy

    source = tmp_path / "bf16-source"
    shutil.copytree(tiny_model, source)
    config = json.loads((source / "config.json").read_text())
    config["dtype" if "dtype" in config else "torch_dtype"] = "bfloat16"  # as Qwen2.5's config says
    (source / "config.json").write_text(json.dumps(config))
    model = load_policy(str(source), "cpu", dtype=torch.float32)
    export_model(model, str(source), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "config.json").read_text())
    assert saved.get("dtype", saved.get("torch_dtype")) == "bfloat16"  # vLLM / eval compute as the source did
    weights = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float32}  # a resume restores the master weights exactly
