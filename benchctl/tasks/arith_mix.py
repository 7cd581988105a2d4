"""`arith_mix`: sums with the work shown, on a ladder of known difficulty levels for the tiny model's RL testbed.

Prompt "37+5+8:", completion "42,50=50" (the running sums, "=", the answer: `arith_steps`' format), so the running
sums are a reasoning span (`shows_work = True`) for token-level methods (OAR, Dr.GRPO's length normalisation).
Each level is a list of term ranges (`LEVELS`); level i of a stream is drawn with weight `LEVELS[i].weight`
(`level_of`: a fixed cycle of the weights, so a prefix of any length has the levels in proportion).

No repeated question within a stream [our choice]: the questions of a level are numbered 0..N-1 (mixed radix
over its term ranges), and the stream of (seed, level) walks a keyed permutation of that range (`permuted`: a
four-round Feistel network over blake2b, cycle-walking into [0, N)), keeping the questions of its split. So a
stream repeats a question only once the level's questions of its split are used up (then a new permutation
starts: `capacity` says when), and problem i still depends only on (seed, split, i).

Splits: `benchctl.tasks.arith.split_of` of the question text ("37+5+8="), the rule of `arith` and `arith_steps`,
so a question held out here is held out there too, and the tiny model's warm start (which trains on the train
splits of all three) never sees a test or validation question of any of them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.tasks.arith import SPLITS, ArithStepsTask, split_of
from benchctl.tasks.base import Problem, register_task


@dataclass(frozen=True)
class Level:
    """One difficulty level: the inclusive range of each term, and its share of a stream."""

    name: str
    terms: tuple[tuple[int, int], ...]  # (low, high) of each term, in prompt order
    weight: int  # problems of this level in each cycle of `level_of`

    @property
    def size(self) -> int:
        """How many distinct questions the level has (over all splits)."""
        return math.prod(high - low + 1 for low, high in self.terms)

    def question(self, number: int) -> tuple[int, ...]:
        """The terms of question `number` in [0, size): mixed radix over the term ranges, first term most
        significant."""
        terms = []
        for low, high in reversed(self.terms):
            number, digit = divmod(number, high - low + 1)
            terms.append(low + digit)
        return tuple(reversed(terms))


D = (0, 9)  # a single digit
LEVELS = (
    Level("1: two single digits", (D, D), 1),
    Level("2: three single digits", (D, D, D), 1),
    Level("3: four single digits", (D, D, D, D), 1),
    Level("4: five single digits", (D, D, D, D, D), 1),
    Level("5: six single digits", (D,) * 6, 1),
    Level("6: seven single digits", (D,) * 7, 1),
)


def level_of(index: int, levels: Sequence[Level] = LEVELS) -> tuple[int, int]:
    """(level, rank): problem `index` of a stream is question number `rank` of its level's stream."""
    cycle = [k for k, level in enumerate(levels) for _ in range(level.weight)]  # one cycle of the weights
    turn, pos = divmod(index, len(cycle))
    level = cycle[pos]
    return level, turn * levels[level].weight + cycle[:pos].count(level)


def permuted(number: int, size: int, key: str) -> int:
    """A keyed bijection of [0, size): four Feistel rounds (blake2b) on the smallest even-bit square domain,
    cycle-walking until the value falls in [0, size)."""
    half = ((size - 1).bit_length() + 1) // 2
    mask = (1 << half) - 1
    value = number
    while True:
        left, right = value >> half, value & mask
        for round_ in range(4):
            digest = hashlib.blake2b(f"{key}/{round_}/{right}".encode(), digest_size=8).digest()
            left, right = right, left ^ (int.from_bytes(digest, "big") & mask)
        value = (left << half) | right
        if value < size:
            return value


def level_stream(level: Level, seed: int, split: str) -> Iterator[tuple[int, ...]]:
    """The terms of the level's questions of `split`, in the stream's order (endless: a new permutation per pass)."""
    for sweep in range(10**9):
        key = f"arith_mix/{seed}/{level.name}/{sweep}"
        for number in range(level.size):
            terms = level.question(permuted(number, level.size, key))
            if split_of(_question(terms)) == split:
                yield terms


def _question(terms: Sequence[int]) -> str:
    return "+".join(map(str, terms)) + "="


@dataclass(frozen=True)
class ArithMixConfig:
    """Options of the `arith_mix` task."""

    size: int = field(default=1000, metadata={"help": "number of problems load() returns (before limit)"})
    seed: int = field(default=0, metadata={"help": "generator seed; problem i depends only on (seed, split, i)"})
    split: str = field(default="test", metadata={"help": "'train', 'test' or 'validation': disjoint (split_of)"})

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith_mix split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")


def make_problems(config: ArithMixConfig, count: int) -> list[Problem]:
    """The first `count` problems of the stream (seed, split)."""
    streams = [level_stream(level, config.seed, config.split) for level in LEVELS]
    problems = []
    for index in range(count):
        k, _rank = level_of(index)
        terms = next(streams[k])
        problem_id = f"arith_mix-{config.split}-{config.seed}-{index}"
        problems.append(Problem(problem_id, _question(terms), str(sum(terms)), {"level": k + 1}))
    return problems


def capacity(level: Level, split: str) -> int:
    """Distinct questions of `split` in `level`: a stream has no repeat while it asks at most this many of it."""
    return sum(split_of(_question(level.question(n))) == split for n in range(level.size))


@register_task("arith_mix")
class ArithMixTask(ArithStepsTask):
    """Sums with the running sums shown, on levels of known difficulty (`LEVELS`); no question repeats."""

    description = "synthetic sums with the work shown, easy/medium/hard levels for the tiny model (RL testbed)"
    known_size = 1000
    held_out_task = "arith_mix"
    default_split = "test"
    shows_work = True

    def __init__(self, size: int = 1000, seed: int = 0, split: str | None = None):
        self.config = ArithMixConfig(size, seed, split or self.default_split)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return make_problems(self.config, count)

    def reference_completion(self, problem: Problem) -> str:
        """The running sums after each addition, "=", the answer ("37+5+8=" -> "42,50=50")."""
        terms = [int(t) for t in problem.question.removesuffix("=").split("+")]
        partial = list(accumulate(terms))[1:]  # (n_terms - 1,) running sums
        return ",".join(map(str, partial)) + "=" + problem.gold


@register_task("arith_mix_val")
class ArithMixValidationTask(ArithMixTask):
    """`arith_mix`'s validation split: for choosing settings, never for the verdict."""

    description = "arith_mix's validation split (disjoint from train and test): pick settings here"
    held_out_task = None
    default_split = "validation"
