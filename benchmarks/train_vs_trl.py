"""Step time and phase breakdown of `benchctl train` against TRL's `GRPOTrainer` (benchmark 8a, 8c).

Same model, task (the train split of arith; of arith_chat for smollm2), G, prompts per step, max new tokens, learning
rate, temperature 1.0, top-p 1.0, no KL, clip 0.2/0.2, gradient clipping 1.0, constant learning rate, GRPO advantages
and the same loss aggregation (benchctl's grpo default seq-mean-token-mean = TRL `loss_type="grpo"`). Workloads:

    tiny   the embedded tiny model (0.8M parameters), 8 prompts x G=8, 8 new tokens, lr 5e-4
    25m    a locally built ~25M-parameter model (`benchctl.models.tiny` builder: width 512, 8 layers, 16/8 heads,
           MLP 1536: 25.3M parameters; warm start: 400 SFT steps of 32 sequences at lr 1e-3, built once into the
           benchctl cache, about 5-15 min on 2 CPU cores), so that groups are mostly mixed,
           16 prompts x G=8, up to 64 new tokens, lr 1e-5
    smollm2    SmolLM2-135M-Instruct (`--model smollm2-135m`, 134.5M parameters, fp32) on arith_chat, its chat
           template applied by both sides (TRL's conversational prompts), 8 prompts x G=8, up to 64 new tokens, lr 1e-6;
           TRL accumulates 4 micro-batches of 16 rows into its one optimizer step (both sides fit in 24 GB at once)

TRL runs its fastest working configuration on this CPU: fp32 (bf16=False), gradient_checkpointing=False,
use_vllm=False (plain `transformers` generate, the only generation backend that works here without a GPU
server), torch's default thread count. benchctl runs through its library API
(`train(build_config(flag_values=...))`), its per-phase `time/*` read from `result.metrics`; TRL's phases come
from its own profiling contexts (generate, rewards, per-token log-probs inside the loss) and a callback's wall
clock per optimizer step (generation + scoring + loss + backward + optimizer step).

Each side runs in its own spawned process (vLLM pins torch to one thread in the process that imports it, which
must not slow TRL). The two processes are gated step by step: side A runs one optimizer step while side B
waits, then B runs one while A waits, alternating which goes first; load from other processes therefore hits
both alike and the two never compete for the cores. The first `--warmup` steps of each side are left out;
medians over the rest. Printed: per-phase medians, step-time ratio TRL/benchctl, the ACR (fraction of
degenerate groups) of both sides, and weight sync as a fraction of benchctl's step time (target < 5%).
Targets: >= 2x faster on 25m and smollm2, not slower on tiny (exit code 1 when a ratio misses).

    .venv/bin/pip install trl   # for this benchmark only; not a benchctl dependency
    .venv/bin/python benchmarks/train_vs_trl.py [--workloads tiny,25m] [--steps 12] [--warmup 2] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchctl.models.tiny import INFO_FILE

TRL_CONFIG = "TRL GRPOTrainer: fp32 (bf16=False), gradient_checkpointing=False, use_vllm=False (transformers generate)"
PHASES = ("rollout", "reward", "advantage", "logprobs", "update", "sync", "other", "step")


@dataclass(frozen=True)
class Workload:
    name: str
    prompts: int
    group: int
    max_tokens: int
    lr: float
    model_options: dict  # benchctl.models.cached_tiny_model options ({} = the embedded default)
    target: float  # TRL step time / benchctl step time must be >= this
    model: str | None = None  # a --model name (smollm2-135m) instead of a tiny build
    task: str = "arith"  # trained on its train split by both sides
    trl_accumulation: int = 1  # TRL micro-batches per optimizer step (same update, 1/k of the activations)


BIG = dict(
    hidden_size=512,
    num_layers=8,
    num_heads=16,
    num_kv_heads=8,
    intermediate_size=1536,
    sft_steps=400,
    batch_size=32,
    lr=1e-3,
)
WORKLOADS = {
    "tiny": Workload("tiny", 8, 8, 8, 5e-4, {}, 1.0),
    "25m": Workload("25m", 16, 8, 64, 1e-5, BIG, 2.0),
    "smollm2": Workload(
        "smollm2", 8, 8, 64, 1e-6, {}, 2.0, model="smollm2-135m", task="arith_chat", trl_accumulation=4
    ),
}


def model_path(w: Workload) -> str:
    """The workload's model folder (built or converted into the benchctl cache on first use)."""
    from benchctl.models import cached_tiny_model
    from benchctl.results.runs import resolve_model

    return resolve_model(w.model).path if w.model else str(cached_tiny_model(**w.model_options))


