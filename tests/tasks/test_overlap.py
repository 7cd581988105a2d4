"""Held out means held out: every default (training task, evaluation task) pair shares no question, on the test
fixture and on the complete benchmark files; a pair that shares questions is refused with the count unless
`allow_overlap`; a task without a held-out counterpart (gsm8k, a file) has no default evaluation task."""

import json

import pytest

from benchctl.errors import BenchctlError
from benchctl.tasks import get_task, list_tasks
from benchctl.tasks.overlap import check_held_out, default_held_out, questions, training_task

DEFAULT_PAIRS = {
    "arith": "arith",
    "arith_chat": "arith_chat",
    "arith_mix": "arith_mix",
    "arith_steps": "arith_steps",
    "arith_words": "arith_words",
    "math_train": "math500",
}


def test_the_default_held_out_tasks_are_the_documented_ones():
    declared = {task.name: task.held_out_task for task in list_tasks() if task.held_out_task is not None}
    assert declared == DEFAULT_PAIRS


@pytest.mark.parametrize("train", sorted(DEFAULT_PAIRS))
def test_default_pairs_share_no_question(train, real_data_dir):
    eval_name = default_held_out(train)
    train_questions = questions(training_task(train).load(str(real_data_dir)))
    eval_questions = questions(get_task(eval_name).load(str(real_data_dir)))
    assert train_questions and eval_questions and not train_questions & eval_questions
    assert check_held_out(train, eval_name, data_dir=str(real_data_dir), limit=None, allow_overlap=False) == 0


def test_questions_are_compared_whitespace_normalised():
    from benchctl.tasks import Problem

    assert questions([Problem("a", " What is\n 2+2? ", "4")]) == questions([Problem("b", "What is 2+2?", "4")])


def test_a_pair_sharing_questions_is_refused_with_the_count(fixture_data_dir):
    with pytest.raises(BenchctlError) as err:
        check_held_out("gsm8k", "gsm8k", data_dir=str(fixture_data_dir), limit=None, allow_overlap=False)
    message = str(err.value)
    assert "10 of the 10 distinct questions of evaluation task 'gsm8k'" in message and "--allow-overlap" in message
    assert "\n" not in message


def test_the_count_is_over_the_evaluated_problems_only(fixture_data_dir):
    with pytest.raises(BenchctlError, match="4 of the 4 distinct questions"):
        check_held_out("gsm8k", "gsm8k", data_dir=str(fixture_data_dir), limit=4, allow_overlap=False)


def test_allow_overlap_accepts_the_pair_and_returns_the_count(fixture_data_dir):
    count = check_held_out("gsm8k", "gsm8k", data_dir=str(fixture_data_dir), limit=None, allow_overlap=True)
    assert count == 10


def test_a_file_task_sharing_arith_test_questions_is_refused(tmp_path):
    test = get_task("arith").load(limit=200)
    rows = [{"id": p.id, "problem": f"  {p.question}\n", "answer": p.gold} for p in test[:30]]  # spaces differ
    path = tmp_path / "copied.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    copied, evaluated = len({p.question for p in test[:30]}), len({p.question for p in test})
    with pytest.raises(
        BenchctlError, match=f"{copied} of the {evaluated} distinct questions of evaluation task 'arith'"
    ):
        check_held_out(str(path), "arith", data_dir=None, limit=200, allow_overlap=False)


@pytest.mark.parametrize("name", ["gsm8k", "math500", "mbpp"])
def test_a_task_without_held_out_counterpart_needs_an_explicit_eval_task(name):
    with pytest.raises(BenchctlError, match=f"task '{name}' has no held-out counterpart here.*--eval-task"):
        default_held_out(name)


def test_training_task_is_the_train_split_when_there_is_one():
    assert training_task("arith").config.split == "train"
    assert training_task("mbpp").split == "train"
    assert training_task("math_train").name == "math_train"
