"""Exact resume: a run killed with SIGKILL (or stopped with Ctrl-C) and continued with `--resume RUN` ends with the
same metrics and rollouts, step for step, as an uninterrupted run with the same seed; and two uninterrupted runs
with one seed are bit-identical.

Every comparison also checks that benchctl's own source did not change between the reference run and the resumed
one: in a shared working tree an edit landing mid-test (e.g. to the update's arithmetic) made the runs started
after it differ from the reference by float rounding, which read as a resume defect.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import benchctl
from benchctl.results import train_run

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ARGS = [
    "--prompts-per-step",
    "4",
    "--group-size",
    "4",
    "--steps",
    "6",
    "--save-every",
    "2",
    "--estimator",
    "ha_dw",
    "--set",
    "lambda_scale=1.5",
    "--lr",
    "1e-3",
    "--no-progress",
]

SAME_SEED_ARGS = ["--prompts-per-step", "32", "--group-size", "4", "--steps", "8", "--seed", "1", "--no-progress"]


def _source_digest() -> str:
    """Digest of benchctl's Python source, the code every `benchctl train` subprocess of this module runs."""
    digest = hashlib.sha256()
    for path in sorted(Path(benchctl.__file__).parent.rglob("*.py")):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _benchctl(*args, common: list[str] = ARGS) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("benchctl")  # the venv's console script
    return subprocess.Popen(
        [str(exe), "train", *common, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(run: Path, proc: subprocess.Popen, pattern: str, timeout: float = 300) -> None:
    """Poll until a path matching `pattern` (a glob relative to `run`) exists."""
    deadline = time.monotonic() + timeout
    while not any(run.glob(pattern)):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{run / pattern} never appeared"
        time.sleep(0.005)


def _finish(proc: subprocess.Popen) -> int:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 130), err[-2000:]
    return proc.returncode


def _comparable(run: Path):
    metrics = pq.read_table(run / "train_metrics.parquet")
    keep = [c for c in metrics.column_names if not c.startswith("time/")]
    nan_safe = [{k: "nan" if v != v else v for k, v in row.items()} for row in metrics.select(keep).to_pylist()]
    return nan_safe, train_run.read_rollouts(run).to_pylist()


def _assert_same(got, want) -> None:
    """Step-for-step equality, naming the first differing step and keys; `want` = (source digest, runs)."""
    source, (wm, wr) = want
    gm, gr = got
    assert _source_digest() == source, "benchctl's source changed during the test (a concurrent edit?): rerun it"
    assert [r["step"] for r in gm] == [r["step"] for r in wm]
    for a, b in zip(gm, wm):
        diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        assert not diff, f"step {a['step']}: {diff}"
    assert gr == wr


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run = tmp_path_factory.mktemp("ref") / "run"
    source = _source_digest()
    assert _finish(_benchctl("--out", str(run))) == 0
    return source, _comparable(run)


@pytest.mark.parametrize(
    "moment",
    [
        # checkpoint 4 written (after step 3's update; step 4 all-skipped), step 5 logged, step 6 running: the
        # resumed step 5 is all-skipped too, and AdamW must step it with zero gradients as the uninterrupted run did
        "rollouts/part-00005.parquet",
        "checkpoints/.step-000004.*.tmp",  # steps 3 and 4 logged, checkpoint 4 half-written
    ],
    ids=["mid-step", "mid-checkpoint"],
)
def test_resume_after_sigkill_is_step_for_step_identical(uninterrupted, tmp_path, moment):
    run = tmp_path / "run"
    proc = _benchctl("--out", str(run))
    _wait_for(run, proc, pattern=moment)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert train_run.latest_checkpoint_step(run) in (2, 4)  # mid-checkpoint: 4 only if the kill came after the commit
    assert _finish(_benchctl("--resume", str(run))) == 0
    metrics, rollouts = _comparable(run)
    assert [r["step"] for r in metrics] == [1, 2, 3, 4, 5, 6]
    _assert_same((metrics, rollouts), uninterrupted)
    assert (run / "model" / "config.json").is_file()


def test_ctrl_c_writes_a_checkpoint_and_the_run_resumes_identically(uninterrupted, tmp_path):
    run = tmp_path / "run"
    proc = _benchctl("--out", str(run))
    _wait_for(run, proc, pattern="rollouts/part-00001.parquet")
    proc.send_signal(signal.SIGINT)
    assert _finish(proc) == 130
    stopped_at = train_run.latest_checkpoint_step(run)
    assert stopped_at is not None and stopped_at < 6
    assert pq.read_table(run / "train_metrics.parquet").num_rows == stopped_at
    assert _finish(_benchctl("--resume", str(run))) == 0
    _assert_same(_comparable(run), uninterrupted)


def test_two_runs_with_one_seed_are_bit_identical(tmp_path):
    """The premise of every test above, at a batch (32 prompts x G=4) where the shared prompt forward's gather
    backward used to make two runs drift apart by float rounding from step 2-3 on (`device.deterministic`)."""
    source, first, second = _source_digest(), tmp_path / "a", tmp_path / "b"
    for run in (first, second):
        assert _finish(_benchctl("--out", str(run), common=SAME_SEED_ARGS)) == 0
    metrics, rollouts = _comparable(second)
    assert len(metrics) == 8
    _assert_same((metrics, rollouts), (source, _comparable(first)))