def describe(w: Workload) -> str:
    """One line on the workload's model: parameters and warm start (tiny builds) or source (a named model)."""
    if w.model:
        from benchctl.results.runs import resolve_model

        source = resolve_model(w.model).source or {}
        return f"{w.model}: {source.get('source', '?')} {source.get('file', '')} ({source.get('weights', '')})"
    info = json.loads((Path(model_path(w)) / INFO_FILE).read_text())
    return (
        f"{w.name}: {info['parameters']:,} parameters, SFT warm start {info['sft/steps']} steps "
        f"(last loss {info['sft/last_loss']:.3f}, built once in {info['build_seconds']:.0f} s)"
    )


# ---- benchctl side ----------------------------------------------------------------------------------------


class _Gate:
    """A trainer display that hands control back to the parent before the first step and after each step."""

    def __init__(self, conn) -> None:
        self.conn = conn

    def __enter__(self):
        self.conn.send(("ready", None))
        self.conn.recv()
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, step: int, metrics) -> None:
        self.conn.send(("step", step))
        self.conn.recv()

    def warn(self, text: str) -> None:
        pass


def benchctl_worker(spec: dict, conn) -> None:
    from benchctl.quiet import cli_session
    from benchctl.trainers import build_config, train

    w, steps = Workload(**spec["workload"]), spec["steps"]
    with tempfile.TemporaryDirectory() as out, cli_session(verbose=False, progress=False):
        cfg = build_config(
            flag_values={
                "model": spec["model"],
                "task": w.task,
                "group_size": w.group,
                "prompts_per_step": w.prompts,
                "steps": steps,
                "lr": w.lr,
                "max_tokens": w.max_tokens,
                "seed": 0,
                "eval_every": 0,
                "save_every": 0,
                "out": f"{out}/run",
                "progress": False,
            }
        )
        result = train(cfg, display=_Gate(conn))
        rows = []
        for m in result.metrics:
            row = {p: m.get(f"time/{p}", 0.0) for p in PHASES if p != "other"}
            row["other"] = row["step"] - sum(v for k, v in row.items() if k != "step")
            row["acr"], row["reward/mean"] = m["acr/all"], m["reward/mean"]
            rows.append(row)
    conn.send(("done", rows))


# ---- TRL side ---------------------------------------------------------------------------------------------


