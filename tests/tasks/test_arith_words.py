"""`arith_words`: splits by problem key (no question, and no re-wording of one, in two splits), size, phrasings,
determinism, and the grader on real SmolLM2-135M-Instruct answers (tests/data/arith_words_smollm2.jsonl)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchctl.tasks import get_task
from benchctl.tasks.arith_words import FAMILIES, INSTRUCTION, split_keys
from benchctl.tasks.overlap import check_held_out

FIXTURE = Path(__file__).parents[1] / "data" / "arith_words_smollm2.jsonl"


def _keys(split: str) -> set[str]:
    return {f"{f.name}:{','.join(map(str, ops))}" for f in FAMILIES for ops in split_keys(f.name, split)}


def test_splits_share_no_problem_key_and_hold_enough_questions():
    train, test, validation = _keys("train"), _keys("test"), _keys("validation")
    assert not train & test and not train & validation and not test & validation
    assert len(train | test | validation) >= 2000
    assert len(test) >= 400


def _signature(problem, text: str) -> tuple:
    """A problem's identity read back from its rendered words: the family and its numbers, the commuting pair
    unordered (a re-wording keeps both; `Subtract 3 from 8` and `8 minus 3` read the same)."""
    numbers = [int(n) for n in re.findall(r"\d+", text.removesuffix(INSTRUCTION))]
    family = problem.meta["level"]
    if family == "story_two":
        return family, tuple(sorted(numbers[:2])), numbers[2]
    return family, tuple(sorted(numbers))


def test_no_test_question_is_a_rewording_of_a_training_one():
    task = get_task("arith_words", split="train", size=20000)
    train = {_signature(p, task.prompt_text(p)) for p in task.load()}
    for split in ("test", "validation"):
        held = get_task("arith_words", split=split, size=3000)
        signatures = {_signature(p, held.prompt_text(p)) for p in held.load()}
        assert signatures and not signatures & train, split


def test_a_question_is_asked_in_several_phrasings_across_a_stream():
    task = get_task("arith_words", split="train", size=20000)
    texts: dict[str, set[str]] = {}
    for problem in task.load():
        texts.setdefault(problem.question, set()).add(task.prompt_text(problem))
    reworded = sum(len(variants) > 1 for variants in texts.values())
    assert reworded > len(texts) // 2


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
        "next": lambda a: a + 1,
        "sum": lambda a, b: a + b,
        "story_add": lambda a, b: a + b,
        "difference": lambda a, b: a - b,
        "story_sub": lambda a, b: a - b,
        "product": lambda a, b: a * b,
        "story_two": lambda a, b, c: a + b - c,
    }
    assert set(rules) == {f.name for f in FAMILIES}
    for problem in get_task("arith_words", split="validation", size=200).load():
        family, ops = problem.question.split(":")
        assert problem.gold == str(rules[family](*(int(x) for x in ops.split(",")))), problem


def _fixture_rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("row", _fixture_rows(), ids=lambda row: row["id"])
def test_grader_verdicts_on_real_smollm2_answers_match_the_hand_checked_ones(row):
    task = get_task("arith_words")
    problem = task.load(limit=row["index"] + 1)[row["index"]]
    assert problem.question == row["question"]
    (verdict,) = task.grade([(problem, row["completion"])])
    assert verdict.correct == row["correct"], (row["completion"], verdict)
    assert verdict.extracted == row["extracted"]
