"""A small process pool that bounds the time of EACH item: a worker that overruns is killed and replaced.

`concurrent.futures.ProcessPoolExecutor` cannot kill one stuck task (a timed-out future keeps its worker busy
forever, and a crashed worker breaks the whole executor), so this pool keeps one pipe per worker:
- the parent sends a chunk of jobs to an idle worker (`chunk_size`: shrinking to 1 job as the queue empties);
  the worker answers job by job;
- item k's clock starts when the parent receives item k-1's answer (or sends the chunk), so the bound applies
  per item and is never shorter than the item's real run time;
- past the bound the worker is SIGKILLed, its current item gets status "timeout", the rest of its chunk goes back
  to the queue and a fresh worker is started; a worker that dies (segfault, OOM kill) gives status "crash".
Workers come from the `forkserver` start method with the worker module preloaded, so a replacement costs a fork,
not a fresh interpreter plus the sympy import; the parent may have threads or torch loaded (no plain `fork`).
Each worker caps its address space (`MEMORY_LIMIT_BYTES`) so a runaway big-integer turns into MemoryError.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing as mp
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

MAX_CHUNK = 32  # jobs per message at most [our choice]: pipe round trips stay well under 1% of the work
MEMORY_LIMIT_BYTES = 4 << 30  # per worker [our choice]: sympy needs ~0.3 GiB; a 4 GiB cap leaves room


def resolve(func_path: str) -> Callable[..., Any]:
    """ "package.module:function" -> the function (workers import it; the parent need not)."""
    module, _, name = func_path.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker_main(conn, func_path: str) -> None:
    """Worker loop: receive a chunk [(index, args)], answer (index, ("ok"|"error", value)) per job."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):  # not POSIX, or a lower hard limit: keep what we have
        pass
    func = resolve(func_path)
    while True:
        chunk = conn.recv()
        if chunk is None:
            return
        for index, args in chunk:
            try:
                conn.send((index, ("ok", func(*args))))
            except Exception as exc:  # noqa: BLE001 - any failure of one item is that item's "error"
                conn.send((index, ("error", f"{type(exc).__name__}: {str(exc)[:200]}")))


class _Worker:
    def __init__(self, ctx, func_path: str) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, func_path), daemon=True)
        self.proc.start()
        child.close()
        self.chunk: deque[int] = deque()  # indices in flight, in the order the worker runs them
        self.deadline = float("inf")
        self.dead = False  # pipe broke: replace it before giving it work

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(1.0)
        self.conn.close()


class BoundedPool:
    """`workers` processes running `func(*args)` per job with a per-item wall-clock bound.

    `func_path` is "module:function"; its module and `preload` are imported into the forkserver, so forks start
    warm (only if this pool starts the process-wide forkserver; a server already running keeps its preloads).
    """

    def __init__(self, func_path: str, workers: int, preload: Sequence[str] = ()) -> None:
        self.func, self.n_workers = func_path, workers
        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload([func_path.partition(":")[0], *preload])
        self.workers = [_Worker(self.ctx, func_path) for _ in range(workers)]
        self.lock = threading.Lock()
        self.replaced = 0  # workers killed (timeout) or lost (crash) so far
        self.start_failures = 0  # consecutive workers that died before taking a chunk

    def map(self, jobs: Sequence[tuple], timeout: float) -> list[tuple[str, Any]]:
        """(status, value) per job: ("ok", result) | ("error", message) | ("timeout", None) | ("crash", message)."""
        with self.lock:
            results: list[tuple[str, Any] | None] = [None] * len(jobs)
            pending = deque(range(len(jobs)))
            while pending or any(w.chunk for w in self.workers):
                self._dispatch(jobs, pending, timeout)
                self._collect(results, timeout)
                self._enforce(results, pending)
                if self.start_failures > 3:  # workers cannot start at all: fail the rest, do not spin
                    while pending:
                        results[pending.popleft()] = ("crash", "grading workers fail to start")
            return results  # type: ignore[return-value]

    def _dispatch(self, jobs, pending: deque, timeout: float) -> None:
        for w in self.workers:
            if not w.chunk and pending and not w.dead:
                take = [pending.popleft() for _ in range(chunk_size(len(pending), self.n_workers))]
                w.chunk.extend(take)
                w.deadline = time.monotonic() + timeout
                try:
                    w.conn.send([(i, jobs[i]) for i in take])
                except OSError:  # died before it got the chunk: nobody ran these, requeue them
                    pending.extendleft(reversed(w.chunk))
                    w.chunk.clear()
                    w.dead = True
                    self.start_failures += 1

    def _collect(self, results: list, timeout: float) -> None:
        busy = {w.conn: w for w in self.workers if w.chunk}
        if not busy:
            return
        wait_s = max(0.0, min(w.deadline for w in busy.values()) - time.monotonic())
        for conn in wait(list(busy), timeout=wait_s):
            w = busy[conn]
            try:
                while w.chunk and conn.poll():
                    index, outcome = conn.recv()
                    results[index] = outcome
                    w.chunk.popleft()
                    w.deadline = time.monotonic() + timeout
                    self.start_failures = 0
            except (EOFError, OSError):
                w.proc.join(0.5)
                results[w.chunk.popleft()] = ("crash", f"worker died (exit code {w.proc.exitcode})")
                w.dead = True  # replaced by _enforce; the rest of its chunk is requeued there

    def _enforce(self, results: list, pending: deque) -> None:
        now = time.monotonic()
        for k, w in enumerate(self.workers):
            if w.dead or (w.chunk and w.deadline <= now):
                if not w.dead:  # a real overrun; a crash was already recorded by _collect
                    results[w.chunk.popleft()] = ("timeout", None)
                pending.extendleft(reversed(w.chunk))
                w.kill()
                self.workers[k] = _Worker(self.ctx, self.func)
                self.replaced += 1

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
            w.proc.join(1.0)
            if w.proc.is_alive():
                w.kill()


def chunk_size(pending: int, workers: int) -> int:
    """Jobs in the next chunk: a 1/(2 x workers) share of what is left, between 1 and `MAX_CHUNK` (guided
    scheduling: big chunks while the queue is long, single jobs at the end, so no worker sits idle while another
    still holds queued jobs behind a slow one)."""
    return max(1, min(MAX_CHUNK, pending, -(-pending // (2 * workers))))


_POOLS: dict[tuple[str, int], BoundedPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(func_path: str, workers: int, preload: Sequence[str] = ()) -> BoundedPool:
    """A process-wide pool for (func_path, workers), started on first use and closed at interpreter exit."""
    with _POOLS_LOCK:
        pool = _POOLS.get((func_path, workers))
        if pool is None:
            pool = _POOLS[(func_path, workers)] = BoundedPool(func_path, workers, preload)
        return pool


def default_workers() -> int:
    """CPUs this process may use, capped at 8."""
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:
        return max(1, min(8, os.cpu_count() or 1))


@atexit.register
def close_pools() -> None:
    """Stop every shared pool (at exit; a benchmark calls it so the next run starts with cold worker caches)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()
