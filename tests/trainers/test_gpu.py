"""The GPU path of the same trainer code: policy on CUDA in bf16, vLLM colocated with sleep/wake around the
update. Runs only where CUDA is present (no GPU is lent to the CPU CI)."""

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
    assert {p.dtype for p in s.model.parameters()} == {torch.bfloat16}
    assert all(p.is_cuda for p in s.model.parameters())
    row = train_step(s, 1)
    assert row["time/sync"] >= 0 and row["rollout/tokens"] > 0
