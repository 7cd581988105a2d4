"""Same seed, same run: two `benchctl train` processes with one configuration write bit-identical metrics and
rollouts, at a batch size (32 prompts x G=4) where the shared prompt forward's gather backward used to make them
drift apart by float rounding from step 2-3 on (`policy.deterministic`)."""

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from benchctl.results import train_run
from benchctl.trainers.policy import deterministic

ARGS = ["--prompts-per-step", "32", "--group-size", "4", "--steps", "8", "--seed", "1", "--no-progress"]


def _train(out: Path) -> tuple[list[dict], list[dict]]:
    exe = Path(sys.executable).with_name("benchctl")  # the venv's console script
    proc = subprocess.run([str(exe), "train", *ARGS, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = pq.read_table(out / "train_metrics.parquet")
    keep = [c for c in metrics.column_names if not c.startswith("time/")]
    return metrics.select(keep).to_pylist(), train_run.read_rollouts(out).to_pylist()


@pytest.mark.vllm
@pytest.mark.slow
def test_two_runs_with_one_seed_are_bit_identical(tmp_path):
    (first_metrics, first_rollouts), (second_metrics, second_rollouts) = (
        _train(tmp_path / "a"),
        _train(tmp_path / "b"),
    )
    assert len(first_metrics) == len(second_metrics) == 8
    for a, b in zip(first_metrics, second_metrics):
        diff = {k: (a[k], b[k]) for k in a if a[k] != b[k] and a[k] == a[k]}  # NaN == NaN for this purpose
        assert not diff, f"step {a['step']}: {diff}"
    assert first_rollouts == second_rollouts


def test_deterministic_switches_torch_kernels_on_only_inside_and_restores_the_setting():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic(True):
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before
    with deterministic(False):
        assert torch.are_deterministic_algorithms_enabled() == before