def trl_worker(spec: dict, conn) -> None:
    import torch
    import trl.extras.profiling as profiling
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    from benchctl.tasks import get_task

    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", message="TRL currently supports vLLM")
    w, steps = Workload(**spec["workload"]), spec["steps"]
    events: list[tuple[str, float, float]] = []  # (TRL profiling name, start, end) in the current step

    def record(self, duration: float) -> None:  # TRL's own profiling contexts
        end = time.perf_counter()
        events.append((self.name.split(".", 1)[-1], end - duration, end))

    profiling.ProfilingContext._log_metrics = record
    task = get_task(w.task, split="train")
    problems = {p.id: p for p in task.load()}
    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    chat = bool(getattr(tokenizer, "chat_template", None))  # TRL's conversational format: it applies the template
    prompt = task.messages if chat else task.prompt_text
    data = Dataset.from_list([{"prompt": prompt(p), "pid": p.id} for p in problems.values()])

    def reward(prompts, completions, pid, **_):
        texts = [c[-1]["content"] if chat else c for c in completions]
        return [float(v.correct) for v in task.grade([(problems[i], c) for i, c in zip(pid, texts)])]

    rows: list[dict] = []

    class Gate(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            conn.send(("ready", None))
            conn.recv()
            events.clear()
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            total = time.perf_counter() - self.start
            rows.append(trl_phases(events, total, trainer._metrics["train"]))
            events.clear()
            conn.send(("step", state.global_step))
            conn.recv()
            self.start = time.perf_counter()

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-bench-"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        use_vllm=False,
        per_device_train_batch_size=w.prompts * w.group // w.trl_accumulation,
        gradient_accumulation_steps=w.trl_accumulation,  # one generation batch of prompts x G per optimizer step
        num_generations=w.group,
        max_completion_length=w.max_tokens,
        learning_rate=w.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=0.2,
        epsilon_high=0.2,
        loss_type="grpo",
        scale_rewards="group",
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        max_steps=steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
        log_level="error",
    )
    model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32)
    trainer = GRPOTrainer(
        model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tokenizer, callbacks=[Gate()]
    )
    trainer.remove_callback(PrinterCallback)  # TRL's per-step log dicts on stdout
    trainer.train()
    conn.send(("done", rows))


def trl_phases(events: list[tuple[str, float, float]], total: float, metrics: dict) -> dict[str, float]:
    """One TRL step's phases from its profiling events: rollout = transformers.generate, reward =
    _calculate_rewards, logprobs = per-token log-probs computed while preparing the batch (old/reference policy;
    none with beta=0 and one iteration), advantage = the rest of batch preparation (tokenising, padding,
    advantages, metrics), update = everything after it (loss forward, backward, optimizer step)."""

    def total_of(name, within=None):
        return sum(e - s for n, s, e in events if n == name and (within is None or within[0] <= s <= within[1]))

    prep = next(((s, e) for n, s, e in events if n == "_prepare_inputs"), (0.0, 0.0))
    rollout, reward = total_of("transformers.generate"), total_of("_calculate_rewards")
    logprobs = total_of("_get_per_token_logps_and_entropies", within=prep)
    advantage = max(prep[1] - prep[0] - rollout - reward - logprobs, 0.0)
    return {
        "rollout": rollout,
        "reward": reward,
        "advantage": advantage,
        "logprobs": logprobs,
        "update": total - (prep[1] - prep[0]),
        "sync": 0.0,
        "other": 0.0,
        "step": total,
        "acr": metrics["frac_reward_zero_std"][-1],
        "reward/mean": metrics["reward"][-1],
    }


# ---- driver -----------------------------------------------------------------------------------------------


class WorkerDied(RuntimeError):
    """A side's process ended without its result (killed, out of memory, a crash)."""


def _receive(name: str, proc, conn):
    """The next message from side `name`; WorkerDied when its process is gone (the pipe's far end closes with it)."""
    try:
        return conn.recv()
    except EOFError:
        proc.join(timeout=10)
        code = proc.exitcode
        why = "killed by SIGKILL: out of memory?" if code == -9 else f"exit code {code}"
        raise WorkerDied(f"the {name} worker died ({why}); no result for this workload") from None


def run_pair(w: Workload, steps: int) -> dict[str, list[dict]]:
    """Both sides on workload `w`, gated step by step; returns per-side metric rows (one per step). Raises
    WorkerDied, after stopping the other side, when either process dies."""
    ctx = mp.get_context("spawn")
    spec = {"workload": asdict(w), "model": model_path(w), "steps": steps}
    sides = {}
    for name, target in (("benchctl", benchctl_worker), ("TRL", trl_worker)):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=target, args=(spec, child), daemon=True)
        proc.start()
        child.close()  # the child's end lives in the child only: its death reads as EOF here, not a hang
        sides[name] = (proc, parent)
    try:
        for name, (proc, conn) in sides.items():  # both set up (concurrently), then wait at the gate
            kind, _ = _receive(name, proc, conn)
            assert kind == "ready", (name, kind)
        results: dict[str, list[dict]] = {}
        for step in range(steps + 1):  # the extra round collects the final "done" messages
            order = list(sides) if step % 2 == 0 else list(sides)[::-1]
            for name in order:
                proc, conn = sides[name]
                if name in results:
                    continue
                conn.send("go")
                kind, payload = _receive(name, proc, conn)
                if kind == "done":
                    results[name] = payload
        for name, (proc, conn) in sides.items():
            if name not in results:
                conn.send("go")
                results[name] = _receive(name, proc, conn)[1]
            proc.join(timeout=120)
    except (WorkerDied, BrokenPipeError):
        for proc, _ in sides.values():
            proc.kill()
        raise
    return results


