"""What a caller gives the engine and gets back: `EngineConfig` (how to start vLLM), `SamplingConfig` (one
generation call), `Sample` (one completion), the per-prompt seed rule and the model checks made before vLLM starts.

Nothing here imports vLLM or torch: a bad model path or sampling value is a one-line `BenchctlError` at once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from benchctl.errors import BenchctlError, check_range

CPU_DEFAULT_KV_CACHE_GIB = 1.0
DTYPES = ("auto", "bfloat16", "float16", "float32")
LOGPROBS_MODES = ("raw_logprobs", "processed_logprobs")


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling parameters of one generation call (mapped to `vllm.SamplingParams`)."""

    n: int = field(default=1, metadata={"help": "samples per prompt (group size G)"})
    temperature: float = field(default=0.6, metadata={"help": "softmax temperature; 0 = greedy"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling mass in (0, 1]"})
    max_tokens: int = field(default=1024, metadata={"help": "generated tokens per sample (capped by max_model_len)"})
    seed: int = field(default=0, metadata={"help": "base seed; prompt i samples with prompt_seed(seed, i)"})
    logprobs: bool = field(default=False, metadata={"help": "return each sampled token's log-probability"})

    def __post_init__(self) -> None:
        check_range("n", self.n, 1)
        check_range("temperature", self.temperature, 0)
        check_range("top_p", self.top_p, 0, 1, low_open=True)
        check_range("max_tokens", self.max_tokens, 1)
        check_range("seed", self.seed, 0)


@dataclass(frozen=True)
class Sample:
    """One completion."""

    text: str
    num_tokens: int  # generated tokens, stop token included when the model emitted one
    finish_reason: str  # "stop" (EOS / stop string) | "length" (max_tokens or max_model_len reached)
    token_ids: tuple[int, ...] = ()  # the generated token ids (stop token included), for a trainer
    prompt_token_ids: tuple[int, ...] = ()  # the prompt as vLLM tokenised it (one tuple shared by a group)
    logprobs: tuple[float, ...] | None = None  # log-probability of each generated token (SamplingConfig.logprobs)


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """How to start the vLLM engine (built by keyword: `EngineConfig(model=..., seed=...)`)."""

    model: str = field(metadata={"help": "local model folder or hub id"})
    seed: int = field(default=0, metadata={"help": "engine seed (requests carry their own seeds)"})
    max_model_len: int | None = field(default=None, metadata={"help": "context length; None = model config's"})
    dtype: str = field(default="auto", metadata={"help": "auto | float32 | bfloat16 | float16"})
    kv_cache_gib: float | None = field(
        default=None, metadata={"help": f"KV cache size; None = {CPU_DEFAULT_KV_CACHE_GIB} GiB on CPU, vLLM's on GPU"}
    )
    enforce_eager: bool | None = field(default=None, metadata={"help": "no compilation; None = True on CPU"})
    gpu_memory_utilization: float = field(default=0.85, metadata={"help": "GPU memory fraction (GPU only)"})
    sleep_mode: bool = field(default=False, metadata={"help": "GPU: allow sleep()/wake_up() around a colocated update"})
    logprobs_mode: str = field(
        default="raw_logprobs",
        metadata={
            "help": "raw_logprobs (before temperature/top-p) | processed_logprobs (of the sampling distribution)"
        },
    )

    def __post_init__(self) -> None:
        if self.max_model_len is not None:
            check_range("max_model_len", self.max_model_len, 1)
        if self.kv_cache_gib is not None:
            check_range("kv_cache_gib", self.kv_cache_gib, 0, low_open=True)
        check_range("gpu_memory_utilization", self.gpu_memory_utilization, 0, 1, low_open=True)
        if self.dtype not in DTYPES:
            raise BenchctlError(f"dtype={self.dtype!r} is not valid; choose one of: {', '.join(DTYPES)}")
        if self.logprobs_mode not in LOGPROBS_MODES:
            raise BenchctlError(
                f"logprobs_mode={self.logprobs_mode!r} is not valid; choose raw_logprobs or processed_logprobs"
            )


def prompt_seed(seed: int, index: int | str) -> int:
    """Seed of prompt `index` (its position, or a caller's stable key such as a problem id) for base `seed`:
    63-bit blake2b of both, so streams never collide in practice."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def engine_dtype(cfg: EngineConfig) -> str:
    """`cfg.dtype`, where "auto" means the dtype in a local folder's config.json [our choice]: vLLM's own
    "auto" loads a float32 checkpoint as bfloat16 on CPU, and the tiny model is trained and compared in fp32."""
    path = Path(cfg.model).expanduser() / "config.json"
    if cfg.dtype != "auto" or not path.is_file():
        return cfg.dtype
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BenchctlError(f"model config {str(path)!r} is not valid JSON: {exc}") from exc
    dtype = config.get("dtype") or config.get("torch_dtype") or "auto"
    return dtype if dtype in ("float32", "bfloat16", "float16") else "auto"


def check_model(model: str) -> None:
    """BenchctlError unless `model` is a folder with config.json, or does not look like a path (a hub id)."""
    path = Path(model).expanduser()
    if path.exists():
        if not (path.is_dir() and (path / "config.json").is_file()):
            raise BenchctlError(f"model {model!r} is not a model folder (no config.json in it)")
    elif model.startswith(("/", ".", "~")) or model.count("/") > 1 or not model.strip():
        raise BenchctlError(f"model folder {model!r} does not exist (and it is not a hub id like 'org/name')")
