"""`arith_chat`: one-step sums and products of single digits, asked in words, for a real chat model's RL testbed.

"What is 3 + 5? Put your final answer within \\boxed{}." and "What is 6 times 7? ..." (one user turn; the model's chat
template wraps it). The answer is free-form text; `extract` reads the last `\\boxed{}` when there is one, else the
last integer in the completion [our choice: a 135M instruct model boxes 12-15% of its answers at T=1 and states the
rest in words, "6 + 6 equals 12."; the last integer is what such a sentence ends on], and the grade is an exact
integer match. The reasoning text before the answer is a span token-level methods can reshape (`shows_work`).

Why these questions: SmolLM2-135M-Instruct at T=1 (top-p 1, 64 new tokens) answers 21% of single-digit sums and 26%
of single-digit products right (48 prompts x 8 samples each, vLLM on 2 cores), and 1-12% of anything longer (three
digits, a two-digit term, a word problem): docs/data.md. So the task starts inside the 15-60% band where group
advantages are informative, with room to learn the format and the facts.

Questions: the 200 pairs (operation, a, b), a and b in 0..9. Splits: `benchctl.tasks.arith.split_of` of the
canonical text ("3+5=", "6*7="), so about 1 in 10 questions is test and 1 in 10 validation, disjoint from train. A
split's problems cycle through a seeded permutation of its questions (problem i depends only on seed, split and i).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.verdict import Verdict
from benchctl.tasks.arith import SPLITS, ArithStepsTask, box_or_last_span, grade_integer, split_of
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, Task, register_task

OPERATIONS = {"+": ("sum", "+", lambda a, b: a + b), "*": ("product", "times", lambda a, b: a * b)}
INSTRUCTION = "Put your final answer within \\boxed{}."
_INT = re.compile(r"([-+]?\d+)")


@dataclass(frozen=True)
class ArithChatConfig:
    """Options of the `arith_chat` task."""

    size: int = field(default=1000, metadata={"help": "problems load() returns (the split's questions, cycled)"})
    seed: int = field(default=0, metadata={"help": "seed of the order the split's questions are cycled in"})
    split: str = field(default="test", metadata={"help": "'train', 'test' or 'validation': disjoint (split_of)"})

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith_chat split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")


@lru_cache(maxsize=8)
def split_questions(split: str) -> tuple[tuple[str, int, int], ...]:
    """(operation, a, b) of every question in `split`, in a fixed order."""
    return tuple(
        (op, a, b) for op in OPERATIONS for a in range(10) for b in range(10) if split_of(f"{a}{op}{b}=") == split
    )


def make_problems(config: ArithChatConfig, count: int) -> list[Problem]:
    """The first `count` problems: the split's questions in a seeded order, repeated as often as needed."""
    questions = list(split_questions(config.split))
    random.Random(f"arith_chat/{config.split}/{config.seed}").shuffle(questions)
    problems = []
    for index in range(count):
        op, a, b = questions[index % len(questions)]
        level, _word, apply = OPERATIONS[op]
        problem_id = f"arith_chat-{config.split}-{config.seed}-{index}"
        problems.append(Problem(problem_id, f"{a}{op}{b}=", str(apply(a, b)), {"level": level}))
    return problems


@register_task("arith_chat")
class ArithChatTask(Task):
    """Single-digit sums and products asked in words; free-form answers, graded on the last box or integer."""

    kind = "math"
    known_size = 1000
    description = "single-digit sums and products asked in words, free-form answers (RL testbed for chat models)"
    held_out_task = "arith_chat"
    default_split = "test"
    shows_work = True
    max_new_tokens = 64  # [our choice] SmolLM2-135M-Instruct's answers average 39 tokens at T=1 under this cap

    def __init__(self, size: int = 1000, seed: int = 0, split: str | None = None):
        self.config = ArithChatConfig(size, seed, split or self.default_split)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return make_problems(self.config, count)

    def size(self, data_dir: Path | str | None = None) -> int:
        return self.config.size

    def prompt_text(self, problem: Problem) -> str:
        """ "3+5=" -> "What is 3 + 5? Put your final answer within \\boxed{}."; "6*7=" -> "What is 6 times 7? ..."."""
        for op, (_level, word, _apply) in OPERATIONS.items():
            if op in problem.question:
                a, b = problem.question.removesuffix("=").split(op)
                return f"What is {a} {word} {b}? {INSTRUCTION}"
        raise BenchctlError(f"arith_chat question {problem.question!r} has no operation")

    extract = ArithStepsTask.extract  # the text at answer_span

    def answer_span(self, completion: str) -> tuple[int, int] | None:
        """The last box's contents when there is a box, else the last integer in the completion."""
        return box_or_last_span(completion, _INT)

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """Exact integer match of `extract`, in-process (`workers` and `timeout` are accepted for API symmetry)."""
        return [grade_integer(problem.gold, self.extract(completion)) for problem, completion in items]


@register_task("arith_chat_val")
class ArithChatValidationTask(ArithChatTask):
    """`arith_chat`'s validation split: for choosing settings, never for the verdict."""

    description = "arith_chat's validation split (disjoint from train and test): pick settings here"
    held_out_task = None
    default_split = "validation"
