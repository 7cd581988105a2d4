"""The `arith_mix` testbed task: disjoint splits, held-out streams without repeats, determinism per (seed, split, i),
levels as defined and weighted, running-sum references, extraction and grading; the difficulty spread of the
warm-started tiny model (slow)."""

from collections import Counter

import pytest

from benchctl.errors import BenchctlError
from benchctl.tasks import Problem, get_task
from benchctl.tasks.arith import split_of
from benchctl.tasks.arith_mix import LEVELS, capacity, completion_bound, level_cycle, permuted

HELD_OUT_STREAM = 1000  # longer than any held-out stream the claims evaluate (200-500)


def _questions(name="arith_mix", **options):
    return [p.question for p in get_task(name, **options).load()]


@pytest.mark.parametrize("seed", [0, 3])
def test_train_test_and_validation_share_no_question(seed):
    train = set(_questions(split="train", seed=seed, size=5000))
    test = set(_questions(split="test", seed=seed, size=HELD_OUT_STREAM))
    val = set(_questions(split="validation", seed=seed, size=HELD_OUT_STREAM))
    assert train and test and val and not train & test and not train & val and not test & val


def test_every_question_lies_in_the_split_arith_assigns_it():
    for split in ("train", "test", "validation"):
        assert {split_of(q) for q in _questions(split=split, size=2000)} == {split}


def test_the_warm_starts_other_sft_tasks_never_see_a_held_out_question():
    held_out = set(_questions(size=HELD_OUT_STREAM)) | set(_questions(split="validation", size=HELD_OUT_STREAM))
    for name in ("arith", "arith_steps"):
        assert not held_out & {p.question for p in get_task(name, split="train", size=20000).load()}


