"""`arith_chat`: disjoint splits covering every question, words in the prompt, free-form answers graded on the last box
or the last integer; prompts rendered with a chat template wherever a sampler renders them."""

import pytest
from transformers import AutoTokenizer

from benchctl.lab.difficulty import batch_rows
from benchctl.tasks import get_task
from benchctl.tasks.arith_chat import split_questions
from benchctl.tasks.base import Problem, render_prompt


def test_the_three_splits_are_disjoint_and_hold_all_200_questions():
    splits = [set(split_questions(s)) for s in ("train", "test", "validation")]
    assert sum(map(len, splits)) == len(set().union(*splits)) == 200
    assert all(len(s) >= 10 for s in splits[1:])  # a held-out set of both operations
    test = {f"{a}{op}{b}=" for op, a, b in splits[1]}
    assert test == {p.question for p in get_task("arith_chat").load()}


def test_a_problem_depends_only_on_seed_split_and_index():
    a = get_task("arith_chat", split="train", seed=3).load(limit=50)
    b = get_task("arith_chat", split="train", seed=3, size=50).load()
    c = get_task("arith_chat", split="train", seed=4).load(limit=50)
    assert a == b and a != c
    assert {p.meta["level"] for p in a} == {"sum", "product"}


def test_the_prompt_asks_in_words_for_a_boxed_answer():
    task = get_task("arith_chat")
    problems = {p.question: p for p in task.load()}
    sums = [p for q, p in problems.items() if "+" in q]
    products = [p for q, p in problems.items() if "*" in q]
    a, b = sums[0].question[:-1].split("+")
    assert task.prompt_text(sums[0]) == f"What is {a} + {b}? Put your final answer within \\boxed{{}}."
    a, b = products[0].question[:-1].split("*")
    assert task.prompt_text(products[0]) == f"What is {a} times {b}? Put your final answer within \\boxed{{}}."
    assert task.messages(sums[0]) == [{"role": "user", "content": task.prompt_text(sums[0])}]


@pytest.mark.parametrize(
    ("completion", "extracted", "correct"),
    [
        ("6 + 6 equals 12.", "12", True),  # a sentence ends on its answer
        ("12 is what 6 + 6 gives", "6", False),  # the last integer is read, not the first
        ("6 + 6 = 11, so the answer is \\boxed{12}. Check: 13", "12", True),  # a box wins over later numbers
        ("The answer is \\boxed{}.", None, False),  # an empty box is no answer, not a number elsewhere
        ("I cannot say.", None, False),
        ("It is \\boxed{twelve}", "twelve", False),  # a box holding no integer is a parse error
    ],
)
def test_free_form_answers_grade_on_the_last_box_else_the_last_integer(completion, extracted, correct):
    task = get_task("arith_chat")
    problem = Problem("p", "6+6=", "12", {"level": "sum"})
    (verdict,) = task.grade([(problem, completion)])
    assert (verdict.extracted, verdict.correct) == (extracted, correct)


def test_render_prompt_applies_a_chat_template_and_falls_back_to_the_plain_prompt(chat_model):
    from benchctl.models.cache import cached_tiny_model

    task = get_task("arith_chat")
    problem = task.load(limit=1)[0]
    chat = render_prompt(AutoTokenizer.from_pretrained(chat_model), task, problem)
    assert chat == f"<user>{task.prompt_text(problem)}\n<assistant>"
    plain = render_prompt(AutoTokenizer.from_pretrained(cached_tiny_model()), task, problem)
    assert plain == task.prompt_text(problem)


def test_sampling_batches_shrink_to_keep_a_real_models_kv_cache_in_budget():
    from transformers import LlamaConfig, Qwen2Config

    smollm2 = LlamaConfig(num_hidden_layers=30, hidden_size=576, num_attention_heads=9, num_key_value_heads=3)
    tiny = Qwen2Config(num_hidden_layers=4, hidden_size=128, num_attention_heads=4, num_key_value_heads=2)
    assert batch_rows(tiny, 40) == 4096
    assert 300 < batch_rows(smollm2, 124) < 400  # 46 KB of fp32 keys and values a token, 2 GiB
    assert batch_rows(smollm2, 10**9) == 1
