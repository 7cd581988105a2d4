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
many as its available memory holds, each counted at its measured footprint (`cell_footprint`), above `HEADROOM_GIB`
(2 GiB) left for the driver, Ray and everything else (`may_start`): a cell starts beside running ones when their
footprints and its own together fit the memory available when the run began less the headroom (a cell just
started has not taken its memory yet), and the memory available then still holds it above the headroom, else it
waits for a running cell to end, so a memory spike elsewhere delays cells rather than getting them killed. The
first cell always starts (as the serial executor would run it), never more than the CPUs run at once, and a cell of
a model not measured runs alone (nothing beside it).

Footprints. Tiny models: a Ray worker running one cell peaked at 1.9-2.0 GiB resident (tiny on arith at 32 prompts
x G=8, tiny-warm on arith_mix at 64 x 8, the 1 GiB KV cache included), plus a quarter: 2.5 GiB (`CPU_CELL_GIB`;
`cells_that_fit`: 4.5 GiB available runs one tiny cell at a time, 7 GiB two, 9.5 GiB three). smollm2-135m: a
`benchctl train` cell of 8 prompts x G=8, max_tokens 64 (the real-model matrix's rollout settings; 2 steps, the
evaluations and a checkpoint included) peaked at 10.9 GiB resident (docs/real-model.md, "Cheaper cells"). About
5 GiB of it is held whatever the batch (3.3 GiB with the engine and the policy before the first update, plus the
fp32 gradient and AdamW's moments, 1.5 GiB); the rest is the update's full-vocabulary log-probs of every row at
once, taken to grow linearly with P x G x max_tokens [our choice, from this one measurement]; plus a tenth: 12.0 GiB
at those settings, so two such cells need 26 GiB available (on a 24 GiB machine they run one at a time), while two
of 4 prompts x G=8 x 64 tokens (8.7 GiB each) run side by side where 19.5 GiB is.
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
from benchctl.models.smollm2 import NAME as SMOLLM2

CPU_CELL_GIB = 2.5  # memory one cell takes on CPU (its worker, engine and trainer), measured: see the docstring
HEADROOM_GIB = 2.0  # left available beside the cells: the driver, Ray's own processes, the rest of the machine
MODEL_CELL_GIB = {"tiny": CPU_CELL_GIB, "tiny-warm": CPU_CELL_GIB}  # models whose cell's footprint is one figure
# smollm2-135m, measured (docstring): what a cell holds whatever its batch, and what its update adds per rollout slot
SMOLLM2_FIXED_GIB = 5.0  # engine (weights, 1 GiB KV cache), fp32 policy, its gradient and AdamW's two moments
SMOLLM2_SLOT_GIB = 5.9 / 4096  # the update's and log-probs' peak above it, per slot of P x G x max_tokens
FOOTPRINT_MARGIN = 1.1  # [our choice] one measurement: a tenth on top, and the live check of `may_start` beside it


def _outcome_of_failure(cell, exc: BaseException, seconds: float = 0.0):
    """A task that raised instead of returning the cell's outcome: its worker died, memory ran out, the node went
    away (a failure from outside the cell, `benchctl.matrix.failure`), or an error the cell's work did not catch."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    return CellOutcome(cell.name, "failed", f"ray task failed: {first}", seconds, outside=outside_cause(exc))


def may_start(cell: float | None, running: Sequence[float | None], budget: float, available: float) -> bool:
    """Whether a CPU cell of footprint `cell` GiB (None: not measured) may start beside running cells of footprints
    `running`: the first always starts (as the serial executor would run it); an unmeasured cell runs alone, and
    nothing starts beside one; otherwise the footprints together stay within `budget` (the memory available when the
    run began, less the headroom: a cell just started has not taken its memory yet) and the memory available now
    still holds the new one above the headroom (`cells_that_fit`: a spike elsewhere delays it)."""
    if not running:
        return True
    if cell is None or any(gib is None for gib in running):
        return False
    return sum(running) + cell <= budget + 1e-9 and cells_that_fit(available, cell) >= 1


def cell_footprint(cell) -> float | None:
    """GiB one CPU cell takes, None for a model not measured: the tiny models' one figure (`MODEL_CELL_GIB`);
    smollm2-135m's fixed part plus its update's peak per rollout slot times the cell's P x G x max_tokens (the
    full-vocabulary log-probs of every row at once: on CPU the update runs as one batch), with `FOOTPRINT_MARGIN`.
    A `micro_batch_tokens` that bounds the update is not counted (the estimate stays an upper bound)."""
    model = getattr(cell, "model", None)
    if model != SMOLLM2:
        return MODEL_CELL_GIB.get(model)
    return FOOTPRINT_MARGIN * (SMOLLM2_FIXED_GIB + SMOLLM2_SLOT_GIB * rollout_slots(cell))


def rollout_slots(cell) -> int:
    """P x G x max_tokens of `cell`: its prompts per step, group size and new-token limit (the task's default when
    the cell sets none: its declared `max_new_tokens`, else the trainer's 1024)."""
    from benchctl.tasks import task_class
    from benchctl.trainers.config import TrainConfig

    settings = dict(cell.train_settings)
    prompts = settings.get("prompts_per_step") or TrainConfig.__dataclass_fields__["prompts_per_step"].default
    max_tokens = settings.get("max_tokens") or getattr(task_class(cell.task), "max_new_tokens", None) or 1024
    return int(prompts) * int(cell.group_size) * int(max_tokens)


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
    cells: Sequence, work, on_start, on_done, *, address: str | None = None, cell_gib: float | None = None
) -> None:
    """Run every cell as a Ray task, as many at once as the cluster has slots (one GPU each where there are GPUs,
    else one CPU and, on a one-node CPU cluster, its model's footprint of memory, `cell_gib` for every cell where
    given: `may_start`), a new one submitted, in order, as each finishes; record each outcome as it arrives."""
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
        footprint = cell_footprint if cell_gib is None else (lambda cell: cell_gib)
        budget = available_gib() - HEADROOM_GIB
        queue, pending = list(cells), {}
        while queue or pending:
            # no more in flight than can run (`running` means running) nor than memory holds
            while queue and len(pending) < slots:
                running = [footprint(c) for c, _ in pending.values()]
                if by_memory and not may_start(footprint(queue[0]), running, budget, available_gib()):
                    break
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
