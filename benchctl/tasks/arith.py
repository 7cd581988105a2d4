"""`arith` and `arith_steps`: deterministic synthetic addition tasks a tiny char-level model can partly learn.

Problem `i` of (seed, split) is drawn from its own `random.Random(f"arith/{split}/{seed}/{i}")`, so problems do not
depend on `size` or `limit` (a longer list extends a shorter one) and are identical across runs and platforms.
Level = number of single-digit terms, cycled over [min_terms, max_terms] so levels are balanced [our choice].
Question "3+5+2=", gold "10". Grading: exact integer match, in-process (no math-verify needed), with the same
`Verdict` reasons as the math grader.

Splits [our choice]: every question belongs to exactly one split, by a stable hash of its text
(`split_of`: h = blake2b-64 of the whitespace-normalised question; h % 10 == 0 -> test, h % 10 == 5 -> validation,
else train), and each stream redraws (from its own generator) until the question is of its split. So train, test
and validation never share a question, at any size, seed or term range, and problem i still depends only on (seed,
split, i). The validation split (tasks `arith_val`, `arith_steps_val`) is where a sweep picks each arm's setting,
so that the test split stays untouched by the choice. Consequence: level 2 has only 100 distinct questions
("a+b="), 10 of them test, 8 validation and 82 train, so the level-2 quarter of a test stream repeats those 10
sums (250 of the 1,000 default test problems); levels 3, 4, 5 draw from 1,000 / 10,000 / 100,000.

`arith` prompts with the question and reads the answer at the start of the completion (the completion *is* the
answer: no reasoning span, `shows_work = False`). `arith_steps` asks for the work on the same questions (one
split assignment for both tasks): prompt "3+5+2:", reference completion "8,10=10" (the partial sums, then "=" and
the final answer), so OAR has a reasoning span (the partial sums) to reshape on the tiny model.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.math_extract import last_boxed, leading_integer
from benchctl.grading.verdict import Verdict
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, Task, last_box_span, normalise_question, register_task

_INT = re.compile(r"[-+]?\d+")
_LEADING_INT = re.compile(r"\s*([-+]?\d+)")
_AFTER_EQUALS = re.compile(r"=\s*([-+]?\d+)")
SPLITS = ("train", "test", "validation")
HELD_OUT_SHARE = 5  # one question in HELD_OUT_SHARE (by hash) is held out: half test, half validation


def split_of(question: str) -> str:
    """'train', 'test' or 'validation': the split of a question, from a stable hash of its normalised text."""
    digest = hashlib.blake2b(normalise_question(question).encode("utf-8"), digest_size=8).digest()
    h = int.from_bytes(digest, "big")
    if h % HELD_OUT_SHARE:
        return "train"
    return "test" if h % (2 * HELD_OUT_SHARE) == 0 else "validation"


@dataclass(frozen=True)
class ArithConfig:
    """Options of the `arith` task."""

    size: int = field(default=1000, metadata={"help": "number of problems load() returns (before limit)"})
    seed: int = field(default=0, metadata={"help": "generator seed; problem i depends only on (seed, split, i)"})
    min_terms: int = field(default=2, metadata={"help": "fewest single-digit terms (lowest level), >= 2"})
    max_terms: int = field(default=5, metadata={"help": "most single-digit terms (highest level), >= min_terms"})
    split: str = field(default="test", metadata={"help": "'train', 'test' or 'validation': disjoint (split_of)"})

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        check_range("min_terms", self.min_terms, 2)
        check_range("max_terms", self.max_terms, self.min_terms)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")


def make_problem(config: ArithConfig, index: int) -> Problem:
    """Problem number `index` of the stream defined by (config.seed, config.split): redrawn until of that split."""
    rng = random.Random(f"arith/{config.split}/{config.seed}/{index}")
    n_terms = config.min_terms + index % (config.max_terms - config.min_terms + 1)
    while True:  # ends: every level >= 2 has questions of every split (level 2: 82 train, 10 test, 8 validation)
        terms = [rng.randint(0, 9) for _ in range(n_terms)]
        question = "+".join(map(str, terms)) + "="
        if split_of(question) == config.split:
            break
    return Problem(f"arith-{config.split}-{config.seed}-{index}", question, str(sum(terms)), {"level": n_terms})


@register_task("arith")
class ArithTask(Task):
    """Synthetic sums of 2-5 single digits ("3+5+2=" -> "10"); levels = number of terms."""

    kind = "math"
    known_size = 1000
    description = "synthetic single-digit addition, levels = number of terms (seeded, for tiny models)"
    held_out_task = "arith"  # trained on its train split, evaluated on its test split (disjoint by split_of)
    default_split = "test"  # the split `get_task(name)` loads; `split=` chooses another
    shows_work = False  # the completion is the answer

    def __init__(
        self, size: int = 1000, seed: int = 0, min_terms: int = 2, max_terms: int = 5, split: str | None = None
    ):
        self.config = ArithConfig(size, seed, min_terms, max_terms, split or self.default_split)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return [make_problem(self.config, i) for i in range(count)]

    def size(self, data_dir: Path | str | None = None) -> int:
        return self.config.size

    def prompt_text(self, problem: Problem) -> str:
        return problem.question

    def reference_completion(self, problem: Problem) -> str:
        """The completion the tiny model's warm start is taught (benchctl.models.tiny): the answer alone."""
        return problem.gold

    def extract(self, completion: str) -> str | None:
        return last_boxed(completion) if "\\boxed" in completion else leading_integer(completion)

    def answer_span(self, completion: str) -> tuple[int, int] | None:
        """The last box's contents when there is a box, else the leading integer (what `extract` reads)."""
        box = last_box_span(completion)
        if box is not None or "\\boxed" in completion:
            return box
        match = _LEADING_INT.match(completion)
        return match.span(1) if match else None

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """Exact integer match, in-process (`workers` and `timeout` are accepted for API symmetry)."""
        return [grade_integer(problem.gold, self.extract(completion)) for problem, completion in items]


