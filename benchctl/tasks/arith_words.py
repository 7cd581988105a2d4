"""`arith_words`: arithmetic facts and one- or two-step word problems in several phrasings, a real chat model's
RL testbed with a spread of difficulty (issue 42 item 1).

A problem is a canonical key, (family, operands), with a <= b where a and b commute (3 + 5 and 5 + 3 are one
question, asked either way round): `Problem.question` is its text ("sum:3,5", "story_two:5,12,3"),
the gold its integer answer, `meta` its family (`level`) and phrasing. `prompt_text` renders it in one of the
family's phrasings ("What is 3 plus 5?", "Add 3 and 5.", "Mia has 12 stickers. She gets 5 more, then gives away
3. How many stickers does she have now?"), followed by `INSTRUCTION`; the phrasing (template, name, object) is
drawn per problem, so a question recurs in other words across a stream. The answer is free-form and graded as
`arith_chat` grades (the last box, else the last integer; exact integer match).

Splits by the key, never the wording: `key_split` hashes the question text (blake2b-64 of "family:operands"):
h % 10 in {0, 1} -> test, 2 -> validation, else train. Every re-wording of a problem shares its key, so no test
question is a re-wording of a training one, and `overlap.check_held_out` (which compares `Problem.question`)
checks exactly that. tests/tasks/test_arith_words.py asserts the three splits' keys are disjoint and that the
rendered texts of two splits never share their numbers-and-family signature.

Families (`FAMILIES`: operand ranges, weight out of 20, phrasings) [our choice, measured on SmolLM2-135M-Instruct
at T=1, docs/real-model.md#the-arith_words-task]: successor questions the model nearly always gets right, small
sums and differences, times tables, and word problems of one and two steps, whose answers are often a short
computation written out ("12 + 5 = 17, 17 - 3 = 14"). 6,000+ keys; test holds about 1 in 5 of them.

No system prompt the chat template adds unasked [our choice]: `messages` opens with an empty system turn, since
SmolLM2's template otherwise prepends its default one (16 tokens of "You are a helpful AI assistant named
SmolLM, trained by Hugging Face") to every prompt; `system_prompt=None` keeps the template's default.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from pathlib import Path

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.verdict import Verdict
from benchctl.tasks.arith import SPLITS, grade_integer
from benchctl.tasks.arith_chat import ArithChatTask
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, register_task

INSTRUCTION = "Put your final answer within \\boxed{}."
NAMES = (
    ("Mia", "She", "her"),
    ("Tom", "He", "his"),
    ("Ava", "She", "her"),
    ("Sam", "He", "his"),
    ("Lea", "She", "her"),
)
THINGS = ("apples", "stickers", "marbles", "books", "coins", "pencils")


@dataclass(frozen=True)
class Family:
    """A kind of problem: operand ranges (inclusive), a filter, the answer, its share, and its phrasings."""

    name: str
    ranges: tuple[tuple[int, int], ...]
    answer: Callable[..., int]
    weight: int  # problems of this family in each cycle of 20
    phrasings: tuple[str, ...]  # str.format templates: {a} {b} {c} operands, {n} {p} {q} name/pronoun/possessive, {t}
    admits: Callable[..., bool] = lambda *ops: True
    commutes: bool = False  # a and b commute: the key holds a <= b and a phrasing may ask them in either order

    def keeps(self, ops: Sequence[int]) -> bool:
        """Whether `ops` is a canonical key of the family (in its filter; a <= b when a and b commute)."""
        return self.admits(*ops) and (not self.commutes or ops[0] <= ops[1])


FAMILIES = (
    Family(
        "next",
        ((0, 999),),
        lambda a: a + 1,
        4,
        (
            "What number comes right after {a}?",
            "What is one more than {a}?",
            "Count on by one from {a}: what comes next?",
        ),
    ),
    Family(
        "sum",
        ((0, 30), (0, 30)),
        lambda a, b: a + b,
        4,
        ("What is {a} + {b}?", "What is {a} plus {b}?", "Add {a} and {b}.", "What is the sum of {a} and {b}?"),
        commutes=True,
    ),
    Family(
        "difference",
        ((1, 30), (0, 30)),
        lambda a, b: a - b,
        2,
        ("What is {a} - {b}?", "What is {a} minus {b}?", "Subtract {b} from {a}.", "Take {b} away from {a}."),
        admits=lambda a, b: b <= a,
    ),
    Family(
        "product",
        ((2, 15), (2, 15)),
        lambda a, b: a * b,
        2,
        ("What is {a} times {b}?", "Multiply {a} by {b}.", "What is the product of {a} and {b}?"),
        commutes=True,
    ),
    Family(
        "story_add",
        ((2, 40), (2, 40)),
        lambda a, b: a + b,
        3,
        (
            "{n} has {a} {t}. {p} gets {b} more. How many {t} does {n} have now?",
            "There are {a} {t} in a box and {n} puts in {b} more. How many {t} are in the box?",
        ),
        commutes=True,
    ),
    Family(
        "story_sub",
        ((5, 40), (1, 39)),
        lambda a, b: a - b,
        2,
        (
            "{n} has {a} {t}. {p} gives {b} of them away. How many {t} does {n} have left?",
            "A box holds {a} {t}. {n} takes {b} out. How many {t} are still in the box?",
        ),
        admits=lambda a, b: b < a,
    ),
    Family(
        "story_two",
        ((2, 25), (2, 25), (1, 10)),
        lambda a, b, c: a + b - c,
        3,
        (
            "{n} has {a} {t}. {p} gets {b} more, then gives away {c}. How many {t} does {n} have now?",
            "{n} had {a} {t}, bought {b} more and lost {c}. How many {t} does {n} have?",
        ),
        commutes=True,
    ),
)
BY_NAME = {family.name: family for family in FAMILIES}
TRAIN_SIZE = 10000  # [our choice] problems of the train split by default: most train keys once in 200 steps of 32
HELD_OUT_SIZE = 1000


def key_split(question: str) -> str:
    """'train', 'test' or 'validation' of a canonical question ("sum:3,5"): blake2b-64 of its text, h % 10 in {0, 1}
    -> test, 2 -> validation, else train."""
    h = int.from_bytes(hashlib.blake2b(question.encode("utf-8"), digest_size=8).digest(), "big") % 10
    return "test" if h < 2 else ("validation" if h == 2 else "train")


def question_of(family: Family, operands: Sequence[int]) -> str:
    return f"{family.name}:{','.join(map(str, operands))}"


@lru_cache(maxsize=64)
def split_keys(family_name: str, split: str) -> tuple[tuple[int, ...], ...]:
    """Operands of every question of `family_name` in `split`, in a fixed order."""
    family = BY_NAME[family_name]
    grid = product(*(range(low, high + 1) for low, high in family.ranges))
    return tuple(ops for ops in grid if family.keeps(ops) and key_split(question_of(family, ops)) == split)


def family_cycle() -> tuple[str, ...]:
    """One cycle of families, each as often as its weight, interleaved (each turn to the family furthest behind)."""
    total, credit, cycle = sum(f.weight for f in FAMILIES), {f.name: 0 for f in FAMILIES}, []
    for _ in range(total):
        for f in FAMILIES:
            credit[f.name] += f.weight
        pick = max(credit, key=credit.__getitem__)
        credit[pick] -= total
        cycle.append(pick)
    return tuple(cycle)


@dataclass(frozen=True)
class ArithWordsConfig:
    """Options of the `arith_words` task."""

    size: int = field(default=1000, metadata={"help": "problems load() returns (task default: 10,000 for train)"})
    seed: int = field(default=0, metadata={"help": "seed of the question order and phrasings; problem i: (seed, i)"})
    split: str = field(default="test", metadata={"help": "'train', 'test' or 'validation': disjoint by key"})
    system_prompt: str | None = field(default="", metadata={"help": "system turn; None: the template's default"})

    def __post_init__(self) -> None:
        check_range("size", self.size, 1)
        if self.split not in SPLITS:
            raise BenchctlError(f"arith_words split {self.split!r} is not valid; choose one of: {', '.join(SPLITS)}")


def make_problems(config: ArithWordsConfig, count: int) -> list[Problem]:
    """The first `count` problems: families in turn (`family_cycle`), each family's questions of the split in a
    seeded order (cycled when used up), a phrasing drawn per problem."""
    orders = {}
    for f in FAMILIES:
        keys = list(split_keys(f.name, config.split))
        random.Random(f"arith_words/{config.split}/{config.seed}/{f.name}").shuffle(keys)
        orders[f.name] = keys
    cycle, used, problems = family_cycle(), dict.fromkeys(BY_NAME, 0), []
    for index in range(count):
        family = BY_NAME[cycle[index % len(cycle)]]
        keys = orders[family.name]
        ops = keys[used[family.name] % len(keys)]
        used[family.name] += 1
        rng = random.Random(f"arith_words/{config.split}/{config.seed}/{index}/phrasing")
        phrasing = (
            rng.randrange(len(family.phrasings)),
            rng.randrange(len(NAMES)),
            rng.randrange(len(THINGS)),
            family.commutes and rng.random() < 0.5,  # ask b before a
        )
        meta = {"level": family.name, "phrasing": phrasing}
        problem_id = f"arith_words-{config.split}-{config.seed}-{index}"
        problems.append(Problem(problem_id, question_of(family, ops), str(family.answer(*ops)), meta))
    return problems


def render_question(problem: Problem) -> str:
    """The problem in its phrasing, without the instruction."""
    family_name, operands = problem.question.split(":")
    family = BY_NAME[family_name]
    template, who, thing, swap = problem.meta.get("phrasing", (0, 0, 0, False))
    values = [int(x) for x in operands.split(",")]
    if swap:
        values[0], values[1] = values[1], values[0]
    ops = dict(zip("abc", values))
    name, pronoun, possessive = NAMES[who]
    return family.phrasings[template].format(**ops, n=name, p=pronoun, q=possessive, t=THINGS[thing])


@register_task("arith_words")
class ArithWordsTask(ArithChatTask):
    """Arithmetic facts and one- or two-step word problems in several phrasings; free-form answers."""

    description = "arithmetic facts and 1-2 step word problems in several phrasings, free-form answers (chat RL)"
    known_size = HELD_OUT_SIZE
    held_out_task = "arith_words"
    default_split = "test"
    shows_work = True
    max_new_tokens = 96  # [our choice] two-step answers written out run past arith_chat's 64 (docs/real-model.md)

    def __init__(
        self, size: int | None = None, seed: int = 0, split: str | None = None, system_prompt: str | None = ""
    ):
        split = split or self.default_split
        size = size if size is not None else (TRAIN_SIZE if split == "train" else HELD_OUT_SIZE)
        self.config = ArithWordsConfig(size, seed, split, system_prompt)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return make_problems(self.config, count)

    def prompt_text(self, problem: Problem) -> str:
        """The question in its phrasing, then `INSTRUCTION`."""
        return f"{render_question(problem)} {INSTRUCTION}"

    def messages(self, problem: Problem) -> list[dict]:
        """The user turn, after an explicit system turn (`system_prompt`; None: none, the template's default)."""
        user = [{"role": "user", "content": self.prompt_text(problem)}]
        if self.config.system_prompt is None:
            return user
        return [{"role": "system", "content": self.config.system_prompt}, *user]

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """Exact integer match of the last box, else the last integer (`arith_chat`'s rule), in-process."""
        return [grade_integer(problem.gold, self.extract(completion)) for problem, completion in items]


@register_task("arith_words_val")
class ArithWordsValidationTask(ArithWordsTask):
    """`arith_words`' validation split: for choosing settings, never for the verdict."""

    description = "arith_words' validation split (disjoint from train and test by key): pick settings here"
    held_out_task = None
    default_split = "validation"
