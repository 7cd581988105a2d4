"""Issue 40, items 1, 3 and 4, in the matrix executors: a cell that trains on a GPU runs in a process of its own,
so no vLLM engine (asleep, broken, or holding vLLM's one CuMemAllocator) and no GPU memory passes from a cell to the
next or to its own retry. The serial executor spawns a process per GPU cell (CUDA faked present in the driver); the
Ray executor asks Ray for a worker per GPU cell (`max_calls=1`; Ray's logical GPUs: `ray.init(num_gpus=2)`). The
cells' work is a stand-in that returns its process id (the seam the executors take), so these run in seconds."""

import os
from pathlib import Path

import pytest
import torch

from benchctl.matrix import parse_matrix, run_matrix, runner
from benchctl.matrix.outcome import CellOutcome

SPEC = {
    "estimators": {"grpo": {}, "dr_grpo": {}},
    "group_sizes": [4],
    "seeds": [0],
    "train": {"steps": 2},
    "eval": {"tasks": ["arith"], "n": 2, "k": [1]},
}


RUN_CELL = runner.run_cell  # the real one (a test replaces the module's)


def pid_of(cell) -> CellOutcome:
    """A cell's work that returns the id of the process it ran in (the reason field carries it)."""
    return CellOutcome(getattr(cell, "name", str(cell)), "done", str(os.getpid()))


def _oom(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def run_cell_oom_once(cell, results, report_to=None) -> CellOutcome:
    """`run_matrix`'s work: the real `run_cell`, whose training runs out of GPU memory on the cell's first run;
    every run appends its process id to RESULTS/<cell>.pids."""
    pids = Path(results) / f"{cell.name}.pids"
    first = not pids.exists()
    with pids.open("a") as f:
        f.write(f"{os.getpid()}\n")
    if first:
        runner.train_cell = _oom  # in this process only: a new one runs the retry
        return RUN_CELL(cell, results, report_to)
    return CellOutcome(cell.name, "done")


def _serial(cells) -> list[CellOutcome]:
    done = []
    runner.serial_executor(cells, pid_of, lambda cell: None, lambda cell, outcome: done.append(outcome))
    return done


@pytest.mark.slow  # a process started per cell (5-10 s each on the loaded 2-core machine)
def test_the_serial_executor_runs_each_gpu_cell_in_a_new_process(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # device auto -> cuda in the driver
    cells = parse_matrix(SPEC).cells
    pids = [int(o.reason) for o in _serial(cells)]
    assert len(set(pids)) == len(cells) == 2 and os.getpid() not in pids


def test_the_serial_executor_runs_cpu_cells_in_its_own_process_sharing_the_engine(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cpu = parse_matrix({**SPEC, "train": {"steps": 2, "device": "cpu"}}).cells  # a GPU present, the cells on CPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    auto = parse_matrix(SPEC).cells
    assert [int(o.reason) for o in _serial([*cpu, *auto])] == [os.getpid()] * 4


@pytest.mark.slow  # a process started per cell (5-10 s each on the loaded 2-core machine)
def test_a_gpu_cell_that_ran_out_of_memory_is_retried_in_a_new_process(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(runner, "run_cell", run_cell_oom_once)
    monkeypatch.setattr(runner, "train_cell", runner.train_cell)  # restored, were the work to run in this process
    monkeypatch.setattr(runner, "check_cells", lambda cells: None)  # the trainer's refusals want a real device
    spec = parse_matrix({**SPEC, "estimators": {"grpo": {}}})
    events = []
    outcome = run_matrix(spec, tmp_path, on_event=lambda kind, cell, o: events.append((kind, o and o.outside)))
    assert events == [("start", None), ("again", "out of memory"), ("retry", "out of memory"), ("done", None)]
    assert [(o.status, o.attempts) for o in outcome.outcomes] == [("done", 2)]
    (pids,) = [[int(x) for x in p.read_text().split()] for p in tmp_path.glob("*.pids")]
    assert len(set(pids)) == 2 and os.getpid() not in pids


@pytest.mark.slow  # a process started per cell (5-10 s each on the loaded 2-core machine)
def test_the_ray_executor_runs_each_gpu_cell_in_a_new_worker_process():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchctl[integrations]')")
    from benchctl.matrix.ray_executor import ray_executor

    def work(cell):  # defined here: Ray ships it by value to workers that cannot import this test module
        return CellOutcome(cell, "done", str(os.getpid()))

    done = []
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)  # two logical GPUs
    try:
        ray_executor(["a", "b", "c", "d"], work, lambda cell: None, lambda cell, o: done.append(o))
    finally:
        ray.shutdown()
    assert sorted(o.name for o in done) == ["a", "b", "c", "d"] and {o.status for o in done} == {"done"}
    assert len({o.reason for o in done}) == 4  # four cells, four worker processes


def test_the_ray_executor_declares_gpu_cells_non_reusable_and_keeps_cpu_workers():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchctl[integrations]')")
    from benchctl.matrix.ray_executor import cell_task

    assert cell_task(ray, gpu=True)._max_calls == 1 and cell_task(ray, gpu=False)._max_calls == 0


def test_gpu_failures_that_a_new_process_may_cure_are_from_outside_the_cell():
    from benchctl.engine.cache import EngineUnusableError
    from benchctl.matrix.failure import outside_cause

    assert outside_cause(torch.cuda.OutOfMemoryError("CUDA out of memory")) == "out of memory"
    assert outside_cause(torch.AcceleratorError("CUDA error: an illegal memory access was encountered")) == "GPU error"
    assert outside_cause(EngineUnusableError("could not wake the vLLM engine up")) == "engine left unusable"
