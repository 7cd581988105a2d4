"""Why a cell failed: from outside it (running it again may succeed) or in it (it fails the same way every time).

A failure is *outside* the cell [our choice] when its cause, anywhere in the exception's chain (`__cause__`,
`__context__`, a Ray task error's `cause`), is one of:
- the process running it died: Ray's `WorkerCrashedError` / `ActorDiedError`, a process pool whose worker died
  (`BrokenProcessPool`), a child process ended by a signal (`benchctl.errors.KilledError`, `exit_status_cause`);
- memory ran out: Ray's memory monitor (`OutOfMemoryError`), Python's `MemoryError`, torch's `OutOfMemoryError`
  (a CUDA out-of-memory error: on a GPU the cell runs again in a new process, `benchctl.matrix.runner`);
- the GPU failed: torch's `AcceleratorError` (a CUDA error such as an illegal memory access leaves the process's
  CUDA context unusable; a new process may succeed);
- the node or the cluster went away: `NodeDiedError`, `LocalRayletDiedError`, `ObjectLostError` and its kinds
  (`OwnerDiedError`, ...), `RaySystemError`;
- the generation engine would not start, died or was left broken by a failed sleep or wake-up
  (`benchctl.errors.EngineStartError`, vLLM's `EngineDeadError`, `benchctl.engine.cache.EngineUnusableError`).
Everything else is *in* the cell: a `BenchctlError` naming a bad setting, a traceback in benchctl, a refused
resume. Classes are matched by name along each exception's MRO, so neither Ray, torch nor vLLM is imported here.
"""

from __future__ import annotations

import signal

# class name (anywhere in an exception's MRO) -> the cause a progress line and the index show
OUTSIDE_CAUSES = {
    "WorkerCrashedError": "worker died",
    "ActorDiedError": "worker died",
    "BrokenProcessPool": "worker died",
    "KilledError": "killed by a signal",
    "OutOfMemoryError": "out of memory",
    "MemoryError": "out of memory",
    "NodeDiedError": "node lost",
    "LocalRayletDiedError": "node lost",
    "ObjectLostError": "node lost",
    "RaySystemError": "Ray system error",
    "EngineStartError": "engine start-up",
    "EngineDeadError": "engine died",
    "EngineUnusableError": "engine left unusable",
    "AcceleratorError": "GPU error",
}


def _chain(exc: BaseException):
    """`exc` and every exception it was raised from or during, each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__, getattr(e, "cause", None)]


def outside_cause(exc: BaseException) -> str | None:
    """The cause when `exc` came from outside the cell (module docstring), else None (deterministic)."""
    for e in _chain(exc):
        if not isinstance(e, BaseException):
            continue
        for klass in type(e).__mro__:
            if klass.__name__ in OUTSIDE_CAUSES:
                return OUTSIDE_CAUSES[klass.__name__]
    return None


def exit_status_cause(code: int) -> str | None:
    """`killed by SIGKILL` for a child's exit status that says a signal ended it (negative as `subprocess` gives it,
    or 128 + the signal number as a shell gives it, for SIGKILL, SIGTERM, SIGINT and SIGHUP), else None."""
    number = -code if code < 0 else code - 128 if code - 128 in (9, 15, 2, 1) else None
    if number is None:
        return None
    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"
