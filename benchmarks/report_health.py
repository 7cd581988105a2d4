"""How often run health calls a run `collapsed` (or `never_learned`), on simulated runs with their own noise.

    python benchmarks/report_health.py [--reps 1000] [--seed 0]     (1,000 reps a case: about 2 min on one core)

Each replication builds one run's train_metrics (and, where the case has them, its periodic held-out evaluations
and its final evaluation) and labels it with `benchctl.report.health.classify`, the report's own call.  Run it with
PYTHONPATH set to another checkout to measure that checkout's rule on the same runs (same seed, same draws).

Training reward: each step samples 32 prompts x 8 rollouts (256 rows, the demo's shape) and logs the mean of the
0/1 rewards.  `binomial`: every prompt solved with the step's expected reward p; `prompt mix`: each prompt's own
rate drawn from Beta(p kappa, (1 - p) kappa), kappa = 2 (most prompts near 0, a few often solved, as on arith with
a small model: the step mean then wobbles about 3x the binomial sd).  acr/all is the step's fraction of groups
all right or all wrong.  Held-out pass@1 (demo-like): step 0 and every 10 steps, the level plus Gaussian wobble
(sd 0.03 or 0.04: the policy's own drift between evaluations, larger than the sampling sd of 200 problems x 4).
Never learned: expected reward 0.004 at every step (prompt mix), and a final evaluation of 200 problems x 16
samples whose per-problem rates are Beta(0.001 kappa, 0.999 kappa), kappa = 0.5 (held-out problems a little
harder than the training prompts): pass@16 = 0, no problem solved, in about 63% of the runs.

Cases `flat ...` and `never learned` are false-collapse rates (target <= 5%); `rise -> collapse` and `late
collapse` are detection rates (target 100%).  `arm of 5` is the chance that an arm of 5 such runs gets at least one
false `collapsed` (1 - (1 - rate)^5, with the rate measured here).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from benchctl.report.health import classify

PROMPTS, GROUP, KAPPA = 32, 8, 2.0
FINAL_PROBLEMS, FINAL_N, FINAL_RATE, FINAL_KAPPA = 200, 16, 0.001, 0.5


def rewards(rng, expected: np.ndarray, reps: int, mix: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-step mean reward and acr/all of `reps` runs: expected (T,) -> (reps, T) each (32 prompts x 8 rollouts)."""
    p = np.broadcast_to(expected[None, :, None], (reps, len(expected), PROMPTS))  # (R, T, 32)
    if mix:
        a = np.maximum(p * KAPPA, 1e-9)
        p = rng.beta(a, np.maximum((1 - p) * KAPPA, 1e-9))
    right = rng.binomial(GROUP, p)  # (R, T, 32) rollouts right per group
    return right.mean(axis=2) / GROUP, ((right == 0) | (right == GROUP)).mean(axis=2)


def metrics(rng, reward: np.ndarray, acr: np.ndarray) -> pd.DataFrame:
    """One run's train_metrics: its reward/mean and acr/all, healthy entropy, grad norm, loss and rows."""
    n = len(reward)
    return pd.DataFrame(
        {
            "step": np.arange(1, n + 1),
            "reward/mean": reward,
            "acr/all": acr,
            "policy/entropy": np.linspace(1.0, 0.8, n),
            "policy/grad_norm": np.exp(rng.normal(0, 0.3, n)),
            "loss/total": np.full(n, -0.01),
            "update/rows_trained": np.full(n, float(PROMPTS * GROUP)),
        }
    )


def held_out(rng, level: np.ndarray, wobble: float, every: int = 10) -> pd.DataFrame:
    """Held-out pass@1 at steps 0, every, 2 every, ...: level (E,) plus Gaussian wobble, clipped to [0, 1]."""
    values = np.clip(level + rng.normal(0, wobble, len(level)), 0, 1)
    return pd.DataFrame({"step": np.arange(len(level)) * every, "eval_task": "arith", "pass@1": values})


