"""`benchctl grade` through the CLI on real benchmark files (the tests/data fixture and, where present, the complete
files): MATH-500 golds and MBPP references."""

import json
import re

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app

pytestmark = pytest.mark.slow


def _problems(task, data_dir, limit=None):
    from benchctl.tasks import get_task

    return get_task(task).load(data_dir, limit)


def _grade(tmp_path, task, rows, data_dir, name):
    samples = tmp_path / f"{name}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / name
    result = CliRunner().invoke(
        app, ["grade", "--task", task, "--samples", str(samples), "--out", str(out), "--data-dir", str(data_dir)]
    )
    assert result.exit_code == 0, result.output
    return pq.read_table(out / task / "summary.parquet").to_pylist(), pq.read_table(out / task / "samples")


def test_math500_golds_in_a_box_grade_correct(tmp_path, real_data_dir):
    problems = _problems("math500", real_data_dir)
    rows = [{"problem_id": p.id, "completion": f"So the final answer is $\\boxed{{{p.gold}}}$."} for p in problems]
    summary, samples = _grade(tmp_path, "math500", rows, real_data_dir, "golds")
    assert summary[0]["problems"] == len(problems) in (50, 500) and summary[0]["k"] == 1
    failures = [r for r in samples.to_pylist() if not r["correct"]]
    # measured: 500/500 golds graded correct (mean@1 = 1.0 exactly), 50/50 on the fixture
    assert summary[0]["mean_at_n"] == 1.0, [(r["problem_id"], r["reason"], r["extracted"]) for r in failures]


def test_math500_perturbed_integer_golds_grade_wrong(tmp_path, real_data_dir):
    every = _problems("math500", real_data_dir)
    problems = [p for p in every if re.fullmatch(r"-?\d+", p.gold)]
    rows = [
        {"problem_id": p.id, "completion": f"The answer is $\\boxed{{{int(p.gold) + 1}}}$."}
        for p in problems
        for _ in range(2)
    ]
    summary, _ = _grade(tmp_path, "math500", rows, real_data_dir, "perturbed")
    assert summary[0]["problems"] == len(problems) > len(every) / 3
    assert [r["k"] for r in summary] == [1, 2]
    assert all(r["pass_at_k"] == r["mean_at_n"] == r["maj_at_k"] == 0.0 for r in summary)


def test_mbpp_reference_solutions_pass(tmp_path, fixture_data_dir):
    problems = _problems("mbpp", fixture_data_dir, limit=30)  # the same 30 rows as the complete file's first 30
    rows = [{"problem_id": p.id, "completion": f"```python\n{p.meta['code']}\n```"} for p in problems]
    summary, samples = _grade(tmp_path, "mbpp", rows, fixture_data_dir, "mbpp")
    failures = [(r["problem_id"], r["reason"], r["detail"]) for r in samples.to_pylist() if not r["correct"]]
    assert summary[0]["mean_at_n"] == 1.0, failures
