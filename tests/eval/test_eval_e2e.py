"""End to end: `benchctl eval` of the tiny locally built model on `arith` through the real vLLM engine,
the tables it writes, and resume after a lost part / a killed run (no mocks: real engine, real files)."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.evaluation import EvalConfig, run_eval
from benchctl.results.tables import SAMPLE_SCHEMA

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

SUMMARY_COLUMNS = [
    "task",
    "model",
    "k",
    "problems",
    "n_min",
    "n_max",
    "pass_at_k",
    "pass_at_k_low",
    "pass_at_k_high",
    "maj_at_k",
    "maj_at_k_low",
    "maj_at_k_high",
    "mean_at_n",
    "mean_at_n_low",
    "mean_at_n_high",
    "resamples",
    "confidence",
]


def _eval_cli(model, out, *extra):
    args = [
        "eval",
        "--model",
        str(model),
        "--tasks",
        "arith",
        "--k",
        "1..8",
        "--limit",
        "12",
        "--max-tokens",
        "6",
        "--out",
        str(out),
        "--resamples",
        "200",
        *map(str, extra),
    ]
    return CliRunner().invoke(app, args)


def test_eval_of_tiny_model_writes_every_table_with_schema_and_row_counts(tiny_model, tmp_path):
    out = tmp_path / "run"
    result = _eval_cli(tiny_model, out)
    assert result.exit_code == 0, result.output
    assert "pass@k" in result.stdout and "arith" in result.stdout
    samples = pq.read_table(out / "arith" / "samples")
    assert samples.schema.equals(SAMPLE_SCHEMA) and samples.num_rows == 12 * 8
    per_problem = {}
    for row in samples.select(["problem_id", "sample_index", "num_tokens", "finish_reason"]).to_pylist():
        per_problem.setdefault(row["problem_id"], []).append(row["sample_index"])
        assert 0 < row["num_tokens"] <= 6 and row["finish_reason"] in ("stop", "length")
    assert len(per_problem) == 12 and all(sorted(v) == list(range(8)) for v in per_problem.values())
    problems = pq.read_table(out / "arith" / "problems.parquet")
    assert problems.num_rows == 12 and problems.column_names[:4] == ["problem_id", "n", "c", "mean"]
    assert set(problems.column("n").to_pylist()) == {8}
    summary = pq.read_table(out / "arith" / "summary.parquet")
    assert summary.column_names == SUMMARY_COLUMNS and summary.column("k").to_pylist() == [1, 2, 4, 8]
    assert pq.read_table(out / "summary.parquet").num_rows == 4
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["ks"] == {"value": [1, 2, 4, 8], "source": "flag"}
    assert config["config"]["temperature"] == {"value": 0.6, "source": "default"}
    assert config["identity"]["n"] == 8


def test_rerun_samples_only_problems_whose_part_was_lost(tiny_model, tmp_path):
    base = EvalConfig(
        model=str(tiny_model),
        tasks=("arith",),
        ks=(1, 4),
        n=4,
        limit=6,
        max_tokens=6,
        out=str(tmp_path / "run"),
        chunk_samples=8,
        resamples=100,
        progress=False,
    )  # 2 prompts/part
    first = run_eval(base).tasks[0]
    parts_dir = first.dir / "samples"
    parts = sorted(parts_dir.glob("part-*.parquet"))
    assert (first.sampled, len(parts)) == (6, 3)
    lost_rows = pq.read_table(parts[1]).select(["problem_id", "sample_index", "completion"]).to_pylist()
    lost = {row["problem_id"] for row in lost_rows}
    parts[1].unlink()  # as if the run died before writing it
    (parts_dir / ".part-00003.parquet.999.tmp").write_bytes(b"half")  # and left a half-written file
    kept = {p: p.stat().st_mtime_ns for p in (parts[0], parts[2])}
    second = run_eval(base).tasks[0]
    assert (second.sampled, second.reused) == (2, 4)
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # finished parts untouched
    new = sorted(set(parts_dir.glob("part-*.parquet")) - set(kept))
    assert len(new) == 1 and set(pq.read_table(new[0]).column("problem_id").to_pylist()) == lost
    # seeds are keyed by problem id, so the resampled problems get exactly the samples they had before
    assert pq.read_table(new[0]).select(["problem_id", "sample_index", "completion"]).to_pylist() == lost_rows
    assert pq.read_table(first.dir / "problems.parquet").column("n").to_pylist() == [4] * 6
    third = run_eval(replace(base, ks=(1, 2))).tasks[0]  # new ks: summary only
    assert third.sampled == 0 and third.summary.column("k").to_pylist() == [1, 2]
    with pytest.raises(BenchctlError, match="temperature=0.6 \\(now 1.0\\)"):
        run_eval(replace(base, temperature=1.0))


def test_killed_run_resumes_without_losing_or_duplicating_samples(tiny_model, tmp_path):
    out = tmp_path / "run"
    code = (
        "from benchctl.evaluation import EvalConfig, run_eval; "
        f"run_eval(EvalConfig(model={str(tiny_model)!r}, tasks=('arith',), ks=(1, 4), limit=400, max_tokens=6, "
        f"out={str(out)!r}, chunk_samples=16, resamples=100, progress=False))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list((out / "arith" / "samples").glob("part-*.parquet"))) < 2:
        assert proc.poll() is None, "eval finished or died before it could be killed"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    written = len(list((out / "arith" / "samples").glob("part-*.parquet")))
    assert 2 <= written < 100
    result = run_eval(
        EvalConfig(
            model=str(tiny_model),
            tasks=("arith",),
            ks=(1, 4),
            limit=400,
            max_tokens=6,
            out=str(out),
            chunk_samples=16,
            resamples=100,
            progress=False,
        )
    ).tasks[0]
    assert result.reused >= 8 and result.sampled == 400 - result.reused
    samples = pq.read_table(out / "arith" / "samples", columns=["problem_id", "sample_index"]).to_pylist()
    assert len(samples) == 400 * 4 and len({(r["problem_id"], r["sample_index"]) for r in samples}) == 400 * 4
