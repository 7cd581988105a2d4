"""Precision: bf16 weights lose a small learning rate's updates, fp32 master weights under bf16
autocast keep them; autocast log-probs stay close to fp32 ones; `update/param_change` is the relative L2 norm
of a step's change of the weights."""

import pytest
import torch

from benchctl.errors import BenchctlError
from benchctl.trainers.batch import pack
from benchctl.trainers.device import compute_context, resolve_compute_dtype
from benchctl.trainers.policy import completion_logits, gather_logprobs
from benchctl.trainers.weights import load_policy, param_change, param_snapshot


def _adamw_steps(weight_dtype: torch.dtype, steps: int = 50, lr: float = 1e-6) -> torch.nn.Linear:
    """1,000 weights of 0.02 (a Linear 1000 -> 1), `steps` AdamW steps at `lr` on a fixed batch, the forward
    under `compute_context(bf16)`."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(1000, 1, bias=False)
    with torch.no_grad():
        layer.weight.fill_(0.02)
    layer.to(weight_dtype)
    return _continue(layer, steps, lr)


def _continue(layer: torch.nn.Linear, steps: int, lr: float = 1e-6) -> torch.nn.Linear:
    opt = torch.optim.AdamW(layer.parameters(), lr=lr, weight_decay=0.0)
    x = torch.randn(16, 1000, generator=torch.Generator().manual_seed(0)).to(layer.weight.dtype)
    for _ in range(steps):
        opt.zero_grad()
        with compute_context(torch.bfloat16, "cpu"):
            loss = layer(x).float().pow(2).mean()
        loss.backward()
        opt.step()
    return layer


def test_bf16_weights_lose_small_updates_that_fp32_master_weights_keep():
    bf16 = _adamw_steps(torch.bfloat16)
    fp32 = _adamw_steps(torch.float32)
    start = torch.tensor(0.02)  # as each dtype stores it
    changed_bf16 = float((bf16.weight != start.to(torch.bfloat16)).float().mean())
    changed_fp32 = float((fp32.weight != start).float().mean())
    assert changed_bf16 == 0.0  # every update below half a bf16 ulp of 0.02 (2^-14 = 6e-5)
    assert changed_fp32 > 0.99
    assert fp32.weight.dtype == torch.float32  # the master weights stay fp32 under autocast
    # about 50 x 1e-6 per weight (Adam's step is ~lr per step for a steady gradient sign)
    assert 1e-5 < float((fp32.weight.detach() - 0.02).abs().mean()) < 1e-4


def test_param_change_is_zero_for_bf16_weights_and_positive_for_fp32_master_weights():
    snapshots = {}
    for dtype in (torch.bfloat16, torch.float32):
        layer = _adamw_steps(dtype, steps=0)
        snap = param_snapshot(layer)
        _continue(layer, steps=10)
        snapshots[dtype] = float(param_change(layer, snap))
    assert snapshots[torch.bfloat16] == 0.0
    assert snapshots[torch.float32] == pytest.approx(10 * 1e-6 / 0.02, rel=0.3)  # ~10 lr-sized steps / |w|


def test_param_change_is_the_relative_l2_norm_of_the_step():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Linear(5, 3))
    before = torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])
    snap = param_snapshot(model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    by_hand = float(((after - before) ** 2).sum().sqrt() / (before**2).sum().sqrt())
    assert float(param_change(model, snap)) == pytest.approx(by_hand, rel=1e-6)
    assert float(param_change(model, param_snapshot(model))) == 0.0


def test_param_change_skips_frozen_parameters_and_a_strided_snapshot_estimates_it():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(200, 100), torch.nn.Linear(100, 50))
    model[1].requires_grad_(False)
    snap, snap8 = param_snapshot(model), param_snapshot(model, stride=8)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)  # frozen ones move too: they must not count
    trainable = [p for p in model.parameters() if p.requires_grad]
    exact = float(param_change(model, snap))
    before = torch.cat([s for s in snap])
    after = torch.cat([p.detach().reshape(-1) for p in trainable])
    assert exact == pytest.approx(float((after - before).norm() / before.norm()), rel=1e-6)
    assert float(param_change(model, snap8, stride=8)) == pytest.approx(exact, rel=0.1)


def test_resolve_dtype_auto_is_bf16_on_cuda_and_fp32_on_cpu():
    assert resolve_compute_dtype("auto", "cuda") == torch.bfloat16
    assert resolve_compute_dtype("auto", "cpu") == torch.float32
    assert resolve_compute_dtype("bfloat16", "cpu") == torch.bfloat16
    assert resolve_compute_dtype("float32", "cuda") == torch.float32
    with pytest.raises(BenchctlError, match="auto, float32, bfloat16"):
        resolve_compute_dtype("fp16", "cpu")


def test_autocast_bf16_log_probs_are_close_to_fp32_on_the_tiny_model(tiny_model):
    model = load_policy(str(tiny_model), "cpu", dtype=torch.float32).eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(5, 40, (int(n),), generator=gen).tolist() for n in (3, 6, 4, 5)]
    completions = [torch.randint(5, 40, (int(n),), generator=gen).tolist() for n in (8, 2, 5, 7)]
    batch = pack(prompts, completions, pad_id=0)
    with torch.no_grad():
        fp32 = gather_logprobs(completion_logits(model, batch, 1.0), batch.tokens) * batch.mask
        with compute_context(torch.bfloat16, "cpu"):
            bf16 = gather_logprobs(completion_logits(model, batch, 1.0), batch.tokens) * batch.mask
    gap = (bf16 - fp32).abs()
    assert float(gap.max()) > 0.0  # autocast did run in bf16
    assert float(gap.max()) < 0.25 and float(gap.sum() / batch.mask.sum()) < 0.02  # bf16: ~3 significant digits
