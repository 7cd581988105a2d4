"""Recipes do what their papers do: several optimizer steps per rollout batch so the ratio leaves 1 and the
clip ranges bind; DAPO's overlong reward shaping; dynamic sampling after the estimator; diagnostics measured on the
same rows for every arm; settings that cannot act are named, undefined ones refused."""

import math

import numpy as np
import pyarrow.compute as pc
import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.results import train_run
from benchctl.trainers import build_config, train
from benchctl.trainers.plan import config_warnings, record, resolve
from benchctl.trainers.shaping import overlong_penalty

runner = CliRunner()
SMALL = {"prompts_per_step": 8, "group_size": 4, "steps": 1, "save_every": 0, "progress": False}


def _run(tmp_path, name, **values):
    out = tmp_path / name
    result = train(build_config(flag_values={**SMALL, **values, "out": str(out)}))
    return result.metrics, load_file(str(out / "model" / "model.safetensors")), out


def _max_diff(a, b) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


# ---- overlong reward shaping (DAPO Eq. 13) ------------------------------------------------------------------------


def test_overlong_penalty_follows_dapo_eq_13():
    # L_max = 20, L_cache = 4: 0 up to 16 tokens, then linear to -1 at 20, -1 beyond
    lengths = np.array([0, 10, 16, 17, 18, 20, 21, 40])
    expected = [0.0, 0.0, 0.0, -0.25, -0.5, -1.0, -1.0, -1.0]
    np.testing.assert_allclose(overlong_penalty(lengths, 20, 4), expected)
    np.testing.assert_allclose(overlong_penalty(lengths, 20, 4, factor=0.5), np.array(expected) * 0.5)


