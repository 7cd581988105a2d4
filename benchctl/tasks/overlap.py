"""Held out means held out: the task a training task is evaluated on, and the questions a pair of tasks shares.

A question's identity is its whitespace-normalised text (`normalise_question`). The training problems of a task
are its `train` split when it has one (`training_task`: arith, arith_steps, mbpp), else the task itself. Its
default evaluation task is the task class's `held_out_task` (arith -> arith's test split, math_train -> math500);
a task without one (gsm8k: only its test split is here) needs an explicit evaluation task.

`check_held_out` refuses, in one line with the count, an evaluation task that shares questions with the training
task, unless `allow_overlap` (`benchctl train --allow-overlap`, matrix `train: {allow_overlap: true}`). The count
is over the evaluation problems actually scored (the first `limit`) against every training problem.
Measured on the complete shared/benchmarks files: math_train and math500 share no question (7,500 and 500);
mbpp's train and test splits share 3 prompts (mbpp therefore has no default held-out task).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from functools import lru_cache

from benchctl.errors import BenchctlError
from benchctl.tasks.base import Problem, Task, get_task, normalise_question

__all__ = ["check_held_out", "default_held_out", "normalise_question", "questions", "shared", "training_task"]


def training_task(name: str) -> Task:
    """The task trained on: a JSON Lines file, or a registered task (its `train` split when it has one)."""
    from benchctl.tasks.jsonl import JsonlMathTask, is_task_file

    if is_task_file(name):
        return JsonlMathTask(name)
    task = get_task(name)
    if "split" in inspect.signature(type(task).__init__).parameters:
        return get_task(name, split="train")
    return task


def default_held_out(train_name: str) -> str:
    """The evaluation task of `train_name` when none is given; BenchctlError when the task has none."""
    from benchctl.tasks.jsonl import is_task_file

    if is_task_file(train_name):
        raise BenchctlError("--eval-every needs --eval-task NAME when --task is a file (no held-out split)")
    held = get_task(train_name).held_out_task
    if held is None:
        raise BenchctlError(
            f"task {train_name!r} has no held-out counterpart here (its evaluation would reuse training questions); "
            "pass --eval-task NAME"
        )
    return held


def questions(problems: Iterable[Problem]) -> frozenset[str]:
    """The distinct normalised questions of `problems`."""
    return frozenset(normalise_question(p.question) for p in problems)


def shared(train: frozenset[str], held_out: frozenset[str]) -> int:
    """How many distinct held-out questions are also training questions."""
    return len(held_out & train)


@lru_cache(maxsize=16)
def _task_questions(name: str, data_dir: str | None, limit: int | None, training: bool) -> frozenset[str]:
    task = training_task(name) if training else get_task(name)
    return questions(task.load(data_dir, limit=limit))


def check_held_out(
    train_name: str,
    eval_name: str,
    *,
    data_dir: str | None,
    limit: int | None,
    allow_overlap: bool,
    train_questions: frozenset[str] | None = None,
) -> int:
    """Shared questions of (training task, evaluation task); BenchctlError when > 0 unless `allow_overlap`.

    `limit`: evaluation problems scored (the first N; None = all). `train_questions`: the training problems'
    questions when already loaded (else the training task is loaded here)."""
    train = train_questions if train_questions is not None else _task_questions(train_name, data_dir, None, True)
    held_out = _task_questions(eval_name, data_dir, limit, False)
    count = shared(train, held_out)
    if count and not allow_overlap:
        raise BenchctlError(
            f"{count} of the {len(held_out)} distinct questions of evaluation task {eval_name!r} are also training "
            f"questions of {train_name!r}: not held out; use another evaluation task, or --allow-overlap "
            "(matrix: train: {allow_overlap: true}) to run anyway"
        )
    return count
