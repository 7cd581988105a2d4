"""`arith_words`: arithmetic facts and one- or two-step word problems in several phrasings, a real chat model's
RL testbed with a spread of difficulty (issue 42 item 1).

A problem is a canonical key, (family, operands), with a <= b where a and b commute (3 + 5 and 5 + 3 are one
question, asked either way round): `Problem.question` is its text ("sum:3,5", "story_two:5,12,3"),
the gold its integer answer, `meta` its family (`level`), phrasing and fact. `prompt_text` renders it in one of the
family's phrasings ("What is 3 plus 5?", "Add 3 and 5.", "Mia has 12 stickers. She gets 5 more, then gives away
3. How many stickers does she have now?"), followed by `INSTRUCTION`; the phrasing (template, name, object) is
drawn per problem, so a question recurs in other words across a stream. The answer is free-form and graded as
`arith_chat` grades (the last box, else the last integer; exact integer match).

Splits by the mathematical fact, never the wording: `key_split` hashes `fact_of` (blake2b-64 of "add:3,5,8"):
h % 10 in {0, 1} -> test, 2 -> validation, else train. A fact is shared by every re-wording of a problem and by
the questions that ask it in another form (3 + 5, 8 - 3, a story adding 3 and 5; after 7 and before 8; double 4
and half of 8), so no test question is a re-wording of a training one. tests/tasks/test_arith_words.py asserts
the splits' facts and keys are disjoint and that no rendered test prompt's numbers (with its answer) are a
training prompt's.

Families (`FAMILIES`: operand ranges, weight out of 20, phrasings) [our choice, measured on SmolLM2-135M-Instruct
at T=1 and T=0.6, docs/real-model.md#a-testbed-with-a-spread-of-difficulty-arith_words]: small operands throughout
(two- and three-digit operands made the model ramble: 4.7% mean pass@1 in the first design): a story that states
the number it asks for ("Tom has 3 apples. How many apples does Tom have?": the one kind the model nearly always
gets right at T=0.6, 80% in a probe, so the testbed has all-correct groups), counting on and back by one below
100 (no comparisons: "7 is bigger than 4." ends on the wrong integer for the last-integer grader), double and
half, sums,
differences and products of single digits (arith_chat's band), and word problems of one and two steps with
numbers under 20, whose answers are often a short computation written out ("12 + 5 = 17, 17 - 3 = 14"); the
two-step stories give the bulk of the 2,415 keys, the weights give the easy families most of the stream.

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

INSTRUCTION = "Give your final answer as a number at the end."  # [our choice] no box to parrot (docs/real-model.md)
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
    fact: Callable[..., tuple] = lambda *ops: ("-", *ops)  # (kind, numbers...): what decides the split (`fact_of`)

    def keeps(self, ops: Sequence[int]) -> bool:
        """Whether `ops` is a canonical key of the family (in its filter; a <= b when a and b commute)."""
        return self.admits(*ops) and (not self.commutes or ops[0] <= ops[1])


FAMILIES = (
    Family(  # [our choice] the share the model nearly always gets right at T=0.6 (docs/real-model.md)
        "have",
        ((1, 19),),
        lambda a: a,
        2,
        ("{n} has {a} {t}. How many {t} does {n} have?", "There are {a} {t} in a box. How many {t} are in the box?"),
        fact=lambda a: ("add", 0, a, a),
    ),
    Family(
        "next",
        ((0, 99),),
        lambda a: a + 1,
        3,
        ("What number comes right after {a}?", "What is one more than {a}?", "What comes after {a} when you count?"),
        fact=lambda a: ("add", 1, a, a + 1),
    ),
    Family(
        "before",
        ((1, 100),),
        lambda a: a - 1,
        2,
        ("What number comes right before {a}?", "What is one less than {a}?", "Count back by one from {a}."),
        fact=lambda a: ("add", 1, a - 1, a),
    ),
    Family(
        "double",
        ((1, 20),),
        lambda a: 2 * a,
        1,
        ("What is double {a}?", "What is twice {a}?", "What do you get when you double {a}?"),
        fact=lambda a: ("add", a, a, 2 * a),
    ),
    Family(
        "half",
        ((2, 40),),
        lambda a: a // 2,
        1,
        ("What is half of {a}?", "What do you get when you halve {a}?"),
        admits=lambda a: a % 2 == 0,
        fact=lambda a: ("add", a // 2, a // 2, a),
    ),
    Family(
        "sum",
        ((0, 9), (0, 9)),
        lambda a, b: a + b,
        2,
        ("What is {a} + {b}?", "What is {a} plus {b}?", "Add {a} and {b}.", "What is the sum of {a} and {b}?"),
        commutes=True,
        fact=lambda a, b: ("add", a, b, a + b),
    ),
    Family(
        "difference",
        ((0, 9), (0, 9)),
        lambda a, b: a - b,
        2,
        ("What is {a} - {b}?", "What is {a} minus {b}?", "Subtract {b} from {a}.", "Take {b} away from {a}."),
        admits=lambda a, b: b <= a,
        fact=lambda a, b: ("add", b, a - b, a),
    ),
    Family(
        "product",
        ((1, 9), (1, 9)),
        lambda a, b: a * b,
        2,
        ("What is {a} times {b}?", "Multiply {a} by {b}.", "What is the product of {a} and {b}?"),
        commutes=True,
        fact=lambda a, b: ("mul", a, b, a * b),
    ),
    Family(
        "story_add",
        ((1, 19), (1, 19)),
        lambda a, b: a + b,
        2,
        (
            "{n} has {a} {t}. {p} gets {b} more. How many {t} does {n} have now?",
            "There are {a} {t} in a box and {n} puts in {b} more. How many {t} are in the box?",
        ),
        commutes=True,
        fact=lambda a, b: ("add", a, b, a + b),
    ),
    Family(
        "story_sub",
        ((2, 19), (1, 18)),
        lambda a, b: a - b,
        1,
        (
            "{n} has {a} {t}. {p} gives {b} of them away. How many {t} does {n} have left?",
            "A box holds {a} {t}. {n} takes {b} out. How many {t} are still in the box?",
        ),
        admits=lambda a, b: b < a,
        fact=lambda a, b: ("add", b, a - b, a),
    ),
    Family(
        "story_two",
        ((1, 19), (1, 19), (1, 9)),
        lambda a, b, c: a + b - c,
        2,
        (
            "{n} has {a} {t}. {p} gets {b} more, then gives away {c}. How many {t} does {n} have now?",
            "{n} had {a} {t}, bought {b} more and lost {c}. How many {t} does {n} have?",
        ),
        admits=lambda a, b, c: c < a + b,
        commutes=True,
        fact=lambda a, b, c: ("add_sub", a, b, c),
    ),
)
BY_NAME = {family.name: family for family in FAMILIES}
TRAIN_SIZE = 10000  # [our choice] problems of the train split by default: most train keys once in 200 steps of 32
HELD_OUT_SIZE = 1000


def key_split(fact: str) -> str:
    """'train', 'test' or 'validation' of a fact ("add:3,5,8", `fact_of`): blake2b-64 of its text, h % 10 in {0, 1}
    -> test, 2 -> validation, else train."""
    h = int.from_bytes(hashlib.blake2b(fact.encode("utf-8"), digest_size=8).digest(), "big") % 10
    return "test" if h < 2 else ("validation" if h == 2 else "train")


def question_of(family: Family, operands: Sequence[int]) -> str:
    return f"{family.name}:{','.join(map(str, operands))}"


def fact_of(family: Family, operands: Sequence[int]) -> str:
    """The mathematical fact a question asks, the same for all its re-wordings and for the questions that ask it in
    another form: "add:3,5,8" for 3 + 5, 5 + 3, 8 - 3, 8 - 5, a story adding 3 and 5, double 4's "add:4,4,8" also
    for half of 8, "add:1,7,8" for after 7, before 8 and 7 + 1. Sums and products are their numbers sorted (the
    largest is the result); a two-step story keeps its operands ("add_sub:5,12,3", a <= b)."""
    kind, *numbers = family.fact(*operands)
    if kind in ("add", "mul"):
        numbers = sorted(numbers)
    return f"{kind}:{','.join(map(str, numbers))}"


@lru_cache(maxsize=64)
def split_keys(family_name: str, split: str) -> tuple[tuple[int, ...], ...]:
    """Operands of every question of `family_name` in `split`, in a fixed order."""
    family = BY_NAME[family_name]
    grid = product(*(range(low, high + 1) for low, high in family.ranges))
    return tuple(ops for ops in grid if family.keeps(ops) and key_split(fact_of(family, ops)) == split)


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
    instruction: str = field(default=INSTRUCTION, metadata={"help": "text after each question"})

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
        meta = {"level": family.name, "phrasing": phrasing, "fact": fact_of(family, ops)}
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
        self,
        size: int | None = None,
        seed: int = 0,
        split: str | None = None,
        system_prompt: str | None = "",
        instruction: str = INSTRUCTION,
    ):
        split = split or self.default_split
        size = size if size is not None else (TRAIN_SIZE if split == "train" else HELD_OUT_SIZE)
        self.config = ArithWordsConfig(size, seed, split, system_prompt, instruction)

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the problems (`data_dir` is ignored: nothing is read)."""
        count = self.config.size if limit is None else min(limit, self.config.size)
        return make_problems(self.config, count)

    def prompt_text(self, problem: Problem) -> str:
        """The question in its phrasing, then the instruction (`INSTRUCTION` unless configured)."""
        return f"{render_question(problem)} {self.config.instruction}"

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
