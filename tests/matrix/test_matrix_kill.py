"""SIGKILL the matrix in the middle of a cell and run it again: the finished cell is not recomputed (its files
untouched), the killed one resumes from its checkpoint, and the final index equals an uninterrupted run's.
Real training and evaluation on the tiny model: 2 cells x 4 steps of 4 prompts x G=4."""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchctl.results import train_run
from benchctl.results.index import read_index

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MATRIX = """\
models: [tiny]
task: arith
estimators:
  grpo: {}
  ha_dw: {lambda_scale: [1.5]}
group_sizes: [4]
seeds: [3]
train: {steps: 4, prompts_per_step: 4, save_every: 1}
eval: {tasks: [arith], n: 4, k: [1, 4], limit: 8}
"""
FIRST, SECOND = "tiny-grpo-G4-s3", "tiny-ha_dw-lambda_scale=1.5-G4-s3"


def _matrix(path: Path, results: Path) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("benchctl")  # the venv's console script
    return subprocess.Popen(
        [str(exe), "--no-progress", "matrix", "run", str(path), "--results", str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen) -> None:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, (out + err)[-3000:]


def _statuses(results: Path) -> dict[str, str]:
    try:
        return {Path(r["run"]).name: r["status"] for r in read_index(results).to_pylist()}
    except Exception:  # noqa: BLE001 - not written yet
        return {}


def _files(run: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p.relative_to(run)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(run.rglob("*"))
        if p.is_file()
    }


def test_killed_matrix_rerun_keeps_finished_cells_and_ends_with_the_uninterrupted_index(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text(MATRIX)
    killed, clean = tmp_path / "killed", tmp_path / "clean"

    proc = _matrix(spec, killed)
    deadline = time.monotonic() + 600
    # kill once the first cell is done and the second has written a checkpoint (mid-training)
    while not (
        _statuses(killed).get(FIRST) == "done"
        and train_run.latest_checkpoint_step(killed / "runs" / SECOND) is not None
    ):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the matrix never reached the second cell"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _statuses(killed) == {FIRST: "done", SECOND: "running"}  # whole index, never half a table
    finished = _files(killed / "runs" / FIRST)
    killed_at = train_run.latest_checkpoint_step(killed / "runs" / SECOND)

    _finish(_matrix(spec, killed))
    assert _files(killed / "runs" / FIRST) == finished  # not recomputed: same files, same bytes, same mtimes
    second = killed / "runs" / SECOND
    assert pq.read_table(second / "train_metrics.parquet").column("step").to_pylist() == [1, 2, 3, 4]
    assert (second / "eval" / "final" / "summary.parquet").is_file()

    _finish(_matrix(spec, clean))
    assert read_index(killed).equals(read_index(clean))
    assert set(read_index(clean).column("status").to_pylist()) == {"done"}
    # the resumed cell is the uninterrupted one, step for step (the trainer's exact resume)
    for name in (FIRST, SECOND):
        a = train_run.read_rollouts(killed / "runs" / name)
        b = train_run.read_rollouts(clean / "runs" / name)
        assert a.equals(b), f"{name}: rollouts differ (killed at step {killed_at})"
        ea = pq.read_table(killed / "runs" / name / "eval" / "final" / "arith" / "problems.parquet")
        eb = pq.read_table(clean / "runs" / name / "eval" / "final" / "arith" / "problems.parquet")
        assert ea.equals(eb), f"{name}: final evaluation differs"
