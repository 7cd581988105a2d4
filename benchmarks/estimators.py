"""Time one `Estimator.advantages` call of every registered estimator on 1024 groups x 16 rollouts.

Binary rewards, about half the groups mixed (the rest all-wrong or all-correct).  Median over repeats of the
mean time per call over an inner loop (CPU time of this process; wall time shown too); printed as a
rich table with ms/call and the ratio to grpo.
Targets: every estimator <= 5x grpo and <= 5 ms per call (stacked modifier chains: 5 ms only); exit code 1
when one is missed.

    .venv/bin/python benchmarks/estimators.py [--groups 1024] [--rollouts 16] [--repeats 31]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from benchctl.estimators import get_estimator, registered_names

MAX_RATIO, MAX_MS = 5.0, 5.0
# Extra configurations on slower code paths, timed beside the registered defaults.
VARIANTS = {
    "avspo(tau0=0.1)": ("avspo", {"tau0": 0.1}),  # augments every step
    "ha_dw(update=hard)": ("ha_dw", {"update": "hard"}),
    "ha_dw(base=a_grae)": ("ha_dw", {"base": "a_grae"}),
}
# A stack of two modifiers runs three estimators; it is held to the 5 ms target but not to the 5x ratio.
STACKED = {"ha_dw(base=a_grae)"}


def reward_batch(groups: int, rollouts: int, seed: int = 0) -> np.ndarray:
    """(groups, rollouts) binary rewards: ~1/2 mixed groups, ~1/4 all-wrong, ~1/4 all-correct."""
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 1.0, 0.5], size=groups, p=[0.25, 0.25, 0.5])  # (P,) success rates
    rewards = (rng.random((groups, rollouts)) < p[:, None]).astype(np.float64)  # (P, G)
    rewards[p == 0.5, 0], rewards[p == 0.5, 1] = 0.0, 1.0  # force the 0.5-groups to be mixed
    return rewards


def time_calls(cases: dict[str, tuple[str, dict]], rewards: np.ndarray, repeats: int, inner: int) -> dict:
    """Per estimator: CPU seconds per call and wall seconds per call (medians over `repeats` rounds of the mean
    over `inner` steps) and minor page faults per call (fresh heap pages = per-call allocations given back).

    Rounds interleave the estimators so that load from other processes hits all of them alike; the targets use
    CPU time (this process only), which other processes competing for the cores cannot inflate.
    """
    estimators = {label: get_estimator(name, **kw) for label, (name, kw) in cases.items()}
    for est in estimators.values():
        est.advantages(rewards)  # warm-up (caches, first-call state)
    cpu: dict[str, list[float]] = {label: [] for label in cases}
    wall: dict[str, list[float]] = {label: [] for label in cases}
    faults = dict.fromkeys(cases, 0.0)
    for _ in range(repeats):
        for name, est in estimators.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            for _ in range(inner):
                est.advantages(rewards)
            cpu[name].append((time.process_time() - start_cpu) / inner)
            wall[name].append((time.perf_counter() - start_wall) / inner)
            faults[name] += (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / (inner * repeats)
    return {name: (statistics.median(cpu[name]), statistics.median(wall[name]), faults[name]) for name in cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--inner", type=int, default=20)
    args = parser.parse_args(argv)
    rewards = reward_batch(args.groups, args.rollouts)
    cases = {name: (name, {}) for name in registered_names()} | VARIANTS
    times = time_calls(cases, rewards, args.repeats, args.inner)
    table = Table(title=f"Estimator.advantages on {args.groups} groups x {args.rollouts} rollouts (median)")
    for column in ("estimator", "CPU ms/call", "x grpo", "wall ms/call", "page faults/call", "ok"):
        table.add_column(column, justify="left" if column == "estimator" else "right")
    failed = []
    for name, (cpu, wall, faults) in times.items():
        ms, ratio = cpu * 1e3, cpu / times["grpo"][0]
        ok = ms <= MAX_MS and (ratio <= MAX_RATIO or name in STACKED)
        failed += [] if ok else [name]
        table.add_row(
            name, f"{ms:.3f}", f"{ratio:.2f}", f"{wall * 1e3:.3f}", f"{faults:.1f}", "yes" if ok else "[red]NO[/red]"
        )
    console = Console(width=max(100, Console().width))
    console.print(table)
    if failed:
        console.print(f"[red]missed the targets (<= {MAX_MS} ms and <= {MAX_RATIO}x grpo): {', '.join(failed)}")
        return 1
    console.print(f"all estimators within {MAX_MS} ms and {MAX_RATIO}x grpo per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
