"""The synthetic `arith` and `arith_steps` tasks: determinism, disjoint splits, levels, extraction, answer spans
and exact-integer grading."""

import itertools

import pytest

from benchctl.errors import BenchctlError
from benchctl.tasks import Problem, get_task
from benchctl.tasks.arith import split_of


def test_same_seed_gives_identical_problems():
    assert get_task("arith", seed=3).load() == get_task("arith", seed=3).load()


def test_different_seeds_and_splits_give_different_streams():
    base = get_task("arith", seed=0).load(limit=50)
    assert base != get_task("arith", seed=1).load(limit=50)
    assert base != get_task("arith", split="train").load(limit=50)


def test_limit_and_size_give_prefixes_of_one_stream():
    long = get_task("arith", size=200).load()
    assert get_task("arith", size=50).load() == long[:50]
    assert get_task("arith", size=200).load(limit=7) == long[:7]


@pytest.mark.parametrize("size", [10, 1000, 20000])
def test_arith_train_and_test_share_no_question_at_any_size(size):
    for name, seed in (("arith", 0), ("arith", 3), ("arith_steps", 0)):
        train = {p.question for p in get_task(name, split="train", seed=seed, size=size).load()}
        test = {p.question for p in get_task(name, split="test", seed=seed, size=size).load()}
        val = {p.question for p in get_task(name, split="validation", seed=seed, size=size).load()}
        assert train and test and val and not train & test, (name, seed, size)
        assert not val & train and not val & test, (name, seed, size)


def test_the_validation_tasks_are_the_validation_split():
    assert get_task("arith_val").load(limit=30) == get_task("arith", split="validation").load(limit=30)
    steps = get_task("arith_steps_val")
    assert [p.question for p in steps.load(limit=30)] == [p.question for p in get_task("arith_val").load(limit=30)]
    assert steps.prompt_text(steps.load(limit=1)[0]).endswith(":")


def test_splits_are_disjoint_across_seeds_and_term_ranges():
    train = {p.question for p in get_task("arith", split="train", seed=1, size=4000, max_terms=3).load()}
    test = {p.question for p in get_task("arith", split="test", seed=2, size=4000).load()}
    assert not train & test


def test_every_question_lies_in_the_split_its_hash_names():
    for split in ("train", "test", "validation"):
        assert {split_of(p.question) for p in get_task("arith", split=split, size=2000).load()} == {split}
    sums = ["+".join(map(str, t)) + "=" for t in itertools.product(range(10), repeat=2)]
    counts = {s: sum(split_of(q) == s for q in sums) for s in ("train", "test", "validation")}
    assert counts == {"train": 82, "test": 10, "validation": 8}  # the level-2 questions (module docstring)


def test_arith_steps_asks_the_same_questions_with_another_prompt():
    plain, steps = get_task("arith").load(limit=20), get_task("arith_steps").load(limit=20)
    assert [p.question for p in plain] == [p.question for p in steps]
    task = get_task("arith_steps")
    assert task.prompt_text(steps[0]) == steps[0].question[:-1] + ":" != get_task("arith").prompt_text(plain[0])


@pytest.mark.parametrize(
    "question, completion", [("3+5=", "8=8"), ("3+5+2+1=", "8,10,11=11"), ("9+9+9+9+9=", "18,27,36,45=45")]
)
def test_arith_steps_reference_lists_partial_sums_then_the_answer(question, completion):
    task = get_task("arith_steps")
    problem = Problem("x", question, completion.split("=")[-1])
    assert task.reference_completion(problem) == completion
    assert task.grade([(problem, completion)])[0].correct


@pytest.mark.parametrize(
    "completion, extracted",
    [("8,10=10", "10"), ("8,10=10,3", "10"), ("8=9 =12", "12"), ("8,10", None), ("10", None), ("\\boxed{7} =3", "7")],
)
def test_arith_steps_reads_the_integer_after_the_last_equals_sign(completion, extracted):
    assert get_task("arith_steps").extract(completion) == extracted


@pytest.mark.parametrize(
    "name, completion, answer",
    [
        ("arith", " 12\n3+4=7", "12"),
        ("arith", "so \\boxed{ 12 } then 12", "12"),
        ("arith_steps", "8,10=12,12", "12"),
        ("arith_steps", "8,10,12=12 \\boxed{3}", "3"),
        ("math500", "7+5 is 12, so \\boxed{12} and 12 again", "12"),
    ],
)
def test_answer_span_is_where_the_extractor_reads(name, completion, answer):
    task = get_task(name)
    start, end = task.answer_span(completion)
    assert completion[start:end] == answer == task.extract(completion)
    if "boxed" in completion:
        assert start > completion.index("boxed")  # the box's contents, not another occurrence of the answer text
    elif name == "arith_steps":
        assert start == completion.rindex("=") + 1  # after the work, not the partial sum "12" could also match


def test_levels_are_term_counts_and_balanced():
    problems = get_task("arith", size=400, min_terms=2, max_terms=5).load()
    counts = {}
    for p in problems:
        terms = p.question.rstrip("=").split("+")
        assert len(terms) == p.meta["level"] and all(t.isdigit() and len(t) == 1 for t in terms)
        assert int(p.gold) == sum(map(int, terms))
        counts[p.meta["level"]] = counts.get(p.meta["level"], 0) + 1
    assert counts == {2: 100, 3: 100, 4: 100, 5: 100}


def test_prompt_text_is_the_question_like_3_plus_5_equals():
    task = get_task("arith")
    p = task.load(limit=1)[0]
    assert task.prompt_text(p) == p.question and p.question.endswith("=")
    assert task.messages(p) == [{"role": "user", "content": p.question}]


@pytest.mark.parametrize(
    "completion, extracted",
    [
        ("10", "10"),
        (" 10\n3+4=7", "10"),
        ("10abc", "10"),
        ("-3", "-3"),
        ("x10", None),
        ("", None),
        ("so \\boxed{12} then 10", "12"),
        ("1 \\boxed{7} and \\boxed{9}", "9"),
    ],
)
def test_extraction_takes_last_box_else_leading_integer(completion, extracted):
    assert get_task("arith").extract(completion) == extracted


def test_grading_is_exact_integer_match_with_math_reasons():
    task = get_task("arith")
    p = task.load(limit=1)[0]
    gold = int(p.gold)
    completions = [str(gold), str(gold + 1), "", "\\boxed{abc}", f"\\boxed{{{gold}}}", f"{gold}\n1+1=3"]
    reasons = [v.reason for v in task.grade([(p, c) for c in completions])]
    assert reasons == ["correct", "wrong", "no_answer", "parse_error", "correct", "correct"]


@pytest.mark.parametrize(
    "options", [{"size": 0}, {"min_terms": 1}, {"min_terms": 4, "max_terms": 3}, {"split": "dev"}, {"bogus": 1}]
)
def test_bad_options_raise_benchctl_error(options):
    with pytest.raises(BenchctlError):
        get_task("arith", **options)
