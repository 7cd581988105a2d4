"""OAR importance scores (spec §7): the answer span is found in the completion's tokens; gradient x input and
perturbation scores live on the reasoning tokens only, are >= 0, and feed `est.token_advantages`."""

import pytest
import torch

from benchctl.estimators import get_estimator
from benchctl.tasks import get_task
from benchctl.trainers.policy import load_policy, pack
from benchctl.trainers.scores import SCORERS, answer_masks

TEXTS = ["7+5 is 12, so \\boxed{12}", "no answer here"]


@pytest.fixture(scope="module")
def setup(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS]
    prompts = [tok("7+5=", add_special_tokens=False)["input_ids"]] * 2
    batch = pack(prompts, ids, tok.pad_token_id)
    reasoning, answer = answer_masks(get_task("math500"), TEXTS, ids, tok, batch.tokens.shape[1])
    return load_policy(str(tiny_model), "cpu"), tok, batch, reasoning, answer


def test_answer_span_is_the_last_boxed_answer_and_reasoning_is_before_it(setup):
    _, tok, batch, reasoning, answer = setup
    first = TEXTS[0].rfind("12")
    assert answer[0].nonzero().squeeze(1).tolist() == [first, first + 1]  # one token per character
    assert reasoning[0].sum() == first and not reasoning[0, first:].any()
    assert not reasoning[1].any() and not answer[1].any()  # no answer found: no reasoning span, weight 1


@pytest.mark.parametrize("kind", sorted(SCORERS))
def test_scores_are_nonnegative_and_only_on_reasoning_tokens(setup, kind):
    model, tok, batch, reasoning, answer = setup
    scores = SCORERS[kind](model, batch, answer, reasoning, 1.0, tok.pad_token_id)
    assert scores.shape == reasoning.shape
    assert (scores >= 0).all() and (scores[~reasoning] == 0).all()
    assert scores[reasoning].sum() > 0


def test_oar_token_advantages_preserve_mass_over_the_reasoning_span(setup):
    model, tok, batch, reasoning, answer = setup
    scores = SCORERS["gradient"](model, batch, answer, reasoning, 1.0, tok.pad_token_id)
    est = get_estimator("oar_g")
    adv = est.token_advantages(torch.tensor([1.0, -1.0], dtype=torch.float64), scores.double(), reasoning)
    n = int(reasoning[0].sum())
    assert float(adv[0, reasoning[0]].sum()) == pytest.approx(n)  # w <- w L / sum(w)
    assert torch.all(adv[1] == -1.0)  # no reasoning span: weight 1 everywhere
