"""What an in-process engine leaves behind for the code that runs after it in the same process.

Each variant runs in a fresh child process, interleaved over `--repeats`:
- `clean`: no engine; the workload alone.
- `engine`: `Engine` on the cached tiny model, `--prompts` arith prompts x n=4 generated, then 2 s idle, then the
  workload.
- `engine+passive`, `engine+spin0`: the same with `OMP_WAIT_POLICY=PASSIVE` / `GOMP_SPINCOUNT=0` in the child's
  environment (libgomp reads them when torch loads it).

Idle: per-thread CPU over 2 s of `time.sleep` after the generation (`/proc/self/task/*/stat`, utime + stime);
the process total and the busiest thread are reported. Workload: the tiny model's SFT (`benchctl.models.tiny.run_sft`,
`--steps` steps of 64 sequences from a fresh seed-0 model), the code the test suite ran after an engine; it asks for
one torch thread (`torch.set_num_threads(1)`). Reported: its wall and process-CPU seconds, the torch threads it ran
on, the CPU seconds of threads other than the main one during it (an OpenMP worker waiting at a barrier spins:
`gomp_barrier_wait_end`), and its last loss (bit-identical to `clean` or not).

    .venv/bin/python benchmarks/engine_threads.py [--steps 40] [--repeats 2] [--variants clean,engine]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _shared import comma_choices, run_child

VARIANTS = {
    "clean": {},
    "engine": {},
    "engine+passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "engine+spin0": {"GOMP_SPINCOUNT": "0"},
}


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of every thread of this process, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[task.name] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (proc(5) fields 14, 15)
    return out


def cpu_between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds each thread used between two `thread_cpu` readings."""
    return {tid: after[tid] - before.get(tid, 0.0) for tid in after}


def child(variant: str, steps: int, prompts: int) -> dict:
    """One measurement in this (fresh) process; returns what `main` tabulates."""
    import torch

    from benchctl.models.tiny import TinyModelConfig, qwen2_config, run_sft

    result: dict = {"variant": variant}
    if variant != "clean":
        from benchctl.engine import Engine, SamplingConfig
        from benchctl.models.cache import cached_tiny_model
        from benchctl.tasks import get_task

        engine = Engine(cached_tiny_model(), kv_cache_gib=0.125)
        task = get_task("arith")
        texts = [task.prompt_text(p) for p in task.load(limit=prompts)]
        engine.generate(texts, SamplingConfig(n=4, max_tokens=16), progress=False)
        before, wall = thread_cpu(), time.perf_counter()
        time.sleep(2.0)
        idle = cpu_between(before, thread_cpu())
        seconds = time.perf_counter() - wall
        result["idle_cpu_share"] = sum(idle.values()) / seconds
        result["idle_busiest_thread_share"] = max(idle.values()) / seconds
        result["threads"] = len(idle)
    from transformers import Qwen2ForCausalLM

    cfg = TinyModelConfig(sft_steps=steps, warmup_steps=min(10, steps))
    torch.manual_seed(cfg.seed)
    model = Qwen2ForCausalLM(qwen2_config(cfg))
    main_tid = str(os.getpid())
    threads_in_sft = []
    set_threads = torch.set_num_threads

    def recording(n: int) -> None:  # what run_sft's request becomes in this process
        set_threads(n)
        threads_in_sft.append(torch.get_num_threads())

    torch.set_num_threads = recording
    before, wall, cpu = thread_cpu(), time.perf_counter(), time.process_time()
    metrics = run_sft(model, cfg)
    result["sft_wall"] = time.perf_counter() - wall
    result["sft_cpu"] = time.process_time() - cpu
    used = cpu_between(before, thread_cpu())
    result["sft_other_threads_cpu"] = sum(v for tid, v in used.items() if tid != main_tid)
    result["sft_torch_threads"] = threads_in_sft[0] if threads_in_sft else None
    result["sft_last_loss"] = repr(metrics["sft/last_loss"])
    return result


def measure(variant: str, steps: int, prompts: int) -> dict:
    """`child` in a fresh interpreter with the variant's environment."""
    env = {**os.environ, **VARIANTS[variant]}
    return run_child("engine_threads", f"child({variant!r}, {steps}, {prompts})", variant, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="SFT steps of the workload")
    parser.add_argument("--prompts", type=int, default=64, help="prompts generated (x n=4) before the idle window")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list of: {', '.join(VARIANTS)}")
    args = parser.parse_args()
    names = comma_choices(args.variants, VARIANTS, "variant")
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for r in range(args.repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            runs[name].append(measure(name, args.steps, args.prompts))
            print(json.dumps(runs[name][-1]), flush=True)
    print(f"\nmedians of {args.repeats} repeats; SFT {args.steps} steps; cores {len(os.sched_getaffinity(0))}")
    header = "variant          idle cpu  busiest  sft wall s  sft cpu s  other thr cpu s  torch thr  last loss"
    print(header)
    for name, rows in runs.items():

        def med(key: str, rows=rows) -> float:
            values = [row[key] for row in rows if row.get(key) is not None]
            return statistics.median(values) if values else float("nan")

        losses = sorted({row["sft_last_loss"] for row in rows})
        print(
            f"{name:16s} {med('idle_cpu_share'):8.2f} {med('idle_busiest_thread_share'):8.2f} "
            f"{med('sft_wall'):11.2f} {med('sft_cpu'):10.2f} {med('sft_other_threads_cpu'):16.2f} "
            f"{rows[0]['sft_torch_threads']!s:>10}  {','.join(losses)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
