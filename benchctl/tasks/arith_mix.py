"""`arith_mix`: sums with the work shown, on a ladder of known difficulty levels for the tiny model's RL testbed.

Prompt "37+5+8:", completion "42,50=50" (the running sums, "=", the answer: `arith_steps`' format), so the running
sums are a reasoning span (`shows_work = True`) for token-level methods (OAR, Dr.GRPO's length normalisation).
Each level is a list of term ranges and a carry condition (`LEVELS`); the levels take turns in a fixed cycle where
each appears as often as its weight (`level_cycle`, interleaved, so any prefix has the levels near proportion).

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
from functools import lru_cache
from itertools import accumulate
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.verdict import Verdict
from benchctl.tasks.arith import SPLITS, ArithStepsTask, grade_integer, split_of
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, register_task


@dataclass(frozen=True)
class Level:
    """One difficulty level: the inclusive range of each term, an optional carry condition, its share of a stream."""

    name: str
    terms: tuple[tuple[int, int], ...]  # (low, high) of each term, in prompt order
    weight: int  # problems of this level in each cycle of `level_of`
    carry: bool | None = None  # units digits summing to >= 10 (True), to <= 9 (False), or either (None)

    @property
    def size(self) -> int:
        """How many term tuples the ranges span (before the carry condition and the split)."""
        return math.prod(high - low + 1 for low, high in self.terms)

    def question(self, number: int) -> tuple[int, ...]:
        """The terms of tuple `number` in [0, size): mixed radix over the term ranges, first term most significant."""
        terms = []
        for low, high in reversed(self.terms):
            number, digit = divmod(number, high - low + 1)
            terms.append(low + digit)
        return tuple(reversed(terms))

    def admits(self, terms: Sequence[int]) -> bool:
        """Whether `terms` meet the level's carry condition."""
        return self.carry is None or (sum(t % 10 for t in terms) >= 10) == self.carry


D = (0, 9)  # a single digit
ABC = (100, 999)  # a three-digit number
# [our choice] Ordered by the warm-started tiny model's pass rate at T=1 (docs/data.md), weights out of 25: level 1
# is what its warm start drills (near-deterministic), 2-4 are arith_steps' sums (partly learnt), 5 is one term
# longer than any sum it was taught and 6 needs a carry it never saw (near 0). Capacities of a 1,000-problem held-out
# stream: level 2 has 115 test and 88 validation questions, so its weight is at most 2 of 25 (80 per 1,000).
LEVELS = (
    Level("carry-free three-digit + digit", (ABC, D), 7, carry=False),
    Level("three single digits", (D, D, D), 2),
    Level("four single digits", (D,) * 4, 4),
    Level("five single digits", (D,) * 5, 4),
    Level("six single digits", (D,) * 6, 5),
    Level("three-digit + digit with a carry", (ABC, D), 3, carry=True),
)


@lru_cache(maxsize=64)
def level_cycle(levels: tuple[int, ...]) -> tuple[int, ...]:
    """One cycle of the levels' turns, each level as often as its weight, interleaved by smooth weighted
    round-robin (each turn to the level furthest behind its share), so short prefixes are near-proportional too."""
    weights = {k: LEVELS[k - 1].weight for k in levels}
    total, credit, cycle = sum(weights.values()), dict.fromkeys(levels, 0), []
    for _ in range(total):
        for k in levels:
            credit[k] += weights[k]
        pick = max(levels, key=lambda k: credit[k])  # ties: the first (easier) level
        credit[pick] -= total
        cycle.append(pick)
    return tuple(cycle)


def level_of(index: int, levels: tuple[int, ...]) -> tuple[int, int]:
    """(level, rank): problem `index` of a stream over `levels` (1-based numbers into LEVELS) is question number
    `rank` of that level's stream."""
    cycle = level_cycle(levels)
    turn, pos = divmod(index, len(cycle))
    level = cycle[pos]
    return level, turn * LEVELS[level - 1].weight + cycle[:pos].count(level)


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
            if level.admits(terms) and split_of(_question(terms)) == split:
                yield terms


def _question(terms: Sequence[int]) -> str:
    return "+".join(map(str, terms)) + "="


def completion_bound(level: Level) -> int:
    """Tokens of the longest reference completion of `level`, EOS included (one token per character)."""
    highs = list(accumulate(high for _low, high in level.terms))[1:]  # the largest running sums
    return sum(len(str(h)) for h in highs) + (len(highs) - 1) + 1 + len(str(highs[-1])) + 1  # sums, ",", "=", EOS


HELD_OUT_SIZE = 1000  # problems of a test or validation stream by default: no repeated question (test_arith_mix)
# [our choice] problems of the train split by default (what `benchctl train` draws from): about every train
# question of levels 2 (797) and 1-6 otherwise once, so RL sees new questions rather than 80 it memorises (a
# 1,000-problem train set has 80 three-digit sums, each drawn ~6 times in 200 steps of 32).
TRAIN_SIZE = 10000
SLACK_TOKENS = 2  # [our choice] room past the longest right answer, so a slightly longer wrong one is not cut


