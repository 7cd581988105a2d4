"""`benchctl grade`: completions made elsewhere, graded by the task's own grader into eval's tables."""

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.evaluation import GradeConfig, run_grade
from benchctl.results.tables import SAMPLE_SCHEMA
from benchctl.tasks import get_task


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _grade_cli(*args):
    return CliRunner().invoke(app, ["grade", *map(str, args)])


def test_arith_golds_score_one_and_off_by_one_scores_zero(tmp_path):
    problems = get_task("arith").load(limit=20)
    golds = [{"problem_id": p.id, "completion": p.gold} for p in problems for _ in range(4)]
    wrong = [{"problem_id": p.id, "completion": str(int(p.gold) + 1)} for p in problems for _ in range(4)]
    for name, rows, expected in (("golds", golds, 1.0), ("wrong", wrong, 0.0)):
        out = tmp_path / name
        result = _grade_cli("--task", "arith", "--samples", _write(tmp_path / f"{name}.jsonl", rows), "--out", out)
        assert result.exit_code == 0, result.output
        summary = pq.read_table(out / "arith" / "summary.parquet").to_pylist()
        assert [r["k"] for r in summary] == [1, 2, 4]
        assert all(r["pass_at_k"] == r["mean_at_n"] == r["maj_at_k"] == expected for r in summary)


def test_uneven_counts_report_pass_at_k_only_up_to_min_n(tmp_path):
    problems = get_task("arith").load(limit=3)
    rows = [{"problem_id": problems[0].id, "completion": problems[0].gold}] * 5
    rows += [{"problem_id": problems[1].id, "completion": "x"}] * 2
    rows += [
        {"problem_id": problems[2].id, "completion": problems[2].gold},
        {"problem_id": problems[2].id, "completion": "0"},
    ] * 2
    config = GradeConfig(
        task="arith", samples=str(_write(tmp_path / "s.jsonl", rows)), out=str(tmp_path / "o"), ks=(1, 2, 4)
    )
    result = run_grade(config)
    assert result.notes == ("pass@k only for k <= min n = 2 (dropped k=4)",)
    summary = result.tasks[0].summary.to_pylist()
    assert [r["k"] for r in summary] == [1, 2]
    assert summary[0]["pass_at_k"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert summary[1]["pass_at_k"] == pytest.approx((1.0 + 0.0 + 5 / 6) / 3)  # pass@2(n=4, c=2) = 1 - C(2,2)/C(4,2)
    problems_table = pq.read_table(tmp_path / "o" / "arith" / "problems.parquet").to_pylist()
    assert [(r["n"], r["c"]) for r in problems_table] == [(5, 5), (2, 0), (4, 2)]


def test_per_sample_table_has_the_shared_schema_and_file_order(tmp_path):
    p = get_task("arith").load(limit=1)[0]
    rows = [{"problem_id": p.id, "completion": c} for c in (p.gold, "nope", f"\\boxed{{{p.gold}}}")]
    run_grade(GradeConfig(task="arith", samples=str(_write(tmp_path / "s.jsonl", rows)), out=str(tmp_path / "o")))
    table = pq.read_table(tmp_path / "o" / "arith" / "samples")
    assert table.schema.equals(SAMPLE_SCHEMA)
    got = table.select(["sample_index", "correct", "reason"]).to_pylist()
    assert got == [
        {"sample_index": 0, "correct": True, "reason": "correct"},
        {"sample_index": 1, "correct": False, "reason": "no_answer"},
        {"sample_index": 2, "correct": True, "reason": "correct"},
    ]
    assert table.column("num_tokens").null_count == 3


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "line 2: not JSON"),
        ('{"problem_id": "arith-test-0-0"}', "line 2: need an object"),
        ('{"problem_id": "nope", "completion": "1"}', "line 2: unknown problem_id 'nope'"),
    ],
)
def test_bad_line_is_one_error_naming_the_line(tmp_path, line, message):
    good = json.dumps({"problem_id": "arith-test-0-0", "completion": "1"})
    path = tmp_path / "s.jsonl"
    path.write_text(good + "\n" + line + "\n")
    result = _grade_cli("--task", "arith", "--samples", path, "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_regrading_the_same_file_replaces_rather_than_appends(tmp_path):
    p = get_task("arith").load(limit=1)[0]
    path = _write(tmp_path / "s.jsonl", [{"problem_id": p.id, "completion": p.gold}] * 2)
    config = GradeConfig(task="arith", samples=str(path), out=str(tmp_path / "o"))
    run_grade(config)
    run_grade(config)
    assert pq.read_table(tmp_path / "o" / "arith" / "samples").num_rows == 2
    _write(path, [{"problem_id": p.id, "completion": "0"}])
    result = _grade_cli("--task", "arith", "--samples", path, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "--overwrite" in result.stderr
