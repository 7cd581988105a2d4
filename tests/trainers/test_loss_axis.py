"""The policy-loss axis: `--loss NAME(params)` picks a registry loss (`benchctl.losses`), the default is the
clipped surrogate of --clip-low/--clip-high (gspo with --ratio sequence), and a matrix's `losses:` is an axis of
arms."""

import pytest

from benchctl.errors import BenchctlError
from benchctl.matrix import parse_matrix
from benchctl.trainers import build_config
from benchctl.trainers.plan import config_warnings, resolve


def test_the_default_loss_is_ppo_clip_with_the_clip_settings_and_gspo_for_the_sequence_ratio():
    assert resolve(build_config(flag_values={"clip_high": 0.28})).loss.label == "ppo_clip(clip_high=0.28)"
    gspo = resolve(build_config(flag_values={"recipe": "gspo"})).loss
    assert gspo.name == "gspo" and (gspo.params.clip_low, gspo.params.clip_high) == (3e-4, 4e-4)


def test_a_named_loss_is_parsed_and_brings_its_papers_aggregation_unless_one_is_set():
    plan = resolve(build_config(flag_values={"loss": "gspo(clip_high=5e-4)", "estimator": "dr_grpo"}))
    assert plan.loss.params.clip_high == 5e-4
    assert plan.estimator.loss_agg == "seq-mean-token-sum-norm" and plan.loss_agg == "seq-mean-token-mean"
    assert resolve(build_config(flag_values={"loss": "gspo", "loss_agg": "token-mean"})).loss_agg == "token-mean"


@pytest.mark.parametrize(
    "values, message",
    [
        ({"loss": "nope"}, "nope"),
        ({"loss": "cispo(nope=1)"}, "nope"),
        ({"loss": "cispo", "clip_high": 0.28}, "clip_high is a parameter of the default loss only"),
    ],
)
def test_bad_losses_and_clip_flags_beside_a_named_loss_are_one_line_errors(values, message):
    with pytest.raises(BenchctlError, match=message) as info:
        resolve(build_config(flag_values=values))
    assert "\n" not in str(info.value)


def test_a_loss_that_needs_several_updates_warns_with_one_step_per_batch():
    lines = config_warnings(resolve(build_config(flag_values={"loss": "cispo"})))
    assert any("loss=cispo acts like gpg" in line for line in lines)
    assert not config_warnings(resolve(build_config(flag_values={"loss": "cispo", "mini_batches": 2})))


def test_a_recipes_clip_range_is_named_inert_under_a_named_loss():
    lines = config_warnings(resolve(build_config(flag_values={"recipe": "dapo", "loss": "cispo"})))
    assert any("clip_high=0.28" in line and "has its own parameters" in line for line in lines)


def test_losses_in_a_matrix_are_an_axis_of_arms_and_an_entry_may_fix_its_own():
    spec = parse_matrix(
        {
            "estimators": {"grpo": {}, "dr_grpo": {"loss": "sapo"}},
            "losses": ["ppo_clip", "cispo(clip_high=5.0)"],
            "seeds": [1],
            "train": {"mini_batches": 2},
        }
    )
    arms = [c.arm for c in spec.cells]
    assert arms == ["grpo+ppo_clip", "grpo+cispo(clip_high=5.0)", "dr_grpo+sapo"], arms
    assert [c.train_values()["loss"] for c in spec.cells] == ["ppo_clip", "cispo(clip_high=5.0)", "sapo"]
    assert len({c.name for c in spec.cells}) == 3


def test_a_matrix_without_losses_keeps_its_cell_names_and_arms():
    spec = parse_matrix({"estimators": {"grpo": {}}, "seeds": [1]})
    assert [c.name for c in spec.cells] == ["tiny-grpo-G8-s1"] and spec.cells[0].arm == "grpo"
    assert "loss" not in spec.cells[0].train_values()


def test_an_unknown_loss_in_a_matrix_names_the_file_and_the_valid_losses():
    with pytest.raises(BenchctlError, match="m.yaml: losses: .*nope"):
        parse_matrix({"estimators": {"grpo": {}}, "losses": ["nope"]}, "m.yaml")


@pytest.mark.parametrize("loss", ["cispo", "sapo", "dppo_tv"])
def test_a_named_loss_trains_end_to_end_and_is_recorded_in_the_run(loss, tiny_model, tmp_path):
    import json
    import math

    from benchctl.trainers import train

    flags = {"prompts_per_step": 4, "group_size": 4, "steps": 1, "save_every": 0, "progress": False}
    result = train(build_config(flag_values={**flags, "loss": loss, "mini_batches": 2, "out": str(tmp_path / "r")}))
    row = result.metrics[0]
    assert math.isfinite(row["loss/total"]) and row["update/optimizer_steps"] == 2
    record = json.loads((tmp_path / "r" / "config.json").read_text())["config"]
    assert record["loss"]["value"] == loss and record["loss_resolved"]["value"] == loss


def test_the_loss_skips_rows_without_a_nonzero_token_advantage_unless_kl_is_on():
    import torch

    from benchctl.trainers.build import Objective
    from benchctl.trainers.rollout_correction import RolloutCorrection

    adv = torch.tensor([[0.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])  # row 1's non-zero is on padding
    without, with_kl = (Objective(None, "token-mean", kl, 2, RolloutCorrection()) for kl in (0.0, 0.1))
    assert without.active_rows(adv, mask).tolist() == [False, False, True]
    assert with_kl.active_rows(adv, mask).tolist() == [True, True, True]
