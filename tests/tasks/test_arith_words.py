"""`arith_words`: splits by problem key (no question, and no re-wording of one, in two splits), size, phrasings,
determinism, and the grader on real SmolLM2-135M-Instruct answers (tests/data/arith_words_smollm2.jsonl)."""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import product
from pathlib import Path

import pytest

from benchctl.tasks import get_task
from benchctl.tasks.arith_words import FAMILIES, fact_of, render_question, split_keys
from benchctl.tasks.base import Problem
from benchctl.tasks.overlap import check_held_out

FIXTURE = Path(__file__).parents[1] / "data" / "arith_words_smollm2.jsonl"


def _keys(split: str) -> set[str]:
    return {f"{f.name}:{','.join(map(str, ops))}" for f in FAMILIES for ops in split_keys(f.name, split)}


def _facts(split: str) -> set[str]:
    return {fact_of(f, ops) for f in FAMILIES for ops in split_keys(f.name, split)}


def test_splits_share_no_problem_key_nor_fact_and_hold_enough_questions():
    train, test, validation = _keys("train"), _keys("test"), _keys("validation")
    assert not train & test and not train & validation and not test & validation
    assert len(train | test | validation) >= 2000
    assert len(test) >= 400
    facts = _facts("train"), _facts("test"), _facts("validation")
    assert not facts[0] & facts[1] and not facts[0] & facts[2] and not facts[1] & facts[2]


GROUPS = {"product": "mul"}  # the others: sums (and story_two)


def _signature(problem, text: str) -> tuple:
    """A problem's fact read back from its rendered words, independently of `fact_of`: its kind and the numbers in
    the text with the answer, sorted (a re-wording keeps them: `Subtract 3 from 8` and `What is 3 + 5?` both read
    ("add", 3, 5, 8), as do `What comes after 7?` and `What is one less than 8?`, and `half of 8` and `double 4`;
    a two-step story reads its pair unordered and what is given away)."""
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    if problem.meta["level"] == "story_two":  # a + b - c: the pair unordered, then what is given away
        return "two", tuple(sorted(numbers[:2])), numbers[2]
    return GROUPS.get(problem.meta["level"], "add"), tuple(sorted([*numbers, int(problem.gold)]))


def _renderings(split: str) -> set[tuple]:
    """The signature of every question of `split` in every phrasing (template, either order where it commutes)."""
    signatures = set()
    for family in FAMILIES:
        for ops in split_keys(family.name, split):
            gold = str(family.answer(*ops))
            for template, swap in product(range(len(family.phrasings)), (False, family.commutes)):
                meta = {"level": family.name, "phrasing": (template, 0, 0, swap)}
                problem = Problem("p", f"{family.name}:{','.join(map(str, ops))}", gold, meta)
                signatures.add(_signature(problem, render_question(problem)))
    return signatures


def test_no_test_question_is_a_rewording_of_a_training_one():
    train = _renderings("train")
    for split in ("test", "validation"):
        held = _renderings(split)
        assert held and not held & train, (split, sorted(held & train)[:5])


def test_a_question_is_asked_in_several_phrasings_across_a_stream():
    task = get_task("arith_words", split="train", size=20000)
    texts: dict[str, set[str]] = {}
    problems = task.load()
    for problem in problems:
        texts.setdefault(problem.question, set()).add(task.prompt_text(problem))
    repeated = [question for question, count in Counter(p.question for p in problems).items() if count > 1]
    reworded = sum(len(texts[question]) > 1 for question in repeated)
    assert repeated and reworded > len(repeated) // 2


def test_the_held_out_check_counts_no_shared_question_between_train_and_test():
    assert check_held_out("arith_words", "arith_words", data_dir=None, limit=None, allow_overlap=False) == 0
    assert check_held_out("arith_words", "arith_words_val", data_dir=None, limit=None, allow_overlap=False) == 0


def test_problems_depend_only_on_seed_split_and_index():
    long = get_task("arith_words", split="test", size=300, seed=4).load()
    short = get_task("arith_words", split="test", size=50, seed=4).load()
    assert long[:50] == short
    other = get_task("arith_words", split="test", size=50, seed=5).load()
    assert [p.question for p in other] != [p.question for p in short]


def test_the_chat_template_adds_no_system_prompt_unless_asked():
    task = get_task("arith_words")
    problem = task.load(limit=1)[0]
    assert task.messages(problem)[0] == {"role": "system", "content": ""}
    default = get_task("arith_words", system_prompt=None)
    assert [m["role"] for m in default.messages(problem)] == ["user"]


def test_gold_answers_are_the_arithmetic_of_the_key():
    rules = {
        "have": lambda a: a,
        "next": lambda a: a + 1,
        "before": lambda a: a - 1,
        "double": lambda a: 2 * a,
        "half": lambda a: a / 2,
        "sum": lambda a, b: a + b,
        "story_add": lambda a, b: a + b,
        "difference": lambda a, b: a - b,
        "story_sub": lambda a, b: a - b,
        "product": lambda a, b: a * b,
        "story_two": lambda a, b, c: a + b - c,
    }
    assert set(rules) == {f.name for f in FAMILIES}
    for problem in get_task("arith_words", split="validation", size=400).load():
        family, ops = problem.question.split(":")
        gold = rules[family](*(int(x) for x in ops.split(",")))
        assert gold == int(gold) >= 0 and problem.gold == str(int(gold)), problem


def _fixture_rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("row", _fixture_rows(), ids=lambda row: row["id"])
def test_grader_verdicts_on_real_smollm2_answers_match_the_hand_checked_ones(row):
    """Each row: a real answer to the question it was sampled for (rows "test-*": the first design's test stream at
    T=1, two- and three-digit operands; rows "words-*": the redesign's at T=0.6; the grader reads only the completion
    and the gold), its hand-checked verdict."""
    task = get_task("arith_words")
    problem = Problem(row["id"], row["question"], row["gold"], {"level": row["question"].split(":")[0]})
    (verdict,) = task.grade([(problem, row["completion"])])
    assert verdict.correct == row["correct"], (row["completion"], verdict)
    assert verdict.extracted == row["extracted"]
