"""Benchmark: the memory preflight's predicted update peak (`benchctl.trainers.memory.update_terms`) against the
peak measured on a GPU, for two model sizes (issue 40 item 5).

On a CUDA machine it measures: for each model of `gpu_update.SHAPES` (randomly initialised from the published
config, seed 0) and each `--micro-batch-tokens`, the trainer's own `loop.measure` + `loop.update` (`--steps` steps,
bf16 autocast over fp32 weights, no KL) in a fresh subprocess (`benchmarks/gpu_update.py`'s child), and
`torch.cuda.max_memory_allocated` over the steps is the measured peak. The prediction is the preflight's, less its
"vLLM asleep" term (no engine runs here). It prints predicted / measured per setting.

Without CUDA it measures nothing: with `--from FILE` (default docs/gpu/update_h100.json, one H100 80GB, measured by
`gpu_update.py` in an earlier session) it compares the prediction with the peaks recorded there; without a file it
says so and exits 2. ACTIVATION_CUDA and WORKSPACE were fitted to that file's Qwen2.5-Math-1.5B rows at 4,096 and
8,192 tokens, so those ratios are ~1 by construction; the SmolLM2-135M rows and the 1.5B fp32 and KL rows test it.

Run: `python benchmarks/gpu_memory_preflight.py` (CUDA: ~3 min on one H100 with the defaults; CPU: the recorded
comparison in seconds), `--models qwen2.5-math-1.5b,smollm2-135m --micro-batch-tokens 4096,16384 --out FILE`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_update, beside this file

from gpu_update import SHAPES, run_child, save_random_model  # noqa: E402

from benchctl.trainers.memory import Shape, model_shape, update_terms  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "docs" / "gpu" / "update_h100.json"


def shape_of(name: str) -> Shape:
    """The preflight's view of model `name`: its config alone, written to a scratch folder (no weights)."""
    from transformers import LlamaConfig, Qwen2Config

    spec = dict(SHAPES[name])
    config_cls = Qwen2Config if spec.pop("arch") == "qwen2" else LlamaConfig
    with tempfile.TemporaryDirectory() as folder:
        config_cls(**spec, tie_word_embeddings=True, dtype="bfloat16").save_pretrained(folder)
        return model_shape(folder)


def predicted(shape: Shape, tokens: int, dtype: str, kl_coef: float) -> float:
    """The preflight's update peak in GiB without the sleeping engine."""
    terms = update_terms(shape, tokens, bf16=dtype != "float32", kl=kl_coef > 0, chunk=1024)
    terms.pop("vLLM asleep")
    return sum(terms.values())


def compare(rows: list[dict]) -> list[dict]:
    """predicted / measured for every row with a measured peak and a micro-batch budget."""
    shapes, out = {}, []
    for r in rows:
        if r.get("micro_batch_tokens") is None or "peak_gib" not in r or "oom" in r or "error" in r:
            continue
        shape = shapes.setdefault(r["model"], shape_of(r["model"]))
        pred = predicted(shape, r["micro_batch_tokens"], r["dtype"], r["kl_coef"])
        out.append({**{k: r[k] for k in ("model", "micro_batch_tokens", "dtype", "kl_coef")},
                    "predicted_gib": pred, "measured_gib": r["peak_gib"],
                    "reserved_gib": r.get("peak_reserved_gib"), "ratio": pred / r["peak_gib"]})  # fmt: skip
        print(f"{r['model']:<18} mbt={r['micro_batch_tokens']:<6} {r['dtype']:<8} kl={r['kl_coef']:<6}"
              f" predicted {pred:6.1f} GiB  measured {r['peak_gib']:6.1f} GiB  ratio {pred / r['peak_gib']:.3f}",
              flush=True)  # fmt: skip
    return out


def measure(args) -> list[dict]:
    """Fresh peaks on this CUDA machine (gpu_update's child, one subprocess per setting)."""
    import torch

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, measuring", flush=True)
    base = {"device": "cuda", "rows": args.rows, "group": 8, "prompt": 200, "completion": args.completion,
            "steps": args.steps, "lr": 1e-6, "dtype": "auto", "kl_coef": 0.0, "precision": False}  # fmt: skip
    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as folder:
            params = save_random_model(name, folder, "cuda")
            for budget in (int(b) for b in args.micro_batch_tokens.split(",")):
                spec = {**base, "model": name, "folder": folder, "params": params, "micro_batch_tokens": budget}
                rows.append(run_child(spec))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen2.5-math-1.5b,smollm2-135m")
    parser.add_argument("--micro-batch-tokens", default="4096,8192", help="comma list of budgets (CUDA)")
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--completion", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--from", dest="source", default=str(RECORDED), help="recorded peaks, without CUDA")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import torch

    if torch.cuda.is_available():
        rows = measure(args)
    elif args.source and Path(args.source).is_file():
        print(f"no CUDA device: comparing with the peaks recorded in {args.source} (nothing measured here)")
        rows = json.loads(Path(args.source).read_text())
    else:
        print("no CUDA device and no recorded peaks (--from FILE): nothing to compare", file=sys.stderr)
        raise SystemExit(2)
    result = compare(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
