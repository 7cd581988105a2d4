"""Benchmark: the trainer's own policy update (`loop.measure` + `loop.update`) on one GPU at real model shapes,
random weights: peak memory, seconds per update, whether fp32 master weights move at lr 1e-6, and the bf16-autocast
log-prob error. It checks docs/gpu.md's memory and time formulas, which were computed before a GPU was lent.

Models (the published `config.json` shapes, weights drawn by transformers' initialiser, seed 0):
- `qwen2.5-math-1.5b`: Qwen2ForCausalLM, h 1536, I 8960, 28 layers, 12 heads, 2 KV heads, V 151,936, tied.
- `smollm2-135m`: LlamaForCausalLM, h 576, I 1536, 30 layers, 9 heads, 3 KV heads, V 49,152, tied.
- `small`: a 2-layer Qwen2 of width 128, V 4096: the CPU check of this script (`--models small`).

One step as the trainer runs it: `--rows` rollouts in groups of `--group` (shared prompts of `--prompt` tokens),
completion lengths drawn uniformly from [`--completion` / 4, `--completion`], advantages of a GRPO group
normalisation of random 0/1 rewards (about 1/8 of the groups degenerate and skipped, as ACR makes it), then
`loop.measure` (no-grad diagnostics on one row per group) and `loop.update` (one optimizer step, the registry's
ppo_clip, token-mean aggregation), with the policy from `build.build_policy` (fp32 weights, fused AdamW,
`--dtype` compute). Each setting runs in a fresh subprocess; the first step is a warm-up (kernels, allocator),
the median of the others is reported. Peak memory: `torch.cuda.max_memory_allocated` over the steps, with the
trainer state (weights + grads + AdamW) alone beside it.

Run: `python benchmarks/gpu_update.py [--models qwen2.5-math-1.5b,smollm2-135m] [--out FILE]` on a GPU machine
(about 4 minutes on one H100); `--models small --device cpu` checks it on a CPU in under a minute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

SHAPES = {
    "qwen2.5-math-1.5b": dict(arch="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                              num_attention_heads=12, num_key_value_heads=2, vocab_size=151_936,
                              max_position_embeddings=4096, rope_theta=10_000.0),
    "smollm2-135m": dict(arch="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49_152,
                         max_position_embeddings=8192, rope_theta=100_000.0),
    "small": dict(arch="qwen2", hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, vocab_size=4096, max_position_embeddings=2048, rope_theta=10_000.0),
}  # fmt: skip


def save_random_model(name: str, folder: str, device: str) -> int:
    """Write a randomly initialised model of shape `name` to `folder` (fp32 safetensors); its parameter count."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    shape = dict(SHAPES[name])
    arch = shape.pop("arch")
    config_cls, model_cls = (Qwen2Config, Qwen2ForCausalLM) if arch == "qwen2" else (LlamaConfig, LlamaForCausalLM)
    config = config_cls(**shape, tie_word_embeddings=True, torch_dtype="float32")
    torch.manual_seed(0)
    with torch.device(device):
        model = model_cls(config).float()
    model.save_pretrained(folder)
    params = sum(p.numel() for p in model.parameters())
    del model
    if device == "cuda":
        torch.cuda.empty_cache()  # the children measure the GPU: this process keeps none of it
    return params


