"""What a real-model cell costs, by phase: smollm2-135m on arith_words, today's settings against the cheaper ones
(issue 42 item 2), each arm a few training steps in its own process, in one run (ratios within the run).

Arms (same seed, data order and rollout settings; GRPO, P prompts x G per step, at the testbed's temperature and
length, `--temperature 0.6 --max-tokens 96` by default, as examples/claims-real/testbed.yaml):
  full+system   full fine-tuning, the chat template's default system prompt (SmolLM2: 16 tokens) on every prompt
  full          full fine-tuning, no system prompt (arith_words' default: an explicit empty system turn)
  lora-r1       LoRA rank 1, alpha 32, every linear layer but the LM head, frozen base (`--lora-rank 1`), no system
                prompt; the engine samples with the adapters merged (`weights.merged_state_dict`)

Printed per arm: seconds per step by phase (`time/*` of RUN/train_metrics.parquet, the mean over the steps after
the first, which also warms caches), rollout tokens per step, the share of rows the update trained (a row whose
advantage is 0, in an all-right or all-wrong group, is skipped: `update/rows_trained`), log-prob and update seconds
per 1,000 rollout tokens and per trained row, the projected time of a 16,000-rollout-token cell, and the process's
peak RSS
(`ru_maxrss`: policy, optimizer state and the in-process engine together). The machine it ran on and its load
are the reader's to state: on a shared machine compare the arms' ratios, not the seconds.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/real_model_cell.py [--steps 3] [--prompts 8] [-G 8] [--out DIR]
        [--temperature 0.6] [--max-tokens 96]

`--update-only REPS`: the update phase alone, in one process, the arms interleaved rep by rep (so a loaded machine
slows them alike): the trainer's own `loop.update` (forward, backward, AdamW) on one batch of P x G rows, the
prompts arith_words' real chat prompts (with and without the template's system prompt), the completions fixed
random tokens of 20-80 tokens (seeded; the cost does not depend on their values), advantages +-1 on every row.
Printed per arm: median seconds over the reps after the first (a warm-up), seconds per 1,000 trained tokens, the
ratio to full+system, and the peak RSS growth during the arm's updates (VmHWM after `clear_refs` 5). The two full
arms share one policy and its AdamW state; the LoRA arm has its own.
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
    out["rows"] = mean("update/rows_trained")
    out["trained"] = out["rows"] / max(1.0, out["rows"] + mean("update/rows_skipped"))
    return out


def update_only(reps: int, prompts: int, group: int) -> Table:
    """The update phase of each arm (module docstring), `reps` interleaved repetitions; returns the table."""
    import statistics
    import time

    from benchctl.results.runs import resolve_model
    from benchctl.trainers.build import Objective, build_policy
    from benchctl.trainers.config import build_config
    from benchctl.trainers.plan import resolve

    model = resolve_model("smollm2-135m").path
    policies, plans = {}, {}
    for kind, flags in (("full", {"lr": 1e-5}), ("lora", {"lr": 1e-4, "lora_rank": 1})):
        plan = resolve(build_config(flag_values={"model": "smollm2-135m", "task": "arith_words", **flags}))
        plans[kind], policies[kind] = plan, build_policy(plan, model, None, "cpu")
    arms = {"full": ("full", ""), "lora-r1": ("lora", ""), "full+system": ("full", None)}
    batches = {name: _batch(policies[kind], system, prompts, group) for name, (kind, system) in arms.items()}
    seconds, peaks = {name: [] for name in arms}, {name: 0 for name in arms}
    for rep in range(reps):
        for name, (kind, _system) in arms.items():
            batch, adv = batches[name]
            plan, policy = plans[kind], policies[kind]
            objective = Objective(plan.loss, plan.loss_agg, 0.0, plan.max_tokens, plan.correction)
            before = _reset_peak()
            start = time.perf_counter()
            _update(plan, policy, objective, rep, batch, adv)
            seconds[name].append(time.perf_counter() - start)
            peaks[name] = max(peaks[name], _peak() - before)
            Console(stderr=True).print(f"rep {rep} {name}: {seconds[name][-1]:.1f} s")
    title = f"update phase, smollm2-135m, {prompts} x G={group} rows, median of reps 2-{reps} (interleaved)"
    out = Table(title=title)
    for col in ("arm", "prompt tokens", "trained tokens", "update s", "s / 1k tokens", "ratio", "peak RSS growth"):
        out.add_column(col, justify="right")
    timed = {name: values[1:] or values for name, values in seconds.items()}  # rep 0 warms up (AdamW state, caches)
    base = statistics.median(timed["full+system"])
    for name, (batch, _adv) in batches.items():
        med, tokens = statistics.median(timed[name]), float(batch.mask.sum())
        out.add_row(name, str(batch.prompt_width), f"{tokens:.0f}", f"{med:.1f}", f"{1000 * med / tokens:.2f}",
                    f"{med / base:.2f}", f"{peaks[name] / 2**30:.2f} GiB")  # fmt: skip
    return out


def _batch(policy, system, prompts: int, group: int):
    """P chat prompts of arith_words' train split (system turn `system`) x G fixed random completions, and
    advantages +-1 per row (N, T)."""
    import torch
    from transformers import AutoTokenizer

    from benchctl.tasks.base import render_prompt
    from benchctl.trainers.batch import pack

    task = ArithWordsTask(split="train", system_prompt=system)
    tokenizer = AutoTokenizer.from_pretrained(policy.source)
    ids = [
        tokenizer(render_prompt(tokenizer, task, p), add_special_tokens=False)["input_ids"]
        for p in task.load(limit=prompts)
    ]
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(20, 81, (prompts * group,), generator=g).tolist()
    completions = [torch.randint(10, 40000, (n,), generator=g).tolist() for n in lengths]
    batch = pack([i for i in ids for _ in range(group)], completions, policy.pad_id, "cpu")
    signs = torch.tensor([1.0 if r % 2 else -1.0 for r in range(prompts * group)])
    return batch, signs[:, None] * batch.mask


def _update(plan, policy, objective, step: int, batch, adv) -> None:
    """The trainer's update phase (`loop.update`) on `batch`, every row non-degenerate, on the policy's threads."""
    import torch

    from benchctl.trainers.device import threads
    from benchctl.trainers.loop import update
    from benchctl.trainers.runtime import PhaseTimer

    nondegenerate = torch.ones(batch.tokens.shape[0], dtype=torch.bool)  # (N,)
    with threads(policy.threads):
        update(plan.cfg, policy, objective, step + 1, batch, adv, nondegenerate, None, PhaseTimer())


def _reset_peak() -> int:
    """Reset the process's peak RSS (Linux: write 5 to /proc/self/clear_refs) and return the current RSS in bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def _peak() -> int:
    return _status("VmHWM")


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("-G", "--group-size", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.6, help="sampling temperature (the testbed's)")
    parser.add_argument("--max-tokens", type=int, default=96, help="new tokens per completion (the testbed's)")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--out", default=None, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--update-only", type=int, default=0, metavar="REPS", help="the update phase alone")
    args = parser.parse_args(argv)
    if args.update_only:
        Console(width=160).print(update_only(args.update_only, args.prompts, args.group_size))
        return 0
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="benchctl-cell-"))
    ctx, results = mp.get_context("spawn"), {}
    for name in args.arms.split(","):
        flags = {"model": "smollm2-135m", "estimator": "grpo", "seed": 7, "steps": args.steps, "save_every": 0}
        flags |= {"prompts_per_step": args.prompts, "group_size": args.group_size, "progress": False}
        flags |= {"temperature": args.temperature, "max_tokens": args.max_tokens}
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
    cols = ("rows trained", "update s/1k rollout tok", "update s/row", "cell s (16k tok)", "peak GiB", "step ratio")
    for col in ("arm", *PHASES, "step s", "tokens", *cols):
        out.add_column(col, justify="right")
    base = next(iter(results.values()))["step"]
    for name, r in results.items():
        per_k = 1000 * (r["logprobs"] + r["update"]) / r["tokens"]
        cell = r["step"] * CELL_TOKENS / r["tokens"]
        cells = [f"{r[p]:.1f}" for p in PHASES]
        per_row = r["update"] / max(r["rows"], 1.0)
        out.add_row(name, *cells, f"{r['step']:.1f}", f"{r['tokens']:.0f}", f"{r['trained']:.0%}", f"{per_k:.2f}",
                    f"{per_row:.3f}", f"{cell:.0f}", f"{r['peak_gib']:.2f}", f"{r['step'] / base:.2f}")  # fmt: skip
    return out


if __name__ == "__main__":
    sys.exit(main())
