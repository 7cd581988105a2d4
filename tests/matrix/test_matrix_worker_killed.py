"""SIGKILL the Ray worker training a cell once it has written a checkpoint: the matrix runs the cell again from
that checkpoint (a failure from outside the cell), and the cell ends with the rollouts and the final evaluation of
an uninterrupted run, bit for bit. Real training and evaluation on the tiny model (4 steps of 4 prompts x G=4) on a
local one-CPU Ray cluster started and stopped here."""

import os
import signal
import threading
import time

import pyarrow.parquet as pq
import pytest

from benchctl.errors import BenchctlError
from benchctl.matrix import parse_matrix, run_matrix
from benchctl.matrix.render import progress_printer
from benchctl.results import train_run
from benchctl.results.index import read_index

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchctl[integrations]')")
psutil = pytest.importorskip("psutil")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SPEC = {
    "models": ["tiny"],
    "task": "arith",
    "estimators": {"grpo": {}},
    "group_sizes": [4],
    "seeds": [7],
    "train": {"steps": 4, "prompts_per_step": 4, "save_every": 1, "threads": 1},
    "eval": {"tasks": ["arith"], "n": 4, "k": [1, 4], "limit": 8},
}
CELL = "tiny-grpo-G4-s7"


def _cell_workers() -> list:
    """This test's Ray worker processes running a cell (`ray::_call`): descendants of this process only."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "ray::_call" in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _kill_after_first_checkpoint(run, killed_at: list, stop: threading.Event) -> None:
    """SIGKILL the worker running the cell once RUN/checkpoints/latest names a step; record that step."""
    while not stop.is_set():
        try:
            step = train_run.latest_checkpoint_step(run)
        except BenchctlError:
            step = None
        workers = _cell_workers() if step is not None else []
        if workers:
            for worker in workers:
                os.kill(worker.pid, signal.SIGKILL)
            killed_at.append(step)
            return
        time.sleep(0.05)


def _cell_results(results):
    run = results / "runs" / CELL
    return (
        train_run.read_rollouts(run),
        pq.read_table(run / "eval" / "final" / "arith" / "problems.parquet"),
        pq.read_table(run / "train_metrics.parquet").column("step").to_pylist(),
    )


def test_a_cell_whose_worker_is_sigkilled_mid_run_is_retried_and_ends_bit_identical_to_an_uninterrupted_run(
    tmp_path, capsys
):
    spec = parse_matrix(SPEC)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        clean = run_matrix(spec, tmp_path / "clean", executor="ray")
        killed_at, stop = [], threading.Event()
        killer = threading.Thread(
            target=_kill_after_first_checkpoint, args=(tmp_path / "killed" / "runs" / CELL, killed_at, stop)
        )
        killer.start()
        try:
            killed = run_matrix(
                spec, tmp_path / "killed", executor="ray", on_event=progress_printer(1, retries=2), retries=2
            )
        finally:
            stop.set()
            killer.join()
    finally:
        ray.shutdown()
    out = capsys.readouterr().out
    print(out)  # the progress lines, for a failing run's log
    assert [o.status for o in clean.outcomes] == ["done"] and clean.outcomes[0].attempts == 1
    assert killed_at and killed_at[0] < 4, "the worker was not killed mid-training"
    assert [(o.status, o.attempts) for o in killed.outcomes] == [("done", 2)]
    assert "outside the cell (worker died), retry 1 of 2 follows from its checkpoint" in out
    assert f"{CELL}: retry 1 of 2, from its checkpoint ..." in out
    assert read_index(tmp_path / "killed").equals(read_index(tmp_path / "clean"))
    rollouts, problems, steps = _cell_results(tmp_path / "killed")
    clean_rollouts, clean_problems, clean_steps = _cell_results(tmp_path / "clean")
    assert steps == clean_steps == [1, 2, 3, 4]
    assert rollouts.equals(clean_rollouts), f"rollouts differ after the kill at step {killed_at[0]}"
    assert problems.equals(clean_problems), "the final evaluation differs"
