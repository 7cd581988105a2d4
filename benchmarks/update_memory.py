"""Benchmark: peak memory and time of one policy-loss forward+backward, full logits against chunked
log-probs in token-budget micro-batches, and fp32 against bf16-autocast compute.

Model: a randomly initialised Qwen2 with Qwen2.5's vocabulary (151,936 tokens, tied embeddings) and a small body
(`--layers 2 --width 256`), so the LM head dominates as it does for a 0.5-1.5B model at long completions.
Batch: `rows` rollouts in groups of 4 sharing a prompt (`--prompt` tokens), `--completion` completion tokens.

- `update` table: `full` is today's update (`completion_logits` -> (rows, T, V) fp32 logits, `gather_logprobs`,
  `token_entropy`, the policy loss, backward, per `length_buckets` bucket); `chunked` is `token_budget_split` into
  micro-batches of at most `--micro-batch-tokens` rows x width, each `completion_hidden` +
  `chunked_logprobs_entropy(chunk_tokens=--chunk)` + the same loss, backward per micro-batch.
- `precision` table: the same `full` step on the tiny model and on the Qwen2 above, fp32 weights, compute fp32 or
  bf16 under `compute_context` (autocast), and the cost of `param_snapshot` + `param_change` (stride 1 and 64).

Each setting runs in a fresh subprocess; the child samples its RSS (psutil, every 1 ms) during the step and
reports the peak above the RSS it had just before (model built, batch packed). CPU seconds, not wall time: the
machine this was written on is shared. Measured there (defaults):

    rows  full MiB  chunked MiB  full/chunked      (prompt 32 + completion 128, micro-batch <= 640, chunk 128)
    4     1253      1091         1.1x
    8     2475      1251         2.0x
    16    4913      1262         3.9x

The chunked peak is flat in rows; what is left of it is mostly (V, D) gradient buffers of the tied embedding (each
chunk's backward makes one, 148 MiB here, then adds it in) and the chunk's (128, V) logits: with this small body
the head's weight is most of the model, so the flat floor is high relative to a 1.5B model's activations. The
full path grows as rows x T x V (fp32 logits, their gradient, the softmax of the entropy). fp32 vs bf16 autocast
on this CPU: same time and memory within noise (no bf16 GEMM units; `--dtype auto` keeps fp32 on CPU).
Run:
`.venv/bin/python benchmarks/update_memory.py [--rows 4,8,16] [--skip-precision]` (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time

GROUP = 4


def build_qwen(layers: int, width: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=151_936,
        hidden_size=width,
        intermediate_size=width * 3,
        num_hidden_layers=layers,
        num_attention_heads=width // 64,
        num_key_value_heads=max(1, width // 128),
        tie_word_embeddings=True,
        max_position_embeddings=4096,
    )
    import torch

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).float()
    model.config.use_cache = False
    return model.train()


def random_batch(rows: int, prompt: int, completion: int, vocab: int):
    import torch

    from benchctl.trainers.batch import pack

    gen = torch.Generator().manual_seed(rows)
    prompts = [torch.randint(5, vocab, (prompt,), generator=gen).tolist() for _ in range(rows // GROUP)]
    completions = [torch.randint(5, vocab, (completion,), generator=gen).tolist() for _ in range(rows)]
    return pack([p for p in prompts for _ in range(GROUP)], completions, pad_id=0)


def loss_terms(batch, lp):
    """The policy loss of `lp` (rows, t) for `batch` (token-mean weights over these rows, random advantages)."""
    import torch

    from benchctl.losses import get_loss

    adv = torch.randn(batch.tokens.shape, generator=torch.Generator().manual_seed(1)) * batch.mask
    weights = batch.mask / batch.mask.sum()
    return get_loss("ppo_clip", clip_low=0.2, clip_high=0.28)(lp, lp.detach(), adv, batch.mask, weights)[0]


def step_full(model, batch, context, temperature=1.0):
    from benchctl.trainers.batch import length_buckets
    from benchctl.trainers.policy import completion_logits, gather_logprobs, token_entropy

    for bucket in length_buckets(batch):
        sub = batch.rows(bucket).trim()
        with context():
            logits = completion_logits(model, sub, temperature)  # (b, t, V)
            loss = loss_terms(sub, gather_logprobs(logits, sub.tokens))
        loss.backward()
        token_entropy(logits.detach())


def step_chunked(model, batch, context, budget: int, chunk: int, temperature=1.0):
    from benchctl.trainers.batch import token_budget_split
    from benchctl.trainers.policy import chunked_logprobs_entropy, completion_hidden, lm_head_weight

    for rows in token_budget_split(batch, budget):
        sub = batch.rows(rows).trim()
        with context():
            lp, _ = chunked_logprobs_entropy(completion_hidden(model, sub), lm_head_weight(model), sub.tokens,
                                             temperature, chunk_tokens=chunk)  # fmt: skip
            loss = loss_terms(sub, lp)
        loss.backward()


def peak_during(fn) -> tuple[float, float]:
    """(peak RSS above the RSS before, in MiB; CPU seconds) of fn()."""
    import psutil

    proc, peak, done = psutil.Process(), [0], threading.Event()
    base = proc.memory_info().rss

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.process_time()  # CPU seconds of this process: less sensitive than wall time to a shared machine
    fn()
    seconds = time.process_time() - start
    done.set()
    sampler.join()
    return max(0, peak[0] - base) / 2**20, seconds


def child(spec: dict) -> dict:
    import torch

    from benchctl.trainers.device import compute_context
    from benchctl.trainers.weights import param_change, param_snapshot

    torch.manual_seed(0)
    if spec["model"] == "tiny":
        from benchctl.models.cache import cached_tiny_model
        from benchctl.trainers.weights import load_policy

        model = load_policy(str(cached_tiny_model()), "cpu", dtype=torch.float32)
    else:
        model = build_qwen(spec["layers"], spec["width"])
    vocab = min(model.config.vocab_size, 5000) if spec["model"] != "tiny" else 40
    batch = random_batch(spec["rows"], spec["prompt"], spec["completion"], vocab)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[spec.get("dtype", "float32")]
    context = lambda: compute_context(dtype, "cpu")  # noqa: E731  (forward + loss; backward outside)
    if spec["kind"] == "full":
        run = lambda: step_full(model, batch, context)  # noqa: E731
    else:
        run = lambda: step_chunked(model, batch, context, spec["budget"], spec["chunk"])  # noqa: E731
    mib, seconds = peak_during(run)
    out = {"peak_mib": mib, "seconds": seconds, "tokens": int(batch.mask.sum())}
    if spec.get("snapshot"):
        for stride in (1, 64):
            start = time.perf_counter()
            snap = param_snapshot(model, stride)
            change = param_change(model, snap, stride)
            out[f"snapshot_s{stride}"] = time.perf_counter() - start
            out[f"snapshot_mib_s{stride}"] = sum(s.numel() for s in snap) * 4 / 2**20
            assert float(change) == 0.0
    return out


def measure(spec: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{spec} failed:\n{proc.stderr[-3000:]}")
    return {**spec, **json.loads(proc.stdout.strip().splitlines()[-1])}


def update_table(args) -> None:
    base = {"model": "qwen", "layers": args.layers, "width": args.width, "prompt": args.prompt,
            "completion": args.completion, "budget": args.micro_batch_tokens, "chunk": args.chunk}  # fmt: skip
    print(f"update: Qwen2 {args.layers}x{args.width}, V=151,936, prompt {args.prompt} + completion "
          f"{args.completion} tokens, groups of {GROUP}; chunked: micro-batch <= {args.micro_batch_tokens} "
          f"row-tokens, chunk {args.chunk} tokens")  # fmt: skip
    print(
        "| rows | completion tokens | full peak MiB | chunked peak MiB | full / chunked | full CPU s | chunked CPU s |"
    )
    print("|---|---|---|---|---|---|---|")
    for rows in args.rows:
        full = measure({**base, "rows": rows, "kind": "full"})
        chunked = measure({**base, "rows": rows, "kind": "chunked"})
        ratio = full["peak_mib"] / max(chunked["peak_mib"], 1e-9)
        print(f"| {rows} | {full['tokens']} | {full['peak_mib']:.0f} | {chunked['peak_mib']:.0f} | {ratio:.1f}x "
              f"| {full['seconds']:.2f} | {chunked['seconds']:.2f} |", flush=True)  # fmt: skip


def precision_table(args) -> None:
    print("\nprecision: one full-logits forward+backward, fp32 weights, compute fp32 vs bf16 autocast (CPU)")
    print("| model | rows x completion | fp32 CPU s | bf16 CPU s | fp32 peak MiB | bf16 peak MiB "
          "| snapshot+change s (stride 1 / 64) | snapshot MiB (1 / 64) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for model, rows, completion in (("tiny", 32, 16), ("qwen", 8, args.completion)):
        spec = {"model": model, "layers": args.layers, "width": args.width, "prompt": args.prompt,
                "completion": completion, "rows": rows, "kind": "full"}  # fmt: skip
        fp32 = measure({**spec, "dtype": "float32", "snapshot": True})
        bf16 = measure({**spec, "dtype": "bfloat16"})
        print(f"| {model} | {rows} x {completion} | {fp32['seconds']:.2f} | {bf16['seconds']:.2f} | "
              f"{fp32['peak_mib']:.0f} | {bf16['peak_mib']:.0f} | {fp32['snapshot_s1']:.3f} / "
              f"{fp32['snapshot_s64']:.3f} | {fp32['snapshot_mib_s1']:.1f} / {fp32['snapshot_mib_s64']:.2f} |",
              flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rows", default="4,8,16", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--completion", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--micro-batch-tokens", type=int, default=640)
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--skip-precision", action="store_true")
    parser.add_argument("--skip-update", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if not args.skip_update:
        update_table(args)
    if not args.skip_precision:
        precision_table(args)


if __name__ == "__main__":
    main()
