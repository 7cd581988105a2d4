"""MQR (MathForge arXiv:2601.20614): prompt construction, output parsing/filtering, task-file rows."""

import pytest

from benchctl.augment import (
    ASPECTS,
    MQR_INSTRUCTIONS,
    MQRConfig,
    build_prompt,
    original_row,
    parse_reformulation,
    reformulated_row,
)
from benchctl.errors import BenchctlError
from benchctl.tasks import Problem

QUESTION = "What is the sum of the roots of $x^2 - 5x + 6 = 0$?"
LONG = (
    "In the kingdom of Arithmos, a royal engineer studies the polynomial $x^2 - 5x + 6$ while designing "
    "a bridge. What is the sum of the roots of $x^2 - 5x + 6 = 0$?"
)


def test_prompt_holds_the_verbatim_instruction_question_and_gold_for_each_aspect():
    for aspect in ASPECTS:
        prompt = build_prompt(QUESTION, "5", aspect)
        assert MQR_INSTRUCTIONS[aspect] in prompt and QUESTION in prompt
        assert "same final answer as the given question (5)" in prompt and "<question>" in prompt
    assert MQR_INSTRUCTIONS["term"].startswith("Invent a new, abstract mathematical term")
    with pytest.raises(BenchctlError, match="unknown MQR aspect"):
        build_prompt(QUESTION, "5", "story")


def test_tagged_output_is_extracted_and_kept():
    output = f"Sure! Here it is.\n<question>\n{LONG}\n</question>\nHope this helps."
    assert parse_reformulation(output, QUESTION) == (LONG, "kept")


def test_untagged_output_drops_a_leading_label():
    assert parse_reformulation(f"**Reformulated question:** {LONG}", QUESTION) == (LONG, "kept")


@pytest.mark.parametrize(
    "output, finish, reason",
    [
        ("<question>   </question>", "stop", "empty"),
        ("", "stop", "empty"),
        (f"<question>{QUESTION.upper()}  </question>", "stop", "unchanged"),
        (f"<question>{LONG[:60]}", "length", "truncated"),
        ("<question>Sum?</question>", "stop", "too_short"),
        (f"<question>{LONG} The answer is \\boxed{{5}}.</question>", "stop", "leaks_answer"),
        ("7+1=8", "stop", "too_short"),
    ],
)
def test_bad_reformulations_are_rejected_with_a_reason(output, finish, reason):
    assert parse_reformulation(output, QUESTION, finish) == (None, reason)


def test_rows_follow_the_task_file_schema_and_keep_the_gold():
    problem = Problem("train/algebra/1.json", QUESTION, "5", {"level": 2, "subject": "Algebra", "solution": "s"})
    original = original_row(problem)
    assert original == {
        "id": "train/algebra/1.json",
        "problem": QUESTION,
        "answer": "5",
        "level": 2,
        "subject": "Algebra",
        "solution": "s",
    }
    row = reformulated_row(problem, "subproblem", LONG)
    assert row == {
        "id": "train/algebra/1.json#mqr-subproblem",
        "problem": LONG,
        "answer": "5",
        "source": "mqr:subproblem",
        "original_id": "train/algebra/1.json",
        "level": 2,
        "subject": "Algebra",
    }


def test_config_rejects_unknown_aspects():
    with pytest.raises(BenchctlError, match="unknown MQR aspect"):
        MQRConfig(model="m", out="o", aspects=("term", "plot"))


@pytest.mark.slow
@pytest.mark.vllm
def test_mqr_through_the_engine_writes_a_loadable_task_file_and_counts_every_output(
    wide_tiny_model, tmp_path, fixture_data_dir
):
    import json

    from typer.testing import CliRunner

    from benchctl.cli import app
    from benchctl.tasks import get_task

    out = tmp_path / "aug" / "math_train.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "augment",
            "mqr",
            "--model",
            str(wide_tiny_model),
            "--out",
            str(out),
            "--limit",
            "2",
            "--data-dir",
            str(fixture_data_dir),
            "--max-tokens",
            "48",
        ],
    )
    assert result.exit_code == 0, (result.exit_code, repr(result.exception), result.stderr[-800:])
    stats = json.loads(out.with_name("math_train.jsonl.stats.json").read_text())
    counts = stats["counts"]
    assert set(counts) == set(ASPECTS) and all(sum(c.values()) == 2 for c in counts.values())
    kept = sum(c["kept"] for c in counts.values())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == stats["rows"] == 2 + kept
    reloaded = get_task("math_train").load(out.parent)  # the output is a valid task file for --data-dir
    originals = get_task("math_train").load(fixture_data_dir, limit=2)
    assert [p.id for p in reloaded[:2]] == [p.id for p in originals]
    for row in rows[2:]:
        aspect = row["source"].split(":", 1)[1]
        assert row["id"] == f"{row['original_id']}#mqr-{aspect}" and aspect in ASPECTS
        assert row["answer"] == next(p.gold for p in originals if p.id == row["original_id"])
