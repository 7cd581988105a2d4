"""`arith`: a deterministic synthetic addition task a tiny char-level model can partly learn.

Problem `i` of (seed, split) is drawn from its own `random.Random(f"arith/{split}/{seed}/{i}")`, so problems do not
depend on `size` or `limit` (a longer list extends a shorter one) and are identical across runs and platforms.
Level = number of single-digit terms, cycled over [min_terms, max_terms] so levels are balanced [our choice].
Prompt "3+5+2=", gold "10". Extraction: the last `\\boxed{}` if any, else the leading integer. Grading: exact
integer match, in-process (no math-verify needed), with the same `Verdict` reasons as the math grader.
Note: with 2 terms there are only 100 distinct problems, so train and test overlap at level 2 by construction.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.math_extract import last_boxed, leading_integer
from benchctl.grading.verdict import Verdict
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, Task, register_task

_INT = re.compile(r"[-+]?\d+")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class ArithConfig:
    """Options of the `arith` task."""

    size: int = field(default=1000, metadata={"help": "number of problems load() returns (before limit)"})
    seed: int = field(default=0, metadata={"help": "generator seed; problem i depends only on (seed, split, i)"})
    min_terms: int = field(default=2, metadata={"help": "fewest single-digit terms (lowest level), >= 2"})
    max_terms: int = field(default=5, metadata={"help": "most single-digit terms (highest level), >= min_terms"})
    split: str = field(default="test", metadata={"help": "'train' or 'test': independent problem streams"})

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        check_range("min_terms", self.min_terms, 2)
        check_range("max_terms", self.max_terms, self.min_terms)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")


def make_problem(config: ArithConfig, index: int) -> Problem:
    """Problem number `index` of the stream defined by (config.seed, config.split)."""
    rng = random.Random(f"arith/{config.split}/{config.seed}/{index}")
    n_terms = config.min_terms + index % (config.max_terms - config.min_terms + 1)
    terms = [rng.randint(0, 9) for _ in range(n_terms)]
    question = "+".join(map(str, terms)) + "="
    return Problem(f"arith-{config.split}-{config.seed}-{index}", question, str(sum(terms)), {"level": n_terms})


@register_task("arith")
class ArithTask(Task):
    """Synthetic sums of 2-5 single digits ("3+5+2=" -> "10"); levels = number of terms."""

    kind = "math"
    known_size = 1000
    description = "synthetic single-digit addition, levels = number of terms (seeded, for tiny models)"

    def __init__(self, size: int = 1000, seed: int = 0, min_terms: int = 2, max_terms: int = 5, split: str = "test"):
        self.config = ArithConfig(size, seed, min_terms, max_terms, split)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return [make_problem(self.config, i) for i in range(count)]

    def size(self, data_dir: Path | str | None = None) -> int:
        return self.config.size

    def prompt_text(self, problem: Problem) -> str:
        return problem.question

    def extract(self, completion: str) -> str | None:
        return last_boxed(completion) if "\\boxed" in completion else leading_integer(completion)

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """Exact integer match, in-process (`workers` and `timeout` are accepted for API symmetry)."""
        return [grade_integer(problem.gold, self.extract(completion)) for problem, completion in items]


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
