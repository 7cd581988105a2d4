"""Eval-style generation throughput: `Engine.generate` against bare `vllm.LLM.generate` (benchmark 9c).

Both sides use the same in-process `LLM` object (so model, KV cache and compilation state are identical), the same
prompts (rendered with the model's chat template when it has one) and the same per-prompt `vllm.SamplingParams`
(seeds included), on the cached tiny model with 200 arith test prompts x n=16 by default, or any `--model` and
`--task`. The benchctl side does what an eval does: render each problem with `Engine.render`, generate with the rich
progress bar on, and collect `Sample` objects; the bare side calls `LLM.generate(prompts, params, use_tqdm=False)`
on the same text rendered beforehand and keeps the `RequestOutput`s. The bar is drawn live (rich is told the
terminal is interactive) even when stderr is redirected. Repeats interleave the two
(alternating which goes first) so load from other processes hits both alike; medians of wall time and of this
process's CPU time are reported. Target: benchctl/bare <= 1.10 (exit code 1 when the CPU-time ratio misses it).

`--accuracy` also reports the tiny model's sampled arith accuracy (500 test problems x 16 samples at T=1.0 and
T=0.6) and the fraction of mixed groups (some right, some wrong), plus the model's build time.

    .venv/bin/python benchmarks/engine.py [--prompts 200] [--n 16] [--repeats 15] [--accuracy]
    .venv/bin/python benchmarks/engine.py --model smollm2-135m --task gsm8k --data-dir ../shared/benchmarks \
        --prompts 32 --n 4 --max-tokens 256 --repeats 3     # a real chat model on a real benchmark
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchctl.engine import Engine, SamplingConfig, prompt_seed
from benchctl.models.tiny import INFO_FILE
from benchctl.results.runs import resolve_model
from benchctl.tasks import get_task

TARGET = 1.10
# render the progress bar live even when stderr is not a terminal, so its real cost is measured
os.environ.setdefault("TTY_INTERACTIVE", "1")


def bare_params(sampling: SamplingConfig, count: int) -> list:
    """The `vllm.SamplingParams` benchctl sends, one per prompt (per-prompt seeds)."""
    from vllm import SamplingParams

    return [
        SamplingParams(
            n=sampling.n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            seed=prompt_seed(sampling.seed, i),
        )
        for i in range(count)
    ]


def timed(fn) -> tuple[float, float, object]:
    """(wall seconds, process CPU seconds, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def compare(engine: Engine, task, problems, sampling: SamplingConfig, repeats: int) -> dict:
    """Interleaved repeats of both sides; returns per-side lists of wall/CPU seconds and generated tokens."""
    prompts = [engine.render(task, p) for p in problems]  # the same text (chat template included), rendered untimed
    params = bare_params(sampling, len(prompts))

    def bare():
        return engine.llm.generate(prompts, params, use_tqdm=False)

    def ours():
        return engine.generate([engine.render(task, p) for p in problems], sampling, progress=True)

    bare(), ours()  # warm-up
    runs = {"bare vllm": {"wall": [], "cpu": []}, "benchctl": {"wall": [], "cpu": []}}
    for r in range(repeats):
        order = [("bare vllm", bare), ("benchctl", ours)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            wall, cpu, out = timed(fn)
            runs[name]["wall"].append(wall)
            runs[name]["cpu"].append(cpu)
            tokens = (
                sum(len(c.token_ids) for o in out for c in o.outputs)
                if name == "bare vllm"
                else sum(s.num_tokens for g in out for s in g)
            )
            runs[name]["tokens"] = tokens
    return runs


def accuracy(engine: Engine, task, problems, temperature: float, n: int) -> tuple[float, float]:
    """(mean sampled accuracy, fraction of groups with both right and wrong samples)."""
    groups = engine.generate(
        [engine.render(task, p) for p in problems],
        SamplingConfig(n=n, temperature=temperature, top_p=1.0, max_tokens=16, seed=0),
        progress=False,
    )
    correct = [[v.correct for v in task.grade([(p, s.text) for s in g])] for p, g in zip(problems, groups)]
    mean = sum(map(sum, correct)) / (n * len(correct))
    mixed = sum(0 < sum(c) < n for c in correct) / len(correct)
    return mean, mixed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--accuracy", action="store_true")
    parser.add_argument("--model", default="tiny", help="a --model name or folder (tiny, smollm2-135m, ...)")
    parser.add_argument("--task", default="arith")
    parser.add_argument("--data-dir", default=None, help="benchmark files (tasks read from disk)")
    parser.add_argument("--max-tokens", type=int, default=SamplingConfig.max_tokens)
    args = parser.parse_args()
    console = Console()
    resolved = resolve_model(args.model)
    wall, cpu, engine = timed(lambda: Engine(resolved.path, kv_cache_gib=0.5 if resolved.kind == "tiny" else None))
    info_file = Path(resolved.path) / INFO_FILE
    if info_file.is_file():
        info = json.loads(info_file.read_text())
        what = (
            f"{info['parameters']:,} parameters, SFT {info['sft/steps']} steps, built in {info['build_seconds']:.1f} s"
        )
    else:
        what = (resolved.source or {}).get("weights", resolved.kind)
    console.print(f"{args.model} ({Path(resolved.path).name}): {what}; engine start {wall:.1f} s")
    task = get_task(args.task)
    sampling = SamplingConfig(n=args.n, max_tokens=args.max_tokens)
    runs = compare(engine, task, task.load(args.data_dir, limit=args.prompts), sampling, args.repeats)
    title = f"{args.prompts} {args.task} prompts x n={args.n}, median of {args.repeats} interleaved repeats"
    table = Table(title=title)
    for col in ("side", "wall s", "cpu s", "samples/s (wall)", "tokens/s (wall)"):
        table.add_column(col, justify="right")
    med = {k: {m: statistics.median(v[m]) for m in ("wall", "cpu")} for k, v in runs.items()}
    for name, m in med.items():
        samples = args.prompts * args.n
        table.add_row(
            name,
            f"{m['wall']:.3f}",
            f"{m['cpu']:.3f}",
            f"{samples / m['wall']:,.0f}",
            f"{runs[name]['tokens'] / m['wall']:,.0f}",
        )
    console.print(table)
    ratio_wall = med["benchctl"]["wall"] / med["bare vllm"]["wall"]
    ratio_cpu = med["benchctl"]["cpu"] / med["bare vllm"]["cpu"]
    console.print(f"benchctl / bare: wall {ratio_wall:.3f}, cpu {ratio_cpu:.3f} (target <= {TARGET})")
    if args.accuracy:
        problems = task.load(limit=500)
        for temperature in (1.0, 0.6):
            mean, mixed = accuracy(engine, task, problems, temperature, 16)
            console.print(
                f"arith accuracy T={temperature}: {mean:.3f} sampled, {mixed:.2f} of groups mixed "
                f"(500 test problems x 16)"
            )
    return 0 if ratio_cpu <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
