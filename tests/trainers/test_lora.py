"""LoRA policies (`--lora-rank`, benchctl.trainers.weights): adapters on a frozen base, merged for the engine.

At init (B = 0) the adapted model is the base, and with W' = W + s B A, dL/dB = s (dL/dW') A^T and dL/dA = s B^T
(dL/dW') = 0: the adapters' gradient is the full model's gradient restricted to the span the adapters move in.
The engine's weights are W + s (B @ A) exactly (peft's own merge), under the base's names, without touching the
trainer's model; a checkpoint's adapters and optimizer state resume bit for bit.
"""

from __future__ import annotations

import copy

import pytest
import torch

from benchctl.trainers.batch import pack
from benchctl.trainers.policy import forward_stats
from benchctl.trainers.weights import LoraSettings, engine_state_dict, load_trainable, merged_state_dict

LORA = LoraSettings(rank=2, alpha=8.0, targets="all-linear")


def _batch(model, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    prompts = [torch.randint(2, vocab, (5,), generator=g).tolist() for _ in range(3)]
    completions = [torch.randint(2, vocab, (n,), generator=g).tolist() for n in (4, 6, 3)]
    return pack(prompts, completions, 0, "cpu")


def _loss(model, batch) -> torch.Tensor:
    weights = torch.linspace(-1.0, 1.0, batch.mask.numel()).reshape(batch.mask.shape)  # (N, T) fixed advantages
    return -(forward_stats(model, batch, 1.0).logprobs * weights * batch.mask).sum()


def _lora_layers(model):
    from peft.tuners.lora import LoraLayer

    return [(name, m) for name, m in model.get_base_model().named_modules() if isinstance(m, LoraLayer)]


def _randomise_b(model, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _name, layer in _lora_layers(model):
            b = layer.lora_B["default"].weight
            b.copy_(torch.randn(b.shape, generator=g) * 0.05)


def test_adapter_gradient_equals_full_gradient_restricted_at_init(tiny_model):
    full = load_trainable(str(tiny_model), None, "cpu", None)
    lora = load_trainable(str(tiny_model), None, "cpu", LORA)
    batch = _batch(full)
    _loss(full, batch).backward()
    _loss(lora, batch).backward()
    layers = _lora_layers(lora)
    assert len(layers) == 4 * 7  # q, k, v, o, gate, up, down of each of the 4 layers; not the LM head
    full_params = dict(full.named_parameters())
    for name, layer in layers:
        grad_w = full_params[f"{name}.weight"].grad  # (d_out, d_in)
        a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight  # (r, d_in), (d_out, r)
        scale = layer.scaling["default"]
        assert scale == LORA.alpha / LORA.rank
        torch.testing.assert_close(b.grad, scale * grad_w @ a.T, rtol=1e-4, atol=1e-6)
        assert torch.count_nonzero(a.grad) == 0  # s B^T dL/dW' with B = 0
    frozen = [n for n, p in lora.named_parameters() if not p.requires_grad]
    assert frozen and all(p.grad is None for n, p in lora.named_parameters() if n in frozen)


def test_merged_weights_equal_base_plus_scaled_product_and_leave_the_model_untouched(tiny_model):
    lora = load_trainable(str(tiny_model), None, "cpu", LORA)
    _randomise_b(lora)
    before = {n: t.clone() for n, t in lora.state_dict().items()}
    merged = engine_state_dict(lora)
    base_names = set(load_trainable(str(tiny_model), None, "cpu", None).state_dict())
    assert set(merged) == base_names  # the HF checkpoint's names, no lora_ or base_layer entries
    for name, layer in _lora_layers(lora):
        a, b, w = layer.lora_A["default"].weight, layer.lora_B["default"].weight, layer.base_layer.weight
        assert torch.equal(merged[f"{name}.weight"], w + (b @ a) * (LORA.alpha / LORA.rank))
    reference = copy.deepcopy(lora).merge_and_unload().state_dict()  # peft's own in-place merge, on a copy
    assert all(torch.equal(merged[n], reference[n]) for n in base_names)
    assert all(torch.equal(before[n], t) for n, t in lora.state_dict().items())  # nothing merged in place
    assert not any(torch.equal(merged[f"{n}.weight"], m.base_layer.weight) for n, m in _lora_layers(lora))


def test_engine_weights_compute_what_the_adapted_policy_computes(tiny_model):
    lora = load_trainable(str(tiny_model), None, "cpu", LORA)
    _randomise_b(lora)
    plain = load_trainable(str(tiny_model), None, "cpu", None)
    plain.load_state_dict(merged_state_dict(lora))
    batch = _batch(plain, seed=3)
    with torch.no_grad():
        torch.testing.assert_close(forward_stats(plain, batch, 1.0).logprobs, forward_stats(lora, batch, 1.0).logprobs)


def _policy(tiny_model, tmp_path, lora_rank: int, weights=None):
    from benchctl.trainers.build import build_policy
    from benchctl.trainers.config import build_config
    from benchctl.trainers.plan import resolve

    flags = {"model": str(tiny_model), "lora_rank": lora_rank, "lr": 1e-2, "out": str(tmp_path / "run")}
    return build_policy(resolve(build_config(flag_values=flags)), str(tiny_model), weights, "cpu")


def _step(policy, batch) -> None:
    policy.optimizer.zero_grad(set_to_none=False)
    _loss(policy.model, batch).backward()
    policy.optimizer.step()
    policy.scheduler.step()


def test_lora_resume_restores_adapters_and_optimizer_exactly(tiny_model, tmp_path):
    from benchctl.trainers import checkpoint
    from benchctl.trainers.run_folder import TrainState

    class NoState:
        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            assert state == {}

    policy = _policy(tiny_model, tmp_path, 1)
    assert {n for n, p in policy.model.named_parameters() if p.requires_grad} == {
        n for n in dict(policy.model.named_parameters()) if ".lora_" in n
    }
    batch = _batch(policy.model)
    _step(policy, batch)
    (tmp_path / "run").mkdir()
    saved = checkpoint.save(
        tmp_path / "run",
        TrainState(step=1),
        model=policy.model,
        source=str(tiny_model),
        optimizer=policy.optimizer,
        scheduler=policy.scheduler,
        estimator=NoState(),
    )
    resumed = _policy(tiny_model, tmp_path, 1, weights=saved / "model")
    checkpoint.load(saved, optimizer=resumed.optimizer, scheduler=resumed.scheduler, estimator=NoState())
    for policy_ in (policy, resumed):
        _step(policy_, batch)
    after, again = policy.model.state_dict(), resumed.model.state_dict()
    assert after.keys() == again.keys() and all(torch.equal(after[n], again[n]) for n in after)
    merged_on_disk = load_trainable(str(saved / "model"), None, "cpu", None).state_dict()
    assert all(
        torch.equal(t, engine_state_dict(_reload_first(tiny_model, saved))[n]) for n, t in merged_on_disk.items()
    )


def _reload_first(tiny_model, saved):
    return load_trainable(str(tiny_model), saved / "model", "cpu", LoraSettings(1, 32.0, "all-linear"))


def test_lora_rank_with_the_verl_launch_is_refused_in_one_line():
    from benchctl.errors import BenchctlError
    from benchctl.trainers.config import build_config
    from benchctl.trainers.plan import resolve

    with pytest.raises(BenchctlError, match="--lora-rank 1 needs --engine native"):
        resolve(build_config(flag_values={"lora_rank": 1, "engine": "verl"}))


@pytest.mark.vllm
@pytest.mark.slow
def test_lora_run_resumed_from_a_checkpoint_repeats_the_uninterrupted_run(tmp_path):
    """A 4-step LoRA run on tiny, and the same run cut back to its step-2 checkpoint and resumed: the same metrics
    (timings aside) and bit-identical adapters at step 4; the sync probe (engine with merged weights against the
    adapted policy) stays under the fp32 threshold at every step."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pyarrow.parquet as pq
    from safetensors.torch import load_file

    exe = Path(sys.executable).with_name("benchctl")
    run, cut = tmp_path / "run", tmp_path / "cut"
    args = ["--model", "tiny", "--lora-rank", "1", "--lr", "1e-2", "--steps", "4", "--save-every", "2"]
    args += ["--prompts-per-step", "8", "-G", "4", "--no-progress", "--out", str(run)]
    subprocess.run([str(exe), "train", *args], check=True, capture_output=True)
    shutil.copytree(run, cut)
    shutil.rmtree(cut / "checkpoints" / "step-000004")
    (cut / "checkpoints" / "latest").write_text("step-000002")
    subprocess.run([str(exe), "train", "--resume", str(cut), "--no-progress"], check=True, capture_output=True)
    rows = [pq.read_table(r / "train_metrics.parquet").to_pylist() for r in (run, cut)]
    assert len(rows[0]) == len(rows[1]) == 4
    for a, b in zip(*rows):
        differ = [k for k in a if not k.startswith("time/") and not _same(a[k], b[k])]
        assert not differ, (a["step"], differ)
        assert a["sync/probe_gap"] < 1e-3
    adapters = [load_file(r / "checkpoints/step-000004/model/adapter/adapter_model.safetensors") for r in (run, cut)]
    assert adapters[0].keys() == adapters[1].keys() and all(
        torch.equal(adapters[0][k], adapters[1][k]) for k in adapters[0]
    )


def _same(x, y) -> bool:
    import math

    return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