def final_eval(rng, rate: float) -> pd.DataFrame:
    """A final evaluation of 200 problems x 16 samples (per-problem rates Beta(rate kappa, ...)): pass@1, pass@16."""
    p = rng.beta(rate * FINAL_KAPPA, (1 - rate) * FINAL_KAPPA, FINAL_PROBLEMS)
    right = rng.binomial(FINAL_N, p)
    return pd.DataFrame({"eval_task": "arith", "k": [1, 16], "pass@k": [right.mean() / FINAL_N, (right > 0).mean()]})


EVAL_PROBLEMS, EVAL_N, EVAL_KAPPA = 200, 4, 4.0  # the demo's periodic evaluation: 200 problems x 4 samples


def measured(rng, level: np.ndarray, every: int = 10) -> pd.DataFrame:
    """Held-out evaluations as the report loads them: at each point 200 problems x 4 samples, each problem's rate
    Beta(p kappa, (1 - p) kappa) around the point's level p (kappa 4), its pass@1 the mean of c / n and its
    `pass@1_se` from the same counts (computed here as `benchctl.report.load` does).  The policy's own rate per
    problem is redrawn at every point (its drift between evaluations): the curve wobbles by more than its se."""
    rows = []
    for i, p in enumerate(level):
        rate = rng.beta(max(p * EVAL_KAPPA, 1e-9), max((1 - p) * EVAL_KAPPA, 1e-9), EVAL_PROBLEMS)
        c, n = rng.binomial(EVAL_N, rate), np.full(EVAL_PROBLEMS, EVAL_N)
        se = np.sqrt((c / n * (1 - c / n) / (n - 1)).sum()) / EVAL_PROBLEMS  # the binomial se of the mean of c / n
        rows.append({"step": i * every, "eval_task": "arith", "pass@1": c.mean() / EVAL_N, "pass@1_se": se})
    return pd.DataFrame(rows)


def measured_case(level: np.ndarray, steps: int = 50):
    """A case judged on its measured periodic evaluations (the training reward flat at the curve's mean)."""

    def run(rng, reps):
        r, acr = rewards(rng, np.full(steps, float(level.mean())), reps, True)
        for i in range(reps):
            yield classify(metrics(rng, r[i], acr[i]), measured(rng, level)).state

    return run


def rise_fall(steps: int, low: float, peak: float, end: float) -> np.ndarray:
    """Expected reward rising linearly low -> peak over the first half, falling peak -> end over the second."""
    half = steps // 2
    return np.r_[np.linspace(low, peak, half), np.linspace(peak, end, steps - half)]


def late(steps: int, low: float, peak: float, end: float, fraction: float) -> np.ndarray:
    """Expected reward rising low -> peak, then at `end` over the last ceil(fraction x steps) steps."""
    tail = int(np.ceil(fraction * steps))
    return np.r_[np.linspace(low, peak, steps - tail), np.full(tail, end)]


def reward_case(expected: np.ndarray, mix: bool, final_rate: float | None = None):
    """A case judged on its training reward alone (no periodic evaluation), with a final evaluation if rated."""

    def run(rng, reps):
        r, acr = rewards(rng, expected, reps, mix)
        for i in range(reps):
            final = final_eval(rng, final_rate) if final_rate is not None else None
            yield classify(metrics(rng, r[i], acr[i]), final=final, tasks=("arith",)).state

    return run


def held_out_case(level: np.ndarray, wobble: float, steps: int):
    """A case judged on its periodic held-out pass@1 (the training reward flat at the curve's mean)."""

    def run(rng, reps):
        r, acr = rewards(rng, np.full(steps, float(level.mean())), reps, True)
        for i in range(reps):
            yield classify(metrics(rng, r[i], acr[i]), held_out(rng, level, wobble)).state

    return run