def test_overlong_penalty_is_zero_when_shaping_is_off_and_keeps_the_shape():
    lengths = np.array([[1, 8], [7, 3]])
    assert overlong_penalty(lengths, 8, 0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert overlong_penalty(lengths, 8, 2).shape == (2, 2)


def test_dapo_recipe_buffer_is_a_fifth_of_max_tokens():
    stored = record(resolve(build_config(flag_values={"recipe": "dapo", "max_tokens": 20})))
    assert stored["overlong_buffer_resolved"]["value"] == 4  # 4096 / 20480 of DAPO §4.1
    assert record(resolve(build_config(flag_values={})))["overlong_buffer_resolved"]["value"] == 0


def test_shaped_rewards_are_refused_for_estimators_that_need_binary_rewards():
    for estimator in ("passk", "a_grae", "w_reinforce"):
        with pytest.raises(BenchctlError, match="cannot train on shaped rewards"):
            resolve(build_config(flag_values={"recipe": "dapo", "estimator": estimator}))
        resolve(build_config(flag_values={"recipe": "dapo", "estimator": estimator, "overlong_shaping": False}))


def test_overlong_buffer_must_leave_room_below_max_tokens():
    with pytest.raises(BenchctlError, match="overlong_buffer=8 must be below max_tokens=8"):
        resolve(build_config(flag_values={"recipe": "dapo", "overlong_buffer": 8}))


# ---- recipes set the update structure ---------------------------------------------------------------------------


def test_recipe_mini_batches_are_capped_at_the_rows_of_a_small_batch():
    assert build_config(flag_values={"recipe": "dapo"}).mini_batches == 16
    assert build_config(flag_values={"recipe": "gspo"}).mini_batches == 4
    assert build_config(flag_values={"recipe": "dapo", "prompts_per_step": 2, "group_size": 4}).mini_batches == 8


def test_clip_and_sequence_ratio_with_one_update_per_batch_are_named_inert():
    plan = resolve(build_config(flag_values={"recipe": "gspo", "mini_batches": 1}))
    assert plan.inert == ("ratio=sequence", "clip_low=0.0003", "clip_high=0.0004")
    assert len(config_warnings(plan)) == 1 and "cannot act" in config_warnings(plan)[0]
    assert record(plan)["inert_settings"]["value"] == list(plan.inert)
    assert resolve(build_config(flag_values={"recipe": "gspo"})).inert == ()
    assert resolve(build_config(flag_values={})).inert == ()


def test_train_prints_one_warning_line_for_inert_settings(monkeypatch, tmp_path):
    monkeypatch.setattr("benchctl.trainers.train", lambda cfg, display=None: (_ for _ in ()).throw(SystemExit(0)))
    result = runner.invoke(app, ["train", "--clip-high", "0.28", "--out", str(tmp_path / "r")])
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "clip_high=0.28 cannot act" in warnings[0]


def test_avspo_under_dynamic_sampling_is_named_void_by_train_and_matrix_dry_run(monkeypatch, tmp_path):
    plan = resolve(build_config(flag_values={"recipe": "dapo", "estimator": "avspo"}))
    assert plan.inert == ("estimator=avspo",) and "void" in config_warnings(plan)[0]
    assert resolve(build_config(flag_values={"recipe": "dapo", "estimator": "ha_dw"})).inert == ()
    matrix = tmp_path / "m.yaml"
    matrix.write_text("estimators: {grpo: {}, avspo: {}}\nrecipes: [dapo]\ngroup_sizes: [4]\ntrain: {steps: 1}\n")
    result = runner.invoke(app, ["matrix", "run", str(matrix), "--results", str(tmp_path / "res"), "--dry-run"])
    assert result.exit_code == 0, result.output
    void = [line for line in result.output.splitlines() if "void" in line]
    assert len(void) == 1 and "avspo" in void[0]


# ---- undefined settings are refused --------------------------------------------------------------------------------


def test_group_size_one_is_refused(tmp_path):
    result = runner.invoke(app, ["train", "--group-size", "1", "--out", str(tmp_path / "run")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "needs group_size >= 2" in lines[0]
    assert not (tmp_path / "run").exists()
    for estimator in ("rloo", "w_reinforce", "ngrpo"):  # defined without group statistics
        resolve(build_config(flag_values={"estimator": estimator, "group_size": 1}))
    with pytest.raises(BenchctlError, match="needs group_size >= 2"):
        resolve(
            build_config(flag_values={"estimator": "ha_dw", "estimator_params": {"base": "dr_grpo"}, "group_size": 1})
        )


def test_settings_that_leave_an_estimator_or_the_ratio_undefined_are_refused():
    with pytest.raises(BenchctlError, match="top_p=0.9 < 1 cannot train"):
        resolve(build_config(flag_values={"top_p": 0.9}))
    with pytest.raises(BenchctlError, match="k=4 is out of range for G=2"):
        resolve(build_config(flag_values={"estimator": "passk", "group_size": 2}))


# ---- the update: GSPO and DAPO act ---------------------------------------------------------------------------------

pytest_vllm = pytest.mark.vllm


@pytest_vllm
def test_gspo_update_differs_from_grpo(tiny_model, tmp_path):
    grpo, w_grpo, _ = _run(tmp_path, "grpo")
    gspo, w_gspo, _ = _run(tmp_path, "gspo", recipe="gspo")
    inert, w_inert, _ = _run(tmp_path, "gspo1", recipe="gspo", mini_batches=1)
    assert gspo[0]["update/optimizer_steps"] == 4 and grpo[0]["update/optimizer_steps"] == 1
    assert gspo[0]["policy/clip_low"] + gspo[0]["policy/clip_high"] > 0  # the ratio left 1 and the clip bound
    assert grpo[0]["policy/clip_low"] == grpo[0]["policy/clip_high"] == 0
    assert _max_diff(w_gspo, w_grpo) > 1e-4
    assert _max_diff(w_inert, w_grpo) < 1e-6  # one update per batch: GSPO's ratio is 1, its gradient GRPO's


@pytest_vllm
def test_dapo_clip_high_changes_the_update(tiny_model, tmp_path):
    # against no upper clip: 0.28 vs 0.2 differ only through tokens whose ratio lands in (1.2, 1.28], which a
    # tiny model's few coarse steps may not produce; the clip fraction says whether 0.28 bound at all
    dapo, w_dapo, _ = _run(tmp_path, "dapo", recipe="dapo")
    free, w_free, _ = _run(tmp_path, "free", recipe="dapo", clip_high=100.0)
    assert dapo[0]["update/optimizer_steps"] == 16 and dapo[0]["policy/clip_high"] > 0
    assert dapo[0]["reward/mean"] == free[0]["reward/mean"]  # the same rollouts ...
    assert _max_diff(w_dapo, w_free) > 1e-5  # ... and a different update
    one, w_one, _ = _run(tmp_path, "one", recipe="dapo", mini_batches=1)
    one_free, w_one_free, _ = _run(tmp_path, "one_free", recipe="dapo", mini_batches=1, clip_high=100.0)
    assert one[0]["policy/clip_high"] == 0 and _max_diff(w_one, w_one_free) == 0  # one update: the clip is inert


@pytest_vllm
def test_est_acr_equals_acr_all_under_dapo(tiny_model, tmp_path):
    rows, _, run = _run(tmp_path, "hadw", recipe="dapo", estimator="ha_dw", steps=2)
    rollouts = train_run.read_rollouts(run)
    assert any(r["rollout/groups"] > r["rollout/groups_trained"] for r in rows)  # the filter dropped groups
    for r in rows:
        assert r["est/acr"] == r["acr/all"]
        step = rollouts.filter(pc.equal(rollouts["step"], r["step"]))
        assert step.num_rows == 4 * r["rollout/groups"]  # every sampled group logged: the estimator's batch
        assert r["est/batch_acc"] == pytest.approx(np.mean(step["reward"].to_pylist()))  # HA-DW's y: all groups
        assert r["update/rows_trained"] <= 4 * r["rollout/groups_trained"]


@pytest_vllm
def test_entropy_and_gap_do_not_depend_on_skipping_zero_advantage_rows(tiny_model, tmp_path):
    skip, _, _ = _run(tmp_path, "skip", skip_zero_advantage=True)
    full, _, _ = _run(tmp_path, "full", skip_zero_advantage=False)
    assert skip[0]["update/rows_skipped"] > 0 and full[0]["update/rows_skipped"] == 0
    for key in ("policy/entropy", "logprob/engine_gap", "logprob/engine_gap_max"):
        assert math.isfinite(skip[0][key]) and skip[0][key] == full[0][key], key


@pytest_vllm
def test_entropy_is_measured_before_the_update_whatever_the_mini_batches(tiny_model, tmp_path):
    one, _, _ = _run(tmp_path, "one")
    many, _, _ = _run(tmp_path, "many", mini_batches=8)
    assert one[0]["policy/entropy"] == many[0]["policy/entropy"]
    assert many[0]["logprob/engine_gap"] < 1e-3  # the engine's weights, not a half-updated policy
    assert torch.isfinite(torch.tensor(many[0]["policy/grad_norm"]))


@pytest_vllm
def test_resume_under_dapo_with_a_stateful_estimator_is_exact(tiny_model, tmp_path):
    values = {**SMALL, "recipe": "dapo", "estimator": "ha_dw", "steps": 4, "save_every": 2}
    whole = train(build_config(flag_values={**values, "out": str(tmp_path / "whole")})).metrics
    train(build_config(flag_values={**values, "steps": 2, "out": str(tmp_path / "cut")}))
    resumed = train(build_config(flag_values={"resume": str(tmp_path / "cut"), "steps": 4})).metrics
    assert len(whole) == len(resumed) == 4
    for a, b in zip(whole, resumed):  # HA-DW's anchor, the data position and the sampling rounds carry over
        same = {k: a[k] for k in a if not k.startswith("time/")}
        assert same == {k: b[k] for k in same}, a["step"]
    rollouts = [train_run.read_rollouts(tmp_path / name).drop(["completion"]) for name in ("whole", "cut")]
    assert rollouts[0].equals(rollouts[1])
