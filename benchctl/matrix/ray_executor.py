"""`benchctl matrix run FILE.yaml --executor ray [--address ADDR]`: every cell is one Ray task.

Same skip/resume/retry semantics and the same index as the serial executor, because only the seam differs:
the driver (this process) decides which cells run, calls `on_start` / `on_done` and alone writes
RESULTS/index.parquet; each task runs the very `work(cell)` the serial executor runs (train, then evaluate)
in a Ray worker process, which starts its own vLLM engine. Where the cluster has GPUs each task asks for one
(one cell per GPU side by side); on CPUs, one CPU. RESULTS must be a folder every node sees (a shared file
system) [our choice: no copying of run folders between nodes].

`address` is handed to `ray.init`: None starts a local cluster for this command (stopped afterwards) unless
Ray is already initialised in this process or RAY_ADDRESS names one; "auto" joins the running local cluster.

Memory on CPU [our choice]: where the cluster is this one machine without GPUs, cells run side by side only as
many as its available memory holds: one per `CPU_CELL_GIB` (2.5 GiB) above `HEADROOM_GIB` (2 GiB) left for the
driver, Ray and everything else (`cells_that_fit`): 4.5 GiB available runs one cell at a time, 7 GiB two, 9.5 GiB
three, never more than the CPUs. The count is taken at the start, and before each further cell starts beside
running ones the memory available then must still hold it, else it waits for a running cell to end, so a
memory spike elsewhere delays cells rather than getting them killed; the first cell always starts (as the serial
executor would run it). 2.5 GiB: a Ray worker running one cell of the tiny models peaked at 1.9-2.0 GiB resident
(tiny on arith at 32 prompts x G=8, tiny-warm on arith_mix at 64 x 8, the 1 GiB KV cache included), plus a
quarter; a larger model needs more than this and is not estimated [limit].
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.matrix.failure import outside_cause
from benchctl.matrix.outcome import CellOutcome

CPU_CELL_GIB = 2.5  # memory one cell takes on CPU (its worker, engine and trainer), measured: see the docstring
HEADROOM_GIB = 2.0  # left available beside the cells: the driver, Ray's own processes, the rest of the machine


def _outcome_of_failure(cell, exc: BaseException, seconds: float = 0.0):
    """A task that raised instead of returning the cell's outcome: its worker died, memory ran out, the node went
    away (a failure from outside the cell, `benchctl.matrix.failure`), or an error the cell's work did not catch."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    return CellOutcome(cell.name, "failed", f"ray task failed: {first}", seconds, outside=outside_cause(exc))


def _memory_allows(running: int, cell_gib: float) -> bool:
    """Another CPU cell may start beside `running` ones when the memory available now holds it above the headroom
    (`cells_that_fit`); the first always starts, as the serial executor would run it."""
    return running == 0 or cells_that_fit(available_gib(), cell_gib) >= 1


def _call(work, cell):
    """The Ray task: `work(cell)` in a worker (`work` is picklable: a partial of a module-level function)."""
    return work(cell)


def cell_task(ray, gpu: bool):
    """The Ray remote function running one cell: one GPU and one worker process per call where there are GPUs
    (`max_calls=1`), one CPU and a reused worker elsewhere [our choice]. Ray 2.60 makes a function declared with
    GPUs non-reusable only when `num_gpus` is given to `ray.remote` itself (`RemoteFunction.__init__` sets
    `max_calls=1` then); `.options(num_gpus=1)` cannot set `max_calls`, so a worker reused for the next GPU cell
    kept the previous cell's vLLM engine, its CuMemAllocator and its GPU memory (issue 40). On CPUs a reused
    worker keeps its engine on purpose: the next cell of the same model does not start vLLM again."""
    if gpu:
        return ray.remote(num_gpus=1, num_cpus=1, max_calls=1, max_retries=0)(_call)
    return ray.remote(num_gpus=0, num_cpus=1, max_retries=0)(_call)


def cells_that_fit(available: float, cell_gib: float = CPU_CELL_GIB, headroom_gib: float = HEADROOM_GIB) -> int:
    """How many CPU cells the memory available now (GiB) holds: one per `cell_gib` above `headroom_gib`."""
    return max(0, math.floor((available - headroom_gib) / cell_gib))


def available_gib() -> float:
    """This machine's available memory in GiB (MemAvailable: free plus what the kernel can reclaim)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20  # kB
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30


def ray_executor(
    cells: Sequence, work, on_start, on_done, *, address: str | None = None, cell_gib: float = CPU_CELL_GIB
) -> None:
    """Run every cell as a Ray task, as many at once as the cluster has slots (one GPU each where there are GPUs,
    else one CPU and, on a one-node CPU cluster, `cell_gib` of memory: `_memory_allows`), a new one submitted as
    each finishes; record each outcome as it arrives."""
    try:
        import ray
    except ImportError:
        raise BenchctlError(
            "--executor ray needs Ray: pip install 'benchctl[integrations]' (or pip install ray)"
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        resources = ray.cluster_resources()
        gpus = resources.get("GPU", 0)
        task = cell_task(ray, gpus >= 1)
        slots = max(1, int(gpus if gpus >= 1 else resources.get("CPU", 1)))
        by_memory = gpus < 1 and len(ray.nodes()) == 1  # this machine is the cluster: its memory is the cells'
        slots = min(slots, max(1, cells_that_fit(available_gib(), cell_gib))) if by_memory else slots
        queue, pending = list(cells), {}
        while queue or pending:
            # no more in flight than can run (`running` means running) nor than memory holds now
            while queue and len(pending) < slots and (not by_memory or _memory_allows(len(pending), cell_gib)):
                cell = queue.pop(0)
                on_start(cell)
                pending[task.remote(work, cell)] = (cell, time.perf_counter())
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            cell, submitted = pending.pop(ready)
            try:
                outcome = ray.get(ready)
            except Exception as exc:  # noqa: BLE001 - a worker that died: the cell failed, the others go on
                outcome = _outcome_of_failure(cell, exc, time.perf_counter() - submitted)
            on_done(cell, outcome)
    finally:
        if started_here:
            ray.shutdown()