@pytest.mark.parametrize("split", ["test", "validation"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_held_out_stream_of_1000_repeats_no_question(split, seed):
    questions = _questions(split=split, seed=seed, size=HELD_OUT_STREAM)
    assert len(set(questions)) == len(questions) == HELD_OUT_STREAM


@pytest.mark.parametrize("split", ["test", "validation"])
def test_every_level_has_the_questions_a_1000_stream_asks_of_it(split):
    asked = Counter(level_cycle(tuple(range(1, len(LEVELS) + 1))))
    cycles = HELD_OUT_STREAM / sum(asked.values())
    for number, level in enumerate(LEVELS, start=1):
        needed = int(asked[number] * cycles)
        assert capacity(level, split, limit=needed) == needed, level.name


def test_problem_i_depends_only_on_seed_split_and_index():
    long = get_task("arith_mix", size=300).load()
    assert get_task("arith_mix", size=300).load() == long
    assert get_task("arith_mix", size=40).load() == long[:40] == get_task("arith_mix").load(limit=40)
    assert _questions(seed=1, size=40) != [p.question for p in long[:40]]
    assert _questions(split="validation", size=40) != [p.question for p in long[:40]]


def test_the_validation_task_is_the_validation_split():
    assert get_task("arith_mix_val").load(limit=30) == get_task("arith_mix", split="validation").load(limit=30)


def test_levels_take_turns_by_weight_and_short_prefixes_stay_mixed():
    problems = get_task("arith_mix", size=250).load()
    counts = Counter(p.meta["level"] for p in problems)
    assert counts == {number: 10 * level.weight for number, level in enumerate(LEVELS, start=1)}
    assert len({p.meta["level"] for p in problems[:8]}) >= 5  # interleaved, not level-major


def test_a_level_subset_draws_the_same_questions_as_the_full_mix():
    easy = get_task("arith_mix", split="train", levels="1", size=50).load()
    full = [p for p in get_task("arith_mix", split="train", size=400).load() if p.meta["level"] == 1]
    assert {p.meta["level"] for p in easy} == {1}
    assert [p.question for p in easy] == [p.question for p in full[:50]]
    assert easy[0].id.startswith("arith_mix_L1-train-0-")


def test_questions_meet_their_levels_definition():
    for p in get_task("arith_mix", split="train", size=1000).load():
        level = LEVELS[p.meta["level"] - 1]
        terms = [int(t) for t in p.question.removesuffix("=").split("+")]
        assert len(terms) == len(level.terms) and int(p.gold) == sum(terms)
        assert all(low <= t <= high for t, (low, high) in zip(terms, level.terms))
        assert level.admits(terms)
    assert LEVELS[0].admits([123, 6]) and not LEVELS[0].admits([123, 7]) and LEVELS[5].admits([129, 1])


@pytest.mark.parametrize("size", [1, 2, 7, 100, 1000, 9000])
def test_permuted_is_a_bijection_of_the_range(size):
    values = [permuted(n, size, "k") for n in range(size)]
    assert sorted(values) == list(range(size))
    assert size < 100 or values != sorted(values) != [permuted(n, size, "other") for n in range(size)]


@pytest.mark.parametrize(
    "question, completion",
    [("347+2=", "349=349"), ("3+5+2=", "8,10=10"), ("9+9+9+9+9+9=", "18,27,36,45,54=54"), ("999+9=", "1008=1008")],
)
def test_reference_is_the_running_sums_then_the_answer_and_grades_correct(question, completion):
    task = get_task("arith_mix")
    problem = Problem("x", question, completion.split("=")[-1])
    assert task.prompt_text(problem) == question[:-1] + ":"
    assert task.reference_completion(problem) == completion
    assert task.grade([(problem, completion)])[0].correct


def test_max_new_tokens_covers_the_longest_reference_completion():
    task = get_task("arith_mix")
    longest = max(len(task.reference_completion(p)) + 1 for p in task.load())  # + EOS
    assert longest <= max(completion_bound(level) for level in LEVELS) < task.max_new_tokens


@pytest.mark.parametrize(
    "completion, reason, detail",
    [
        ("8,10=10", "correct", ""),
        ("8, 10 = 10", "correct", ""),  # spaces are ignored
        ("8,10=10,3", "correct", ""),  # text after the answer is not graded (as in arith_steps)
        ("8,11=10", "wrong", "right answer after wrong running sums"),  # the work is graded too
        ("18,10=10", "wrong", "right answer after wrong running sums"),
        ("10=10", "wrong", "right answer after wrong running sums"),  # a skipped step
        ("\\boxed{10}", "wrong", "right answer after wrong running sums"),  # no work shown
        ("8,10=11", "wrong", ""),
        ("8,10=10=9", "wrong", ""),  # the last "=" counts
        ("8,10", "no_answer", ""),
        ("", "no_answer", ""),
    ],
)
def test_grading_needs_the_right_answer_after_the_right_running_sums(completion, reason, detail):
    verdict = get_task("arith_mix").grade([(Problem("x", "3+5+2=", "10"), completion)])[0]
    assert (verdict.reason, verdict.detail) == (reason, detail)


@pytest.mark.parametrize(
    "options", [{"size": 0}, {"split": "dev"}, {"levels": "0"}, {"levels": "7"}, {"levels": "1,1"}, {"levels": "a"}]
)
def test_bad_options_raise_benchctl_error(options):
    with pytest.raises(BenchctlError):
        get_task("arith_mix", **options)


@pytest.mark.slow
def test_warm_started_tiny_model_has_easy_and_hard_train_prompts():
    """Issue 23: at step 0, >= 20% of train prompts under 0.1 and >= 20% over 0.9 at T=1 (builds the model)."""
    from benchctl.lab.difficulty import DifficultyConfig, run_difficulty

    result = run_difficulty(DifficultyConfig(task="arith_mix", model="tiny-warm", prompts=250, n=32))
    overall = result.rows[-1]
    assert overall["level"] == "all" and overall["prompts"] == 250
    assert overall["under_low"] >= 0.2 and overall["over_high"] >= 0.2, result.rows
    by_level = {row["level"]: row["mean_pass"] for row in result.rows}
    assert by_level["1"] > 0.85 and by_level["6"] < 0.05  # the easiest and the hardest level
