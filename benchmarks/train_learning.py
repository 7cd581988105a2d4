"""Does the default GRPO run learn? Held-out arith pass@1 before and after, per seed (benchmark 8d).

For each seed, the default `benchctl train` run on the embedded tiny model (`build_config(flag_values={"seed": s,
"eval_every": <steps>})`: GRPO, 32 prompts x G=8, 200 steps, lr 3e-4, 8 new tokens) evaluates the held-out
arith test split at step 0 and at the last step, through the `benchctl eval` code path (200 problems x n=8 at
T=0.6 by default). Printed: pass@1 with its percentile-bootstrap CI over problems from RUN/eval/step-000000 and
RUN/eval/step-NNNNNN (summary.parquet), the difference in points, and the run's wall time. Each seed runs in its
own process (one vLLM engine per process). Target: +10 points of pass@1 on every seed (exit code 1 when missed).

    .venv/bin/python benchmarks/train_learning.py [--seeds 0,1,2] [--steps 100] [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

TARGET_POINTS = 10.0


def run_seed(seed: int, steps: int | None, out: str, conn) -> None:
    """One default run (steps None = the default) with eval at step 0 and at the end; sends its wall time."""
    from benchctl.quiet import cli_session
    from benchctl.trainers import build_config, train

    flags = {"seed": seed, "out": out, "progress": False}
    if steps is not None:
        flags["steps"] = steps
    cfg = build_config(flag_values=flags)
    cfg = build_config(flag_values={**flags, "eval_every": cfg.steps})
    start = time.perf_counter()
    with cli_session(verbose=False, progress=False):
        result = train(cfg)
    conn.send((result.steps, time.perf_counter() - start))


def pass_at_1(run: Path, step: int) -> tuple[float, float, float]:
    """(pass@1, low, high) from RUN/eval/step-NNNNNN/summary.parquet."""
    import pyarrow.parquet as pq

    table = pq.read_table(run / "eval" / f"step-{step:06d}" / "summary.parquet").to_pylist()
    row = next(r for r in table if r["k"] == 1)
    return row["pass_at_k"], row["pass_at_k_low"], row["pass_at_k_high"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: the trainer's default)")
    parser.add_argument("--quick", action="store_true", help="one seed (0)")
    parser.add_argument("--out", default=None, help="keep the run folders here (default: a temporary folder)")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",")]
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="benchctl-learning-"))
    ctx = mp.get_context("spawn")
    console = Console(width=max(110, Console().width))
    table = Table(title="held-out arith pass@1 (200 test problems x n=8, T=0.6), default GRPO run on tiny")
    for col in ("seed", "steps", "before [95% CI]", "after [95% CI]", "change (points)", "run s", "ok"):
        table.add_column(col, justify="right")
    missed = []
    for seed in seeds:
        run = root / f"grpo-s{seed}"
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=run_seed, args=(seed, args.steps, str(run), child))
        proc.start()
        steps, seconds = parent.recv()
        proc.join()
        (b, bl, bh), (a, al, ah) = pass_at_1(run, 0), pass_at_1(run, steps)
        points = 100 * (a - b)
        ok = points >= TARGET_POINTS
        missed += [] if ok else [seed]
        table.add_row(
            str(seed),
            str(steps),
            f"{b:.3f} [{bl:.3f}, {bh:.3f}]",
            f"{a:.3f} [{al:.3f}, {ah:.3f}]",
            f"{points:+.1f}",
            f"{seconds:.0f}",
            "yes" if ok else "[red]NO[/red]",
        )
        console.print(f"seed {seed}: {b:.3f} -> {a:.3f} ({points:+.1f} points) in {seconds:.0f} s; run folder {run}")
    console.print(table)
    if missed:
        console.print(f"[red]below +{TARGET_POINTS:g} points on seed(s) {', '.join(map(str, missed))}")
        return 1
    console.print(f"every seed gained >= {TARGET_POINTS:g} points of pass@1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
