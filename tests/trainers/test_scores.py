"""OAR importance scores (docs/contract.md §7): the answer span is found in the completion's tokens; gradient x input
and perturbation scores live on the reasoning tokens only, are >= 0, and feed `est.token_advantages`."""

import pytest
import torch

from benchctl.estimators import get_estimator
from benchctl.tasks import get_task
from benchctl.trainers.batch import pack
from benchctl.trainers.scores import SCORERS, Scoring, answer_masks
from benchctl.trainers.weights import load_policy

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
    scores = SCORERS[kind](model, batch, answer, reasoning, Scoring(1.0, tok.pad_token_id))
    assert scores.shape == reasoning.shape
    assert (scores >= 0).all() and (scores[~reasoning] == 0).all()
    assert scores[reasoning].sum() > 0


@pytest.mark.parametrize("kind", sorted(SCORERS))
def test_scores_in_micro_batches_and_vocabulary_chunks_equal_the_one_batch_scores(setup, kind):
    model, tok, batch, reasoning, answer = setup
    whole = SCORERS[kind](model, batch, answer, reasoning, Scoring(1.0, tok.pad_token_id))
    # a budget of 1 token: every row is a micro-batch of its own; log-probs in blocks of 4 positions
    split = SCORERS[kind](model, batch, answer, reasoning, Scoring(1.0, tok.pad_token_id, 1, 4))
    assert whole[reasoning].sum() > 0
    # perturbation scores are differences of two mean log-probs of a few nats: fp32 rounding ~1e-6 of them
    torch.testing.assert_close(split, whole, atol=1e-5, rtol=1e-4)


def test_oar_token_advantages_preserve_mass_over_the_reasoning_span(setup):
    model, tok, batch, reasoning, answer = setup
    scores = SCORERS["gradient"](model, batch, answer, reasoning, Scoring(1.0, tok.pad_token_id))
    est = get_estimator("oar_g")
    adv = est.token_advantages(torch.tensor([1.0, -1.0], dtype=torch.float64), scores.double(), reasoning)
    n = int(reasoning[0].sum())
    assert float(adv[0, reasoning[0]].sum()) == pytest.approx(n)  # w <- w L / sum(w)
    assert torch.all(adv[1] == -1.0)  # no reasoning span: weight 1 everywhere


# ---- the answer span: where the extractor reads, in correct token offsets -------------------------------------


def _span(task_name, text, tok):
    ids = tok(text, add_special_tokens=False)["input_ids"]
    reasoning, answer = answer_masks(get_task(task_name), [text], [ids], tok, len(ids))
    return ids, reasoning[0], answer[0]


def test_a_byte_token_splitting_a_multibyte_character_keeps_the_span(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))  # byte-level, no merges: "é" is two byte tokens
    text = "café: 7+5 is 12, so \\boxed{12}"
    ids, reasoning, answer = _span("math500", text, tok)
    assert len(ids) == len(text) + 1 and tok.decode(ids[3:4]) == "\ufffd"  # a token holding half of "é"
    assert tok.decode([t for t, a in zip(ids, answer) if a]) == "12"
    assert int(reasoning.sum()) == answer.nonzero()[0].item() and tok.decode(ids[: int(reasoning.sum())]).endswith("{")


def test_an_answer_made_of_multibyte_characters_covers_all_their_bytes(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    ids, reasoning, answer = _span("math500", "so \\boxed{π/2}", tok)
    assert tok.decode([t for t, a in zip(ids, answer) if a]) == "π/2" and int(answer.sum()) == 4  # π = 2 bytes


def test_the_span_is_the_last_box_not_a_later_occurrence_of_its_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    text = "so \\boxed{12}, and 12 is even"
    ids, reasoning, answer = _span("math500", text, tok)
    first = text.index("{12}") + 1
    assert answer.nonzero().squeeze(1).tolist() == [first, first + 1]  # inside the box (rfind("12") is later)
    assert int(reasoning.sum()) == first


def test_arith_steps_span_is_the_answer_after_the_work(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    text = "8,10=12,12"  # the extractor reads the integer after the last "=", not the last "12"
    ids, reasoning, answer = _span("arith_steps", text, tok)
    assert answer.nonzero().squeeze(1).tolist() == [5, 6] and reasoning.nonzero().squeeze(1).tolist() == [0, 1, 2, 3, 4]
    _, reasoning, answer = _span("arith", "12", tok)
    assert answer.tolist() == [True, True] and not reasoning.any()  # arith: the completion is the answer


def _bpe_tokenizer():
    """A byte-level BPE with merges, trained here (no download): tokens span several characters and bytes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["the answer is \\boxed{12} and 12", "café crème brûlée 中文 答案", "so the answer is 12"] * 50
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok)


@pytest.mark.parametrize(
    "text, answer",
    [
        ("crème 中文, the answer is \\boxed{12} and 12", "12"),
        ("答案 is \\boxed{答案}", "答案"),
        ("brûlée is \\boxed{brûlée}", "brûlée"),
    ],
)
def test_token_range_matches_the_tokenizers_own_offsets(text, answer):
    from benchctl.trainers.scores import token_range

    tok = _bpe_tokenizer()
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"]
    assert "".join(tok.decode([t]) for t in ids) != text  # some token splits a multi-byte character
    start = text.index("{") + 1
    end = start + len(answer)
    want = [j for j, (a, b) in enumerate(enc["offset_mapping"]) if a < end and b > start]  # tokenizers' offsets
    first, last = token_range(ids, tok, text, start, end)
    assert list(range(first, last)) == want and tok.decode(ids[first:last]) == answer
    assert token_range(ids, tok, text + "x", start, end) is None  # ids that do not decode to the text: no span