@dataclass(frozen=True)
class ArithMixConfig:
    """Options of the `arith_mix` task."""

    size: int = field(default=1000, metadata={"help": "problems load() returns (task default: 10,000 for train)"})
    seed: int = field(default=0, metadata={"help": "generator seed; problem i depends only on (seed, split, i)"})
    split: str = field(default="test", metadata={"help": "'train', 'test' or 'validation': disjoint (split_of)"})
    levels: tuple[int, ...] = field(
        default=tuple(range(1, len(LEVELS) + 1)), metadata={"help": "levels drawn (1-based into LEVELS), e.g. (1,)"}
    )

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith_mix split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")
        if (
            not self.levels
            or any(not 1 <= k <= len(LEVELS) for k in self.levels)
            or len(set(self.levels)) < len(self.levels)
        ):
            raise BenchctlError(f"arith_mix levels {self.levels!r} must be distinct numbers in 1..{len(LEVELS)}")


def parse_levels(levels: str | Sequence[int] | None) -> tuple[int, ...]:
    """`None` -> every level; "1,3" or (1, 3) -> (1, 3)."""
    if levels is None:
        return tuple(range(1, len(LEVELS) + 1))
    if isinstance(levels, str):
        try:
            return tuple(int(part) for part in levels.split(",") if part.strip())
        except ValueError:
            raise BenchctlError(f"arith_mix levels {levels!r} must be a comma list of level numbers") from None
    return tuple(int(k) for k in levels)


def make_problems(config: ArithMixConfig, count: int) -> list[Problem]:
    """The first `count` problems of the stream (seed, split, levels)."""
    streams = {k: level_stream(LEVELS[k - 1], config.seed, config.split) for k in config.levels}
    every = config.levels == tuple(range(1, len(LEVELS) + 1))
    stem = "arith_mix" if every else "arith_mix_L" + "+".join(map(str, config.levels))
    problems = []
    for index in range(count):
        level, _rank = level_of(index, config.levels)  # ranks are consumed in order, so next() is question _rank
        terms = next(streams[level])
        problem_id = f"{stem}-{config.split}-{config.seed}-{index}"
        problems.append(Problem(problem_id, _question(terms), str(sum(terms)), {"level": level}))
    return problems


def capacity(level: Level, split: str, limit: int | None = None) -> int:
    """Distinct questions of `split` in `level` (counting stops at `limit`): a stream repeats none of the level's
    questions while it asks at most this many of them."""
    count = 0
    for number in range(level.size):
        terms = level.question(number)
        count += level.admits(terms) and split_of(_question(terms)) == split
        if limit is not None and count >= limit:
            break
    return count


@register_task("arith_mix")
class ArithMixTask(ArithStepsTask):
    """Sums with the running sums shown, on levels of known difficulty (`LEVELS`); no question repeats."""

    description = "synthetic sums with the work shown, easy/medium/hard levels for the tiny model (RL testbed)"
    known_size = 1000
    held_out_task = "arith_mix"
    default_split = "test"
    shows_work = True
    max_new_tokens = max(completion_bound(level) for level in LEVELS) + SLACK_TOKENS  # 18 + 2

    def __init__(
        self,
        size: int | None = None,
        seed: int = 0,
        split: str | None = None,
        levels: str | Sequence[int] | None = None,
    ):
        split = split or self.default_split
        size = size if size is not None else (TRAIN_SIZE if split == "train" else HELD_OUT_SIZE)
        self.config = ArithMixConfig(size, seed, split, parse_levels(levels))

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return make_problems(self.config, count)

    def reference_completion(self, problem: Problem) -> str:
        """The running sums after each addition, "=", the answer ("37+5+8=" -> "42,50=50")."""
        terms = [int(t) for t in problem.question.removesuffix("=").split("+")]
        partial = list(accumulate(terms))[1:]  # (n_terms - 1,) running sums
        return ",".join(map(str, partial)) + "=" + problem.gold

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """The answer and the work: correct when the integer after the last "=" is the sum and the text before
        that "=" is the problem's running sums ("8,10=10"; spaces ignored); a right answer after wrong work is
        "wrong" (in-process; `workers` and `timeout` are accepted for API symmetry)."""
        return [self._grade_one(problem, completion) for problem, completion in items]

    def _grade_one(self, problem: Problem, completion: str) -> Verdict:
        verdict = grade_integer(problem.gold, self.extract(completion))
        if not verdict.correct:
            return verdict
        start, _end = self.answer_span(completion)
        reference = self.reference_completion(problem)
        work = completion[:start].replace(" ", "")
        if work != reference[: reference.rindex("=") + 1]:
            return Verdict.of("wrong", verdict.extracted, "right answer after wrong running sums")
        return verdict


@register_task("arith_mix_val")
class ArithMixValidationTask(ArithMixTask):
    """`arith_mix`'s validation split: for choosing settings, never for the verdict."""

    description = "arith_mix's validation split (disjoint from train and test): pick settings here"
    held_out_task = None
    default_split = "validation"
