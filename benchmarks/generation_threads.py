"""Generation seconds on one torch thread against every core, in one run (issue 42 item 2: "generation on both
cores while the update is idle").

For each model a fresh child process starts the in-process engine once and builds two `Engine`s on it, one with
`threads=1` and one with `threads=all` (`benchctl.trainers.device.default_threads()`: every core of the affinity,
or OMP_NUM_THREADS where set); the same fixed batch (`--prompts` prompts of the model's task x n, `--max-tokens`,
temperature 1, seed `--seed`: the trainer's rollout settings) is generated `--reps` times by each, interleaved
(1, all, all, 1, ...) after one warm-up call each, so a machine whose load drifts slows both alike. Tasks:
`smollm2-135m` on arith_chat (its chat template), `tiny` on arith (its own prompt text).

Printed per model and thread count: median wall seconds of a call, generated tokens, tokens per second, the CPU the
process used per wall second during the calls (about 1 on one thread; up to the core count when the second thread
does work, also when it only spins), and the ratio of the medians (1 thread / all). Then whether the generated tokens
are identical across thread counts (the count of samples that differ): vLLM's CPU kernels split reductions by
thread, so the last bits of a logit, and at a near tie a sampled token, may depend on the thread count.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/generation_threads.py [--models tiny,smollm2-135m] [--reps 5]
        [--prompts 8] [-n 8] [--max-tokens 64] [--seed 0]

On a shared machine only the ratio within the run means something; state the load beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _shared import comma_choices, run_child

MODEL_TASKS = {"tiny": "arith", "smollm2-135m": "arith_chat"}


def child(model: str, prompts: int, n: int, max_tokens: int, reps: int, seed: int) -> dict:
    """One model's measurement in this (fresh) process: arm -> seconds, tokens, CPU share; token ids per arm."""
    from benchctl.engine import Engine, SamplingConfig
    from benchctl.results.runs import resolve_model
    from benchctl.tasks import get_task
    from benchctl.trainers.device import default_threads

    cores = default_threads()
    path = resolve_model(model).path
    engines = {1: Engine(path, threads=1), cores: Engine(path, threads=cores)}
    task = get_task(MODEL_TASKS[model])
    texts = [engines[1].render(task, p) for p in task.load(limit=prompts)]
    sampling = SamplingConfig(n=n, temperature=1.0, top_p=1.0, max_tokens=max_tokens, seed=seed)
    rows: dict[int, list[dict]] = {t: [] for t in engines}
    ids: dict[int, list] = {}
    order = list(engines)
    for rep in range(reps + 1):  # rep 0: one warm-up call per arm, not timed
        for t in order if rep % 2 == 0 else order[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            groups = engines[t].generate(texts, sampling, progress=False)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            ids.setdefault(t, [s.token_ids for g in groups for s in g])
            if rep:
                tokens = sum(s.num_tokens for g in groups for s in g)
                rows[t].append({"seconds": wall, "tokens": tokens, "cpu_share": cpu / wall})
    base = ids[1]
    differ = {t: sum(a != b for a, b in zip(base, got)) for t, got in ids.items()}
    return {"model": model, "cores": cores, "rows": {str(t): r for t, r in rows.items()}, "differ": differ}


def measure(model: str, args: argparse.Namespace) -> dict:
    """`child` in a fresh interpreter (one engine start per model, nothing left from another model)."""
    call = f"child({model!r}, {args.prompts}, {args.n}, {args.max_tokens}, {args.reps}, {args.seed})"
    return run_child("generation_threads", call, model)


def print_result(result: dict, samples: int) -> None:
    """One model's table rows, its ratio and whether the tokens matched."""
    medians = {}
    for t, rows in result["rows"].items():
        seconds = statistics.median(r["seconds"] for r in rows)
        tokens = statistics.median(r["tokens"] for r in rows)
        share = statistics.median(r["cpu_share"] for r in rows)
        medians[t] = seconds
        print(f"{result['model']:14s} {t:>7s} {seconds:10.3f} {tokens:8.0f} {tokens / seconds:9.1f} {share:9.2f}")
    slow, fast = medians["1"], medians[str(result["cores"])]
    print(f"{result['model']:14s} ratio 1 thread / {result['cores']} threads: {slow / fast:.2f}x")
    for t, count in result["differ"].items():
        if t != "1":
            print(f"{result['model']:14s} samples whose tokens differ from 1 thread's ({t} threads): {count}/{samples}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODEL_TASKS), help=f"comma list of: {', '.join(MODEL_TASKS)}")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per thread count (after one warm-up)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("-n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    models = comma_choices(args.models, MODEL_TASKS, "model")
    if min(args.reps, args.prompts, args.n, args.max_tokens) < 1:
        print("--reps, --prompts, -n and --max-tokens must be at least 1", file=sys.stderr)
        return 2
    results = [measure(model, args) for model in models]
    print(f"\n{args.prompts} prompts x n={args.n}, max_tokens {args.max_tokens}, seed {args.seed}, {args.reps} reps")
    print(f"{'model':14s} {'threads':>7s} {'median s':>10s} {'tokens':>8s} {'tok/s':>9s} {'cpu/wall':>9s}")
    for result in results:
        print_result(result, args.prompts * args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
