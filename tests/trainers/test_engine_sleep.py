"""Issue 40, items 1 and 7: the colocated engine sleeps from the advantage to the sync, so OAR's importance scoring
runs beside no awake engine, and it wakes up when the update raises (a CUDA out-of-memory error); an engine whose
wake-up fails is never handed out again in the process.

What only a GPU has is faked: `on_cpu` says False, and the tiny CPU engine's LLM is wrapped so that `sleep` pauses
its real scheduler (vLLM 0.32's `sleep(level=0)`: the pause a level-1 sleep begins with; the CPU has no memory to
offload) and `wake_up` resumes it, each call recorded. A paused scheduler never schedules a request (vLLM's own
behaviour, the hang of item 1): the tests read `is_sleeping()` instead of generating, so the old code fails them
rather than hanging."""

import dataclasses

import pytest
import torch

from benchctl.engine import adapter, cache, trainer_engine
from benchctl.engine.cache import EngineUnusableError
from benchctl.matrix.failure import outside_cause
from benchctl.trainers import build_config, loop
from benchctl.trainers.build import build

pytestmark = pytest.mark.vllm


class PausingLLM:
    """The real LLM as a GPU sleep-mode LLM: sleep pauses its scheduler, wake_up resumes it (module docstring)."""

    def __init__(self, llm, events: list, wake_error: BaseException | None = None):
        self._llm, self.events, self.wake_error = llm, events, wake_error

    def sleep(self, level: int = 1):
        self.events.append(("sleep", level))
        self._llm.sleep(level=0)

    def wake_up(self, tags=None):
        self.events.append(("wake_up",))
        if self.wake_error is not None:
            raise self.wake_error
        return self._llm.wake_up(tags=["scheduling"])

    def __getattr__(self, name):
        return getattr(self._llm, name)


@pytest.fixture
def gpu_step(tiny_model, tmp_path, monkeypatch):
    """(events, run_step): one OAR step on `arith_steps` whose update raises CUDA's out-of-memory error, with the
    engine faked as a sleep-mode GPU engine; afterwards the real scheduler resumes and the cache's state is reset."""
    cfg = build_config(
        flag_values={
            **{"task": "arith_steps", "estimator": "oar_g", "prompts_per_step": 8, "group_size": 8, "steps": 1},
            **{"save_every": 0, "progress": False, "out": str(tmp_path / "run")},
        }
    )
    parts = build(cfg)
    engine, real, events = parts.sampler.engine, parts.sampler.engine.llm, []
    monkeypatch.setattr(cache, "_STATE", {}, raising=False)
    monkeypatch.setattr(adapter, "on_cpu", lambda: False)
    monkeypatch.setattr(engine, "config", dataclasses.replace(engine.config, sleep_mode=True))
    scores = loop.importance_scores

    def recorded_scores(*args, **kwargs):
        events.append(("score", real.llm_engine.is_sleeping()))
        return scores(*args, **kwargs)

    def out_of_memory(*args, **kwargs):
        events.append(("update", real.llm_engine.is_sleeping()))
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(loop, "importance_scores", recorded_scores)
    monkeypatch.setattr(loop, "update", out_of_memory)

    def run_step(wake_error=None):
        monkeypatch.setattr(engine, "llm", PausingLLM(real, events, wake_error))
        p = parts
        return loop.train_step(cfg, p.sampler, p.policy, p.loss, p.estimator, p.probe, p.state)

    yield engine, real, events, run_step
    parts.trackers.close()
    if real.llm_engine.is_sleeping():
        real.wake_up(tags=["scheduling"])  # the other tests of the session share this LLM


def test_an_update_that_runs_out_of_gpu_memory_leaves_the_engine_awake_and_importance_scoring_runs_asleep(gpu_step):
    engine, real, events, run_step = gpu_step
    with pytest.raises(torch.cuda.OutOfMemoryError) as raised:
        run_step()
    assert outside_cause(raised.value) == "out of memory"  # a matrix runs the cell again (in a new process on a GPU)
    # OAR's scoring needs rows with a non-zero advantage: the tiny model on arith_steps gives some at this seed
    assert events == [("sleep", 1), ("score", True), ("update", True), ("wake_up",)]
    assert not real.llm_engine.is_sleeping() and cache.state(engine._key) == "awake"
    groups = engine.generate(["1+1="], adapter.SamplingConfig(n=2, max_tokens=2), progress=False)  # not paused
    assert len(groups[0]) == 2


def test_an_engine_whose_wake_up_fails_is_refused_from_then_on_and_never_handed_out_again(gpu_step, tiny_model):
    engine, real, events, run_step = gpu_step
    with pytest.raises(EngineUnusableError, match="could not wake the vLLM engine for .* up: CUDA error") as raised:
        run_step(wake_error=RuntimeError("CUDA error: out of memory"))
    assert isinstance(raised.value.__cause__.__context__, torch.cuda.OutOfMemoryError)  # the update's, chained
    assert outside_cause(raised.value) == "engine left unusable"  # retried, in a new process on a GPU
    assert cache.state(engine._key) == "broken" and events[-1] == ("wake_up",)
    with pytest.raises(EngineUnusableError, match="start a new process"):
        engine.generate(["1+1="], adapter.SamplingConfig(n=1, max_tokens=2), progress=False)  # refused, no hang
    with pytest.raises(EngineUnusableError, match="start a new process"):
        trainer_engine(str(engine.config.model), "cpu", engine.config.gpu_memory_utilization)  # the cache's LLM