def medians(rows: list[dict], warmup: int) -> dict[str, float]:
    kept = rows[warmup:] or rows
    return {k: statistics.median(r[k] for r in kept) for k in kept[0]}


def report(console: Console, w: Workload, results: dict, warmup: int) -> tuple[float, float]:
    """Print the phase table of workload `w`; returns (TRL/benchctl step ratio, sync fraction of benchctl)."""
    med = {name: medians(rows, warmup) for name, rows in results.items()}
    n = len(results["benchctl"]) - warmup
    table = Table(
        title=f"{w.name}: {w.prompts} prompts x G={w.group}, max {w.max_tokens} tokens, lr {w.lr:g}; "
        f"median s of {n} gated steps (after {warmup} warm-up)"
    )
    for col in ("side", *PHASES, "ACR", "reward/mean"):
        table.add_column(col, justify="right")
    for name, m in med.items():
        table.add_row(name, *(f"{m[p]:.3f}" for p in PHASES), f"{m['acr']:.2f}", f"{m['reward/mean']:.3f}")
    console.print(table)
    ratio = med["TRL"]["step"] / med["benchctl"]["step"]
    fractions = [r["sync"] / r["step"] for r in results["benchctl"][warmup:]]
    sync = statistics.median(fractions)
    ok = "ok" if ratio >= w.target else "[red]MISSED[/red]"
    console.print(
        f"{w.name}: TRL / benchctl step time = {ratio:.2f}x (target >= {w.target:g}x) {ok}; "
        f"ACR benchctl {med['benchctl']['acr']:.2f}, TRL {med['TRL']['acr']:.2f}; "
        f"benchctl sync = {100 * sync:.1f}% of step (target < 5%) "
        f"{'ok' if sync < 0.05 else '[red]MISSED[/red]'}"
    )
    return ratio, sync


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="tiny,25m", help="comma-separated: " + ", ".join(WORKLOADS))
    parser.add_argument("--steps", type=int, default=12, help="optimizer steps per side (incl. warm-up)")
    parser.add_argument("--warmup", type=int, default=2, help="first steps of each side left out")
    parser.add_argument("--quick", action="store_true", help="6 steps, 1 warm-up")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("trl") is None:
        print("TRL is not installed; for this benchmark only: .venv/bin/pip install trl", file=sys.stderr)
        return 2
    names = [x.strip() for x in args.workloads.split(",") if x.strip()]
    unknown = [x for x in names if x not in WORKLOADS]
    if unknown:
        print(f"unknown workload {unknown[0]!r}; choose from: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    steps, warmup = (6, 1) if args.quick else (args.steps, args.warmup)
    console = Console(width=max(130, Console().width))
    console.print(TRL_CONFIG)
    missed = []
    for name in names:
        w = WORKLOADS[name]
        begin = time.perf_counter()
        console.print(describe(w))
        try:
            results = run_pair(w, steps)
        except WorkerDied as err:
            console.print(f"[red]{name}: {err}[/red]")
            missed.append(name)
            continue
        ratio, _ = report(console, w, results, warmup)
        console.print(f"({name}: {time.perf_counter() - begin:.0f} s incl. start-up of both sides)")
        missed += [] if ratio >= w.target else [name]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
