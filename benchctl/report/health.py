"""Run health: `ok`, `collapsed`, `diverged` or `stalled`, with the evidence (which metric, which step, which
value), from one run's training metrics and held-out evaluations.  Pure: frames in, a label out; nothing is read
or written here (`benchctl.report.load` calls `classify` for every run; the report writes it to runs.parquet).

States and thresholds [our choices; the defaults of `Thresholds`]:
* diverged: a non-finite value (NaN or inf) in `loss/*` or `policy/grad_norm` at a step that trained rows
  (`update/rows_trained` > 0, every step when that column is missing: a step with no row to train logs no loss),
  or `policy/grad_norm` (the norm before clipping) above 100x the run's median over steps with a non-zero norm
  (at least 3 such steps).
* collapsed: held-out pass@1 of the last evaluation under a quarter of the first one (step 0 when the run was
  trained with eval_every, which evaluates the starting model; the final one is RUN/eval/final), on any task;
  or `policy/entropy` at the end (mean of the last 10% of its finite values) under 5% of its first finite value
  or under 0.001 nats per token; or the training `reward/mean` at the end (mean over the last 10% of the steps)
  under a quarter of its start (mean over the first 10%) [our addition: it needs no periodic evaluation, which
  matrix cells usually lack]; or the evaluation the report uses solves no held-out problem of the training task
  (or of its designated held-out task, `eval_task_resolved`) at its largest k (pass@16 = 0) although the
  training reward started above 0 [our addition, for the same reason].  The end and start windows hold at
  least 3 steps (`MIN_EDGE`): runs with fewer than 6 logged values of a metric are not judged on it.
* stalled: no informative group in the last quarter of the steps (at least 2): every step there has
  `acr/all` == 1 (every group all right or all wrong) or `update/rows_trained` == 0.
A run with findings of several states is labelled by the first of diverged, collapsed, stalled; the evidence
lists every finding.  A run without training metrics (a plain eval) is `ok` unless its evaluations show a collapse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

STATES = ("ok", "diverged", "collapsed", "stalled")  # after "ok": the order in which a label is chosen
MIN_EDGE = 3  # steps in the start and end windows of reward/entropy at least (one noisy step decides nothing)


def _f(default, help_text: str):
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class Thresholds:
    """Where a run stops being `ok`."""

    collapse_fraction: float = _f(0.25, "held-out pass@1 or training reward ending under this x its start")
    entropy_fraction: float = _f(0.05, "policy/entropy ending under this x its first value")
    entropy_floor: float = _f(1e-3, "policy/entropy ending under this many nats per token")
    grad_blowup: float = _f(100.0, "policy/grad_norm over this x the run's median")
    stall_fraction: float = _f(0.25, "the last fraction of the steps that must all be uninformative")
    edge_fraction: float = _f(0.1, "start and end windows (fraction of the steps, at least 1) for reward/entropy")


@dataclass(frozen=True)
class Health:
    """A run's state (one of STATES) and the evidence ('' when ok)."""

    state: str
    evidence: str


def _g(value: float) -> str:
    return f"{value:.3g}"


def _trained(m: pd.DataFrame) -> np.ndarray:
    if "update/rows_trained" in m:
        return (m["update/rows_trained"].fillna(0) > 0).to_numpy()
    return np.ones(len(m), bool)


def _nonfinite(m: pd.DataFrame) -> list[str]:
    out, trained = [], _trained(m)
    for col in [c for c in m.columns if c.startswith("loss/") or c == "policy/grad_norm"]:
        values = m[col].to_numpy(dtype=np.float64)
        bad = np.isinf(values) | (np.isnan(values) & trained)
        if bad.any():
            first = int(np.argmax(bad))
            out.append(f"{col} = {values[first]} at step {int(m['step'].iloc[first])} ({int(bad.sum())} steps)")
    return out


def _grad_blowup(m: pd.DataFrame, t: Thresholds) -> list[str]:
    if "policy/grad_norm" not in m:
        return []
    values, steps = m["policy/grad_norm"].to_numpy(dtype=np.float64), m["step"].to_numpy()
    keep = np.isfinite(values) & (values > 0)
    if keep.sum() < 3:
        return []
    median = float(np.median(values[keep]))
    hits = keep & (values > t.grad_blowup * median)
    if not hits.any():
        return []
    worst = int(np.argmax(np.where(hits, values, -np.inf)))
    return [
        f"policy/grad_norm {_g(values[worst])} at step {int(steps[worst])} = {_g(values[worst] / median)}x "
        f"the run's median {_g(median)} ({int(hits.sum())} steps over {_g(t.grad_blowup)}x)"
    ]