def rollout_batch(spec: dict, device: str):
    """(batch, token_adv, nondegenerate, engine_lp): the tensors `loop.update` receives after a rollout."""
    import numpy as np
    import torch

    from benchctl.estimators import get_estimator
    from benchctl.estimators._common import group_stats
    from benchctl.trainers.batch import pack

    rng = np.random.default_rng(spec["rows"])
    vocab, groups, g = SHAPES[spec["model"]]["vocab_size"], spec["rows"] // spec["group"], spec["group"]
    prompts = [rng.integers(5, vocab, spec["prompt"]).tolist() for _ in range(groups)]
    lengths = rng.integers(spec["completion"] // 4, spec["completion"] + 1, spec["rows"])
    completions = [rng.integers(5, vocab, n).tolist() for n in lengths]
    batch = pack([p for p in prompts for _ in range(g)], completions, pad_id=0, device=device)
    rewards = (rng.random((groups, g)) < rng.random((groups, 1))).astype(np.float64)  # (P, G) per-prompt difficulty
    seq_adv = get_estimator("grpo").advantages(rewards).reshape(-1)  # (N,)
    token_adv = torch.as_tensor(seq_adv[:, None] * np.ones(batch.tokens.shape), dtype=torch.float32, device=device)
    nondegenerate = torch.as_tensor(np.repeat(~group_stats(rewards).degenerate, g), device=device)
    engine_lp = torch.zeros(batch.tokens.shape, device=device)
    return batch, token_adv * batch.mask, nondegenerate, engine_lp


def child(spec: dict) -> dict:
    """One setting, in this process: build the policy, run `--steps` trainer updates, measure."""
    import torch

    from benchctl.trainers.build import Objective, build_policy
    from benchctl.trainers.config import TrainConfig
    from benchctl.trainers.loop import measure, update
    from benchctl.trainers.plan import resolve
    from benchctl.trainers.policy import forward_stats
    from benchctl.trainers.runtime import PhaseTimer

    device = spec["device"]
    cfg = TrainConfig(model=spec["folder"], lr=spec["lr"], dtype=spec["dtype"], kl_coef=spec["kl_coef"],
                      micro_batch_tokens=spec["micro_batch_tokens"], group_size=spec["group"],
                      prompts_per_step=spec["rows"] // spec["group"], device=device)  # fmt: skip
    cuda = device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    plan = resolve(cfg)
    policy = build_policy(plan, spec["folder"], None, device)
    load_s = time.perf_counter() - start
    loss = Objective(plan.loss, "token-mean", cfg.kl_coef, 1024, plan.correction)
    batch, token_adv, nondegenerate, engine_lp = rollout_batch(spec, device)
    state_gib = torch.cuda.memory_allocated() / 2**30 if cuda else float("nan")
    out: dict = {"load_s": load_s, "weights_gib": state_gib, "steps": []}
    try:
        for step in range(1, spec["steps"] + 1):
            times = PhaseTimer()
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            diagnostics, _ = measure(cfg, policy, batch, engine_lp, token_adv, times)
            metrics = update(cfg, policy, loss, step, batch, token_adv, nondegenerate, engine_lp, times)
            if cuda:
                torch.cuda.synchronize()
            out["steps"].append({"seconds": time.perf_counter() - start, **dict(times),
                                 "param_change": metrics["update/param_change"],
                                 "grad_norm": metrics["policy/grad_norm"],
                                 "rows_trained": metrics["update/rows_trained"]})  # fmt: skip
            if step == 1 and cuda:
                out["state_gib"] = torch.cuda.memory_allocated() / 2**30  # weights + grads + AdamW m, v
    except torch.OutOfMemoryError as err:
        out["oom"] = str(err).splitlines()[0][:200]
    if cuda:
        out["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        out["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
    out["tokens"] = float(batch.mask.sum())
    if "oom" not in out and spec.get("precision"):  # bf16 autocast against fp32 compute, same fp32 weights
        from benchctl.trainers.device import compute_context

        sub = batch.rows(torch.arange(min(16, spec["rows"]), device=batch.tokens.device)).trim()
        with torch.no_grad():
            exact = forward_stats(policy.model, sub, 1.0).logprobs.float()
            with compute_context(torch.bfloat16, device):
                low = forward_stats(policy.model, sub, 1.0).logprobs.float()
        gap = (exact - low).abs()[sub.mask > 0]
        out["bf16_gap"] = {"max": float(gap.max()), "median": float(gap.median()), "mean_logprob": float(
            exact[sub.mask > 0].mean())}  # fmt: skip
    return out


def run_child(spec: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True)
    if proc.returncode != 0:
        return {**spec, "error": proc.stderr.strip().splitlines()[-1][:300] if proc.stderr.strip() else "died"}
    return {**spec, **json.loads(proc.stdout.strip().splitlines()[-1])}


def summary(r: dict) -> str:
    nan = float("nan")
    head = f"{r['model']:<18} mbt={str(r['micro_batch_tokens']):<5} {r['dtype']:<8} kl={r['kl_coef']:<5}"
    if "error" in r:
        return f"{head} error: {r['error']}"
    steps = r["steps"][1:] or r["steps"]
    if "oom" in r:
        return f"{head} out of memory after {len(r['steps'])} steps (peak {r.get('peak_gib', 0):.1f} GiB)"
    med = lambda k: statistics.median(s.get(k, 0.0) for s in steps)  # noqa: E731
    return (f"{head} step {med('seconds'):.2f} s (update {med('update'):.2f}, logprobs {med('logprobs'):.2f}) "
            f"tokens {r['tokens']:.0f} weights {r['weights_gib']:.2f} GiB state {r.get('state_gib', nan):.2f} "
            f"peak {r.get('peak_gib', nan):.2f} GiB (reserved {r.get('peak_reserved_gib', nan):.2f}) "
            f"param_change {steps[-1]['param_change']:.2e}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--models", default="qwen2.5-math-1.5b,smollm2-135m")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=200)
    parser.add_argument("--completion", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--micro-batch-tokens", default=None, help="comma list: these budgets only (bf16, no KL)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    import torch

    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}")
    base = {"device": args.device, "rows": args.rows, "group": args.group, "prompt": args.prompt,
            "completion": args.completion, "steps": args.steps, "lr": args.lr}  # fmt: skip
    settings = {  # (micro_batch_tokens, dtype, kl_coef, bf16 precision check)
        "qwen2.5-math-1.5b": [(4096, "auto", 0.0, True), (8192, "auto", 0.0, False), (4096, "float32", 0.0, False),
                              (4096, "auto", 0.001, False)],
        "smollm2-135m": [(4096, "auto", 0.0, True), (None, "auto", 0.0, False)],
        "small": [(512, "auto", 0.0, True), (None, "auto", 0.0, False)],
    }  # fmt: skip
    if args.micro_batch_tokens:
        budgets = [None if x == "none" else int(x) for x in args.micro_batch_tokens.split(",")]
        settings = {name: [(b, "auto", 0.0, False) for b in budgets] for name in settings}
    results = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            params = save_random_model(name, folder, args.device)
            print(f"{name}: {params / 1e6:.1f}M parameters, written in {time.perf_counter() - start:.1f} s", flush=True)
            for mbt, dtype, kl, precision in settings[name]:
                spec = {**base, "model": name, "folder": folder, "params": params, "micro_batch_tokens": mbt,
                        "dtype": dtype, "kl_coef": kl, "precision": precision}  # fmt: skip
                results.append(run_child(spec))
                print(summary(results[-1]), flush=True)
                if results[-1].get("bf16_gap"):
                    print(f"    bf16 autocast vs fp32 log-probs: {results[-1]['bf16_gap']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
