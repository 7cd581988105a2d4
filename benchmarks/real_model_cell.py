"""What a real-model cell costs, by phase: smollm2-135m on arith_words, today's settings against the cheaper ones
(issue 42 item 2), each arm a few training steps in its own process, in one run (ratios within the run).

Arms (same seed, data order and rollout settings; GRPO, P prompts x G per step):
  full+system   full fine-tuning, the chat template's default system prompt (SmolLM2: 16 tokens) on every prompt
  full          full fine-tuning, no system prompt (arith_words' default: an explicit empty system turn)
  lora-r1       LoRA rank 1, alpha 32, every linear layer but the LM head, frozen base (`--lora-rank 1`), no system
                prompt; the engine samples with the adapters merged (`weights.merged_state_dict`)

Printed per arm: seconds per step by phase (`time/*` of RUN/train_metrics.parquet, the mean over the steps after
the first, which also warms caches), rollout tokens per step, update seconds per 1,000 trained tokens, the
step's rollout-token rate, the projected time of a 16,000-rollout-token cell, and the process's peak RSS
(`ru_maxrss`: policy, optimizer state and the in-process engine together). The machine it ran on and its load
are the reader's to state: on a shared machine compare the arms' ratios, not the seconds.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_model_cell.py [--steps 3] [--prompts 8] [-G 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchctl.tasks.arith_words import ArithWordsTask
from benchctl.tasks.base import register_task

CELL_TOKENS = 16_000  # issue 42's target cell: 16,000 rollout tokens in at most 2 minutes on 2 cores
ARMS = {
    "full+system": {"task": "arith_words_template_system", "lr": 1e-5},
    "full": {"task": "arith_words", "lr": 1e-5},
    "lora-r1": {"task": "arith_words", "lr": 1e-4, "lora_rank": 1},  # LoRA's rate ~10x full FT's (Schulman 2025)
}
PHASES = ("rollout", "reward", "advantage", "logprobs", "update", "sync", "sync_check")


@register_task("arith_words_template_system")
class TemplateSystemTask(ArithWordsTask):
    """arith_words with the chat template's own default system prompt (the benchmark's baseline arm only)."""

    description = "arith_words with the chat template's default system prompt (benchmarks/real_model_cell.py)"
    held_out_task = None

    def __init__(self, size: int | None = None, seed: int = 0, split: str | None = None):
        super().__init__(size, seed, split, system_prompt=None)


def run_arm(flags: dict, conn) -> None:
    """One arm's run in this process; sends the process's peak RSS in bytes."""
    from benchctl.quiet import cli_session
    from benchctl.trainers import build_config, train

    with cli_session(verbose=False, progress=False):
        train(build_config(flag_values=flags))
    conn.send(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def summarise(run: Path) -> dict[str, float]:
    """Mean of each `time/*` phase and of the rollout tokens over the steps after the first."""
    import pyarrow.parquet as pq

    rows = pq.read_table(run / "train_metrics.parquet").to_pylist()
    rows = rows[1:] if len(rows) > 1 else rows
    mean = lambda key: sum(r.get(key) or 0.0 for r in rows) / len(rows)  # noqa: E731
    out = {phase: mean(f"time/{phase}") for phase in PHASES}
    out["step"] = mean("time/step")
    out["tokens"] = mean("rollout/tokens")  # generated this step
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("-G", "--group-size", type=int, default=8)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--out", default=None, help="keep the run folders here (default: a temporary folder)")
    args = parser.parse_args(argv)
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="benchctl-cell-"))
    ctx, results = mp.get_context("spawn"), {}
    for name in args.arms.split(","):
        flags = {"model": "smollm2-135m", "estimator": "grpo", "seed": 7, "steps": args.steps, "save_every": 0}
        flags |= {"prompts_per_step": args.prompts, "group_size": args.group_size, "progress": False}
        flags |= {"out": str(root / name), **ARMS[name]}
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=run_arm, args=(flags, child))
        proc.start()
        peak = parent.recv()
        proc.join()
        results[name] = {**summarise(root / name), "peak_gib": peak / 2**30}
        Console(stderr=True).print(f"{name}: {results[name]}")
    Console(width=160).print(table(results, args))
    return 0


def table(results: dict[str, dict[str, float]], args) -> Table:
    out = Table(title=f"smollm2-135m on arith_words, {args.prompts} x G={args.group_size} per step, s/step by phase")
    for col in ("arm", *PHASES, "step s", "tokens", "update s/1k tok", "cell s (16k tok)", "peak GiB", "step ratio"):
        out.add_column(col, justify="right")
    base = next(iter(results.values()))["step"]
    for name, r in results.items():
        per_k = 1000 * (r["logprobs"] + r["update"]) / r["tokens"]
        cell = r["step"] * CELL_TOKENS / r["tokens"]
        cells = [f"{r[p]:.1f}" for p in PHASES]
        out.add_row(name, *cells, f"{r['step']:.1f}", f"{r['tokens']:.0f}", f"{per_k:.2f}", f"{cell:.0f}",
                    f"{r['peak_gib']:.2f}", f"{r['step'] / base:.2f}")  # fmt: skip
    return out


if __name__ == "__main__":
    sys.exit(main())
