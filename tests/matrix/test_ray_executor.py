"""`--executor ray`: a two-cell matrix on a local Ray cluster (started and stopped here) gives the same index,
the same rollouts and the same final evaluations as the in-process serial executor."""

import pyarrow.parquet as pq
import pytest

from benchctl.matrix import parse_matrix, run_matrix
from benchctl.results import train_run
from benchctl.results.index import read_index

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchctl[integrations]')")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SPEC = {
    "models": ["tiny"],
    "task": "arith",
    "estimators": {"grpo": {}, "ha_dw": {"lambda_scale": [1.5]}},
    "group_sizes": [4],
    "seeds": [5],
    # one trainer thread in both executors (a Ray task's OMP_NUM_THREADS is 1; serially it would be every core), so
    # the bitwise comparison does not rest on 1- and 2-thread float sums giving the same update
    "train": {"steps": 2, "prompts_per_step": 4, "save_every": 1, "threads": 1},
    "eval": {"tasks": ["arith"], "n": 4, "k": [1, 4], "limit": 8},
}


def _results(results):
    index = read_index(results).to_pylist()
    runs = sorted((results / "runs").iterdir())
    rollouts = {r.name: train_run.read_rollouts(r).to_pylist() for r in runs}
    finals = {r.name: pq.read_table(train_run.eval_dir(r) / "summary.parquet").to_pylist() for r in runs}
    return index, rollouts, finals


def test_ray_executor_gives_the_serial_executors_index_and_results(tmp_path):
    spec = parse_matrix(SPEC)
    serial = run_matrix(spec, tmp_path / "serial")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_matrix(spec, tmp_path / "ray", executor="ray")
    finally:
        ray.shutdown()
    assert [o.status for o in on_ray.outcomes] == [o.status for o in serial.outcomes] == ["done", "done"]
    assert _results(tmp_path / "ray") == _results(tmp_path / "serial")


def test_unknown_executor_is_a_one_line_error(tmp_path):
    from benchctl.errors import BenchctlError

    with pytest.raises(BenchctlError, match="unknown executor 'slurm'; choose one of: serial, ray"):
        run_matrix(parse_matrix(SPEC), tmp_path, executor="slurm")


def _most_side_by_side(cpus: int, cell_gib: float) -> tuple[int, list]:
    """The most cells running at once when five cells that finish at once run on a local `cpus`-CPU cluster."""
    import functools

    from benchctl.matrix.outcome import CellOutcome
    from benchctl.matrix.ray_executor import ray_executor

    done = functools.partial(CellOutcome, status="done")  # a cell's work that finishes at once; workers import it
    events = []
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    try:
        ray_executor(
            ["a", "b", "c", "d", "e"],
            done,
            lambda cell: events.append(("start", cell)),
            lambda cell, outcome: events.append(("done", cell, outcome.status)),
            cell_gib=cell_gib,
        )
    finally:
        ray.shutdown()
    running, most = 0, 0
    for event in events:
        running += 1 if event[0] == "start" else -1
        most = max(most, running)
    assert running == 0
    return most, events


def test_ray_executor_submits_no_more_cells_than_the_cluster_has_cpus_so_running_means_running():
    most, events = _most_side_by_side(cpus=2, cell_gib=0.001)  # memory for hundreds: the CPUs bound it
    assert most == 2
    assert sorted(e[1] for e in events if e[0] == "done") == ["a", "b", "c", "d", "e"]
    assert {e[2] for e in events if e[0] == "done"} == {"done"}


def test_cells_that_fit_is_one_cell_per_2_5_gib_of_available_memory_above_2_gib_of_headroom():
    from benchctl.matrix.ray_executor import CPU_CELL_GIB, HEADROOM_GIB, cells_that_fit

    assert (CPU_CELL_GIB, HEADROOM_GIB) == (2.5, 2.0)  # the documented rule
    assert [cells_that_fit(gib) for gib in (1.0, 2.0, 4.4, 4.5, 6.9, 7.0, 9.5, 22.0)] == [0, 0, 0, 1, 1, 2, 3, 8]


def test_ray_executor_starts_no_more_cpu_cells_than_the_available_memory_holds():
    from benchctl.matrix.ray_executor import HEADROOM_GIB, available_gib

    room = available_gib() - HEADROOM_GIB
    if room < 1.0:
        pytest.skip(f"{available_gib():.1f} GiB available: too little to size a cell by")
    most, events = _most_side_by_side(cpus=2, cell_gib=room / 1.5)  # memory for one cell, CPUs for two
    assert most == 1
    assert sorted(e[1] for e in events if e[0] == "done") == ["a", "b", "c", "d", "e"]