@register_task("arith_steps")
class ArithStepsTask(ArithTask):
    """`arith` with the work shown: "3+5+2:" -> "8,10=10" (partial sums, "=", answer); same questions and splits."""

    description = "synthetic addition with the partial sums written before the answer (OAR testbed for tiny models)"
    held_out_task = "arith_steps"
    shows_work = True  # the partial sums are the reasoning span

    def prompt_text(self, problem: Problem) -> str:
        return problem.question.removesuffix("=") + ":"

    def reference_completion(self, problem: Problem) -> str:
        terms = [int(t) for t in problem.question.removesuffix("=").split("+")]
        partial = list(accumulate(terms))[1:]  # (n_terms - 1,) running sums after each addition
        return ",".join(map(str, partial)) + "=" + problem.gold

    def extract(self, completion: str) -> str | None:
        """The last box's contents if any, else the integer after the last "=" (None without one)."""
        span = self.answer_span(completion)
        return None if span is None else completion[span[0] : span[1]]

    def answer_span(self, completion: str) -> tuple[int, int] | None:
        return box_or_last_span(completion, _AFTER_EQUALS)


@register_task("arith_val")
class ArithValidationTask(ArithTask):
    """`arith`'s validation split: for choosing settings (e.g. each arm's learning rate), never for the verdict."""

    description = "arith's validation split (disjoint from train and test): pick settings here, report on arith"
    held_out_task = None
    default_split = "validation"


@register_task("arith_steps_val")
class ArithStepsValidationTask(ArithStepsTask):
    """`arith_steps`'s validation split (see `arith_val`)."""

    description = "arith_steps' validation split (disjoint from train and test): pick settings here"
    held_out_task = None
    default_split = "validation"


def box_or_last_span(completion: str, pattern: re.Pattern) -> tuple[int, int] | None:
    """The last box's contents when the completion has a `\\boxed` (None when that box is empty or unbalanced), else
    group 1 of `pattern`'s last match (None without one)."""
    box = last_box_span(completion)
    if box is not None or "\\boxed" in completion:
        return box
    last = None
    for last in pattern.finditer(completion):  # noqa: B007 - the last match is wanted
        pass
    return last.span(1) if last else None


def grade_integer(gold: str, extracted: str | None) -> Verdict:
    """Exact integer comparison with the math grader's reasons."""
    if extracted is None:
        return Verdict.of("no_answer", None)
    text = extracted.strip().replace(",", "")
    if not _INT.fullmatch(text):
        return Verdict.of("parse_error", extracted, "not an integer")
    if not _INT.fullmatch(gold.strip()):
        return Verdict.of("parse_error", extracted, f"gold {gold!r} is not an integer")
    return Verdict.of("correct" if int(text) == int(gold) else "wrong", extracted)
