"""The synthetic `arith` task: determinism, levels, extraction and exact-integer grading."""

import pytest

from benchctl.errors import BenchctlError
from benchctl.tasks import get_task


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
