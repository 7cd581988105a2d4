"""`benchctl matrix run FILE.yaml --executor ray [--address ADDR]`: every cell is one Ray task.

Same skip/resume/retry semantics and the same index as the serial executor, because only the seam differs:
the driver (this process) decides which cells run, calls `on_start` / `on_done` and alone writes
RESULTS/index.parquet; each task runs the very `work(cell)` the serial executor runs (train, then evaluate)
in a Ray worker process, which starts its own vLLM engine. Where the cluster has GPUs each task asks for one
(one cell per GPU side by side); on CPUs, one CPU. RESULTS must be a folder every node sees (a shared file
system) [our choice: no copying of run folders between nodes].

`address` is handed to `ray.init`: None starts a local cluster for this command (stopped afterwards) unless
Ray is already initialised in this process or RAY_ADDRESS names one; "auto" joins the running local cluster.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from benchctl.errors import BenchctlError
from benchctl.matrix.failure import outside_cause
from benchctl.matrix.outcome import CellOutcome


def _outcome_of_failure(cell, exc: BaseException, seconds: float = 0.0):
    """A task that raised instead of returning the cell's outcome: its worker died, memory ran out, the node went
    away (a failure from outside the cell, `benchctl.matrix.failure`), or an error the cell's work did not catch."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    return CellOutcome(cell.name, "failed", f"ray task failed: {first}", seconds, outside=outside_cause(exc))


def _call(work, cell):
    """The Ray task: `work(cell)` in a worker (`work` is picklable: a partial of a module-level function)."""
    return work(cell)


def ray_executor(cells: Sequence, work, on_start, on_done, *, address: str | None = None) -> None:
    """Run every cell as a Ray task, as many at once as the cluster has slots (one GPU each where there are GPUs,
    else one CPU), a new one submitted as each finishes; record each outcome as it arrives."""
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
        task = ray.remote(_call).options(num_gpus=1 if gpus >= 1 else 0, num_cpus=1, max_retries=0)
        slots = max(1, int(gpus if gpus >= 1 else resources.get("CPU", 1)))
        queue, pending = list(cells), {}
        while queue or pending:
            while queue and len(pending) < slots:  # no more in flight than can run: `running` means running
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
