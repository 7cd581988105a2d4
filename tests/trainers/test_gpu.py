"""The GPU path of the same trainer code: policy on CUDA with fp32 master weights computing in bf16 (autocast),
vLLM colocated with sleep/wake around the update, the sync verified on the probe. Runs only where CUDA is present
(no GPU is lent to the CPU CI; tests/trainers/test_gpu_path_on_cpu.py runs the same code under bf16 on CPU)."""

import pytest
import torch

from benchctl.trainers import build_config

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_policy_trains_on_cuda_in_bf16_with_a_sleeping_colocated_engine(tiny_model, tmp_path):
    from benchctl.trainers.build import build
    from benchctl.trainers.loop import train_step

    cfg = build_config(
        flag_values={
            "prompts_per_step": 4,
            "group_size": 4,
            "steps": 1,
            "device": "cuda",
            "save_every": 0,
            "progress": False,
            "out": str(tmp_path / "run"),
        }
    )
    parts = build(cfg)
    policy, engine = parts.policy, parts.sampler.engine
    assert policy.device == "cuda" and engine.config.sleep_mode
    assert {p.dtype for p in policy.model.parameters()} == {torch.float32} and policy.compute_dtype == torch.bfloat16
    assert all(p.is_cuda for p in policy.model.parameters())
    state, row, _ = train_step(cfg, parts.sampler, policy, parts.loss, parts.estimator, parts.probe, parts.state)
    parts.trackers.close()
    assert state.step == 1 and row["time/sync"] >= 0 and row["rollout/tokens"] > 0
    assert row["sync/probe_gap"] <= parts.probe.threshold and row["update/param_change"] > 0
