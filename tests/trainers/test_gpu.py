"""The GPU path of the same trainer code: policy on CUDA with fp32 master weights computing in bf16 (autocast),
vLLM colocated with sleep/wake around the update, the sync verified on the probe. Runs only where CUDA is present
(no GPU is lent to the CPU CI; tests/trainers/test_gpu_path_on_cpu.py runs the same code under bf16 on CPU)."""

import pytest
import torch

from benchctl.trainers import build_config

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_policy_trains_on_cuda_in_bf16_with_a_sleeping_colocated_engine(tiny_model, tmp_path):
    from benchctl.trainers.loop import train_step
    from benchctl.trainers.session import open_session

    s = open_session(
        build_config(
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
    )
    assert s.device == "cuda" and s.engine.config.sleep_mode
    assert {p.dtype for p in s.model.parameters()} == {torch.float32} and s.compute_dtype == torch.bfloat16
    assert all(p.is_cuda for p in s.model.parameters())
    row = train_step(s, 1)
    assert row["time/sync"] >= 0 and row["rollout/tokens"] > 0
    assert row["sync/probe_gap"] <= s.probe.threshold and row["update/param_change"] > 0
