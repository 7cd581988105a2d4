"""The issue-43 methods in the trainer: F-GRPO and RL-ZVP (estimators), UP and TOPR (losses) train a step end to end
and log `mechanism/<name>/acted`; RL-ZVP's zero-variance rows get entropy-guided token advantages (the policy's
entropies, `scores.entropy_scores`), so a step of all-wrong groups still trains rows where GRPO trains none."""

import pytest
import torch

from benchctl.trainers import build_config, train
from benchctl.trainers.batch import pack
from benchctl.trainers.policy import completion_logits, token_entropy
from benchctl.trainers.scores import Scoring, entropy_scores, score_masks
from benchctl.trainers.weights import load_policy

FLAGS = {"prompts_per_step": 4, "group_size": 4, "steps": 1, "save_every": 0, "progress": False}


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.parametrize(
    "flags, name",
    [
        ({"estimator": "rl_zvp"}, "rl_zvp"),
        ({"estimator": "f_grpo"}, "f_grpo"),
        ({"loss": "up", "mini_batches": 2}, "up"),
        ({"loss": "topr", "mini_batches": 2}, "topr"),
    ],
)
def test_a_new_method_trains_a_step_and_logs_whether_its_mechanism_acted(flags, name, tiny_model, tmp_path):
    result = train(build_config(flag_values={**FLAGS, **flags, "out": str(tmp_path / "r")}))
    row = result.metrics[0]
    assert row[f"mechanism/{name}/acted"] in (0.0, 1.0)
    if name == "rl_zvp" and row["acr/all"] > 0:  # a zero-variance group got a signal, and its rows were trained
        assert row[f"mechanism/{name}/acted"] == 1.0 and row["update/rows_trained"] > 0
        assert 0 < row["est/zvp_shaped_frac"] <= 1  # the entropies shaped them, logged under RL-ZVP's own name
    assert not any(key.startswith("oar/") for key in row)  # OAR's metrics are OAR's alone


@pytest.mark.slow
@pytest.mark.vllm
def test_rl_zvp_trains_rows_of_all_wrong_groups_that_grpo_skips(tiny_model, tmp_path):
    rows = {}
    for est in ("grpo", "rl_zvp"):
        out = str(tmp_path / est)
        rows[est] = train(build_config(flag_values={**FLAGS, "estimator": est, "out": out})).metrics[0]
    zvp_rows = rows["grpo"]["acr/all"] * FLAGS["prompts_per_step"] * FLAGS["group_size"]
    assert zvp_rows > 0, "the tiny model's step needs a zero-variance group for this test"
    assert rows["rl_zvp"]["update/rows_trained"] == rows["grpo"]["update/rows_trained"] + zvp_rows


@pytest.mark.slow
def test_entropy_scores_are_the_policys_entropy_on_every_response_token(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    texts = ["7+5 is 12", "no"]
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    batch = pack([tok("7+5=", add_special_tokens=False)["input_ids"]] * 2, ids, tok.pad_token_id)
    span, answer = score_masks("entropy", None, texts, ids, tok, batch.mask)
    assert torch.equal(span, batch.mask.bool()) and not answer.any()
    model = load_policy(str(tiny_model), "cpu")
    got = entropy_scores(model, batch, answer, span, Scoring(1.0, tok.pad_token_id))
    with torch.no_grad():
        want = token_entropy(completion_logits(model, batch, 1.0)) * batch.mask
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-6)
    split = entropy_scores(model, batch, answer, span, Scoring(1.0, tok.pad_token_id, 1, 4))  # micro-batches, chunks
    torch.testing.assert_close(split, got, rtol=1e-5, atol=1e-6)


def test_rl_zvp_beside_dynamic_sampling_is_named_void_and_runs_on_tasks_without_a_reasoning_span():
    from benchctl.errors import BenchctlError
    from benchctl.trainers.build import preflight
    from benchctl.trainers.plan import config_warnings, resolve

    lines = config_warnings(resolve(build_config(flag_values={"estimator": "rl_zvp", "dynamic_sampling": True})))
    assert any("rl_zvp acts only on degenerate groups" in line and "void" in line for line in lines)
    preflight(resolve(build_config(flag_values={"estimator": "rl_zvp", "task": "arith"})))  # entropies need no span
    with pytest.raises(BenchctlError, match="answer alone"):
        preflight(resolve(build_config(flag_values={"estimator": "oar_g", "task": "arith"})))