def cases() -> dict[str, tuple[str, object]]:
    """name -> (what counts: 'false' or 'detect', the generator)."""
    out = {}
    for mix in (False, True):
        for level in (0.06, 0.10):
            for steps in (50, 100):
                name = f"flat reward {level:.2f}, {steps} steps, {'prompt mix' if mix else 'binomial'}"
                out[name] = ("false", reward_case(np.full(steps, level), mix))
    for level in (0.10, 0.15):
        for wobble in (0.03, 0.04):
            out[f"flat held-out {level:.2f}, wobble {wobble}, 6 evals"] = (
                "false",
                held_out_case(np.full(6, level), wobble, 50),
            )
    for steps in (50, 100):
        out[f"never learned 0.004, {steps} steps"] = ("false", reward_case(np.full(steps, 0.004), True, FINAL_RATE))
    for steps in (50, 100, 200):
        out[f"rise 0.1 -> 0.4 -> 0.05, {steps} steps"] = ("detect", reward_case(rise_fall(steps, 0.1, 0.4, 0.05), True))
    out["held-out 0.3 -> 0.6 -> 0.12, 21 evals"] = ("detect", held_out_case(rise_fall(21, 0.3, 0.6, 0.12), 0.03, 200))
    for steps in (50, 100, 200):
        out[f"late collapse 3% of {steps} steps"] = ("detect", reward_case(late(steps, 0.3, 0.6, 0.05, 0.03), True))
    last = np.r_[np.linspace(0.3, 0.6, 20), 0.05]
    out["late held-out: last of 21 evals"] = ("detect", held_out_case(last, 0.03, 200))
    return out | issue41_cases()


def issue41_cases() -> dict[str, tuple[str, object]]:
    """Issue 41 item 6: 6-point held-out curves as the report loads them (`measured`), a run stuck under the
    never-learned threshold, and a 45% decline (not a collapse: the end at 0.55x the peak)."""
    out = {}
    for low, peak, end in ((0.12, 0.30, 0.05), (0.3, 0.6, 0.12), (0.2, 0.4, 0.1)):
        out[f"measured {low} -> {peak} -> {end}, 6 evals"] = ("detect", measured_case(rise_fall(6, low, peak, end)))
    out["measured 0.30 -> 0.30 -> 0.05 (last eval), 6 evals"] = ("detect", measured_case(np.r_[np.full(5, 0.3), 0.05]))
    for level in (0.05, 0.10, 0.30):
        out[f"measured flat {level:.2f}, 6 evals"] = ("false", measured_case(np.full(6, level)))
    out["measured 0.2 -> 0.4 -> 0.22 (45% decline), 6 evals"] = ("false", measured_case(rise_fall(6, 0.2, 0.4, 0.22)))
    out["measured 0.10 -> 0.20 -> 0.11 (45% decline), 6 evals"] = ("false", measured_case(rise_fall(6, 0.1, 0.2, 0.11)))
    for steps in (50, 100):
        out[f"stuck at 0.015, {steps} steps"] = ("false", reward_case(np.full(steps, 0.015), True, FINAL_RATE))
    for steps in (50, 100, 200):
        decline = rise_fall(steps, 0.2, 0.5, 0.275)
        out[f"reward 0.2 -> 0.5 -> 0.275 (45% decline), {steps} steps"] = ("false", reward_case(decline, True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only", default="", help="run only the cases whose name contains one of these (comma-separated)"
    )
    args = parser.parse_args()
    print(f"{args.reps} runs a case, seed {args.seed}")
    print(f"{'case':<46} {'kind':<7} {'collapsed':>9} {'never':>6} {'other':>6} {'arm of 5':>8}")
    for i, (name, (kind, run)) in enumerate(cases().items()):
        if not any(part in name for part in args.only.split(",")):
            continue
        start = time.time()
        states = pd.Series(list(run(np.random.default_rng([args.seed, i]), args.reps)))
        collapsed, never = (states == "collapsed").mean(), (states == "never_learned").mean()
        other = 1 - collapsed - never - (states == "ok").mean()
        arm = 1 - (1 - collapsed) ** 5 if kind == "false" else np.nan
        print(
            f"{name:<46} {kind:<7} {100 * collapsed:>8.1f}% {100 * never:>5.1f}% {100 * other:>5.1f}% "
            f"{'' if np.isnan(arm) else f'{100 * arm:.1f}%':>8}  ({time.time() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