def _edges(m: pd.DataFrame, col: str, t: Thresholds):
    """(start mean, its steps, end mean, its steps) of the finite values of `col`, over windows of
    `edge_fraction` of them, at least MIN_EDGE; None when there are fewer than 2 x MIN_EDGE values."""
    if col not in m:
        return None
    part = m[["step", col]][np.isfinite(m[col].to_numpy(dtype=np.float64))]
    if len(part) < 2 * MIN_EDGE:
        return None
    w = max(MIN_EDGE, min(math.ceil(t.edge_fraction * len(part)), len(part) // 2))
    head, tail = part.iloc[:w], part.iloc[-w:]
    span = lambda p: f"step {int(p['step'].iloc[0])}" + (f"-{int(p['step'].iloc[-1])}" if len(p) > 1 else "")  # noqa: E731
    return float(head[col].mean()), span(head), float(tail[col].mean()), span(tail)


def _reward_collapse(m: pd.DataFrame, t: Thresholds) -> list[str]:
    edges = _edges(m, "reward/mean", t)
    if edges is None or edges[0] <= 0 or edges[2] >= t.collapse_fraction * edges[0]:
        return []
    start, start_at, end, end_at = edges
    return [f"reward/mean {_g(start)} ({start_at}) -> {_g(end)} ({end_at}), under {_g(t.collapse_fraction)}x"]


def _entropy_collapse(m: pd.DataFrame, t: Thresholds) -> list[str]:
    edges = _edges(m, "policy/entropy", t)
    if edges is None:
        return []
    first = m["policy/entropy"].dropna()
    first = float(first[np.isfinite(first)].iloc[0])
    _, _, end, end_at = edges
    if first > 0 and end < t.entropy_fraction * first:
        return [f"policy/entropy {_g(first)} (first) -> {_g(end)} ({end_at}), under {_g(t.entropy_fraction)}x"]
    if end < t.entropy_floor:
        return [f"policy/entropy {_g(end)} ({end_at}), under the floor {_g(t.entropy_floor)} nats"]
    return []


def _stall(m: pd.DataFrame, t: Thresholds) -> list[str]:
    if len(m) < 2:
        return []
    w = max(2, math.ceil(t.stall_fraction * len(m)))
    tail = m.iloc[-w:]
    why = []
    if "acr/all" in tail and (tail["acr/all"] >= 1.0 - 1e-9).all():
        why.append("acr/all = 1")
    if "update/rows_trained" in tail and (tail["update/rows_trained"] == 0).all():
        why.append("update/rows_trained = 0")
    if not why:
        return []
    steps = f"{int(tail['step'].iloc[0])}-{int(tail['step'].iloc[-1])}"
    return [f"no informative group in the last {w} steps ({steps}): {' and '.join(why)} at each"]


def _heldout_collapse(evals: pd.DataFrame, t: Thresholds) -> list[str]:
    out = []
    if evals is None or evals.empty:
        return out
    for task, part in evals[evals["step"] >= 0].sort_values("step", kind="stable").groupby("eval_task"):
        first, last = part.iloc[0], part.iloc[-1]
        if len(part) < 2 or first["step"] >= last["step"] or first["pass@1"] <= 0:
            continue
        if last["pass@1"] < t.collapse_fraction * first["pass@1"]:
            out.append(
                f"held-out pass@1 on {task} {_g(first['pass@1'])} (step {int(first['step'])}) -> "
                f"{_g(last['pass@1'])} (step {int(last['step'])}), under {_g(t.collapse_fraction)}x"
            )
    return out


def _nothing_solved(m: pd.DataFrame, final: pd.DataFrame | None, tasks: tuple[str, ...]) -> list[str]:
    """The evaluation the report uses solves no held-out problem of the training task (`tasks`: its name and its
    designated held-out task) at its largest k, although the run's training reward started above 0 (the same
    distribution: the model could solve some at first)."""
    if final is None or final.empty or not tasks or "reward/mean" not in m:
        return []
    out = []
    head = m[np.isfinite(m["reward/mean"].to_numpy(dtype=np.float64))].iloc[:MIN_EDGE]  # the first steps
    if head.empty or head["reward/mean"].mean() <= 0:
        return []
    steps = f"step {int(head['step'].iloc[0])}-{int(head['step'].iloc[-1])}"
    for task, mine in final[final["eval_task"].isin(tasks)].groupby("eval_task"):
        top = mine.loc[mine["k"].idxmax()]
        if top["pass@k"] <= 0:
            out.append(
                f"held-out pass@{int(top['k'])} on {task} = 0 in the evaluation reported (no problem solved), while "
                f"reward/mean started at {_g(head['reward/mean'].mean())} ({steps})"
            )
    return out


def classify(
    metrics: pd.DataFrame | None,
    evals: pd.DataFrame | None = None,
    thresholds: Thresholds = Thresholds(),
    final: pd.DataFrame | None = None,
    tasks: tuple[str, ...] = (),
) -> Health:
    """One run's Health from its train_metrics frame (`step` + metric columns; None for a plain eval), its
    held-out evaluations (`step`, `eval_task`, `pass@1`; step -1 for a plain eval), the evaluation the report
    uses (`final`: `eval_task`, `k`, `pass@k` means over problems) and the run's training task with its held-out
    counterpart (`tasks`: config `task` and `eval_task_resolved`)."""
    t, found = thresholds, {state: [] for state in STATES[1:]}
    if metrics is not None and len(metrics):
        m = metrics.sort_values("step", kind="stable").reset_index(drop=True)
        found["diverged"] = _nonfinite(m) + _grad_blowup(m, t)
        found["collapsed"] = _nothing_solved(m, final, tasks) + _reward_collapse(m, t) + _entropy_collapse(m, t)
        found["stalled"] = _stall(m, t)
    found["collapsed"] = _heldout_collapse(evals, t) + found["collapsed"]
    state = next((s for s in STATES[1:] if found[s]), "ok")
    return Health(state, "; ".join(f"{s}: {e}" for s in STATES[1:] for e in found[s]))


def summarize(states: Sequence[str], seeds: Sequence) -> str:
    """'ok' when every run is ok, else 'collapsed: seed 1; stalled: seeds 2, 3' (runs of one arm)."""
    bad: dict[str, list[str]] = {}
    for state, seed in zip(states, seeds):
        if state != "ok":
            name = "-" if seed is None or (isinstance(seed, float) and np.isnan(seed)) else str(int(seed))
            bad.setdefault(state, []).append(name)
    if not bad:
        return "ok"
    return "; ".join(f"{s}: seed{'s' if len(v) > 1 else ''} {', '.join(v)}" for s, v in sorted(bad.items()))
