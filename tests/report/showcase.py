"""A realistic results folder for looking at the report: several estimators x group sizes x seeds, evaluated on a
token cadence on two tasks, per-step training metrics with each estimator's own diagnostics (HA-DW's anchor,
AVSPO's tau, OAR's `oar/*`), one collapsed and one stalled run, and a claims file.  Written through the storage
layer only (no trainer, no engine); `python -m tests.report.showcase DIR` writes one and its report."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchctl.report.compute import scalerl_curve
from benchctl.results.index import index_row, write_index
from benchctl.results.runinfo import write_run_config
from benchctl.results.train_run import TRAIN_KIND, eval_dir, mark_latest_checkpoint, write_train_metrics
from tests.report.fixtures import record, train_config, write_eval

# estimator -> (asymptote on arith, tokens per step); math500 is harder by a fixed factor
ARMS = {"grpo": (0.50, 2_000), "ha_dw": (0.68, 2_000), "avspo": (0.56, 2_400), "oar": (0.51, 1_800)}
TASKS = {"arith": 1.0, "math500": 0.6}
CLAIMS = """claims:
  - {paper: '2601.08521', claim: HA-DW improves GRPO, arm: ha_dw, baseline: grpo, k: 1, direction: greater,
     paper_effect: '+2.1 points', eval_task: arith}
  - {paper: '2510.00000', claim: AVSPO keeps pass@8, arm: avspo, baseline: grpo, k: 8, direction: at_least,
     margin: 0.02, eval_task: arith}
  - {paper: '2601.08521', claim: at 7B, arm: ha_dw, baseline: grpo, testbed: needs a 7B model}
"""


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p):
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def _diagnostics(est: str, step: int, reward: float, rng) -> dict[str, float]:
    if est == "ha_dw":
        return {"est/anchor": reward + 0.03 * rng.normal(), "est/anchor_sigma": 0.2 / np.sqrt(step)}
    if est == "avspo":
        return {"est/tau": 0.5 + 0.3 * np.exp(-step / 20), "est/virtual_k": float(rng.integers(0, 3))}
    if est == "oar":
        return {"oar/reshaped_frac": 0.6 + 0.1 * rng.normal(), "oar/no_span_frac": 0.05 * rng.random()}
    return {}


def _metric_rows(est: str, asym: float, tokens: int, steps: int, fault: str | None, rng) -> list[dict]:
    rows = []
    for step in range(1, steps + 1):
        reward = float(scalerl_curve(np.array([step * tokens]), 0.1, asym, 1.5, 20_000)[0]) + 0.04 * rng.normal()
        if fault == "collapsed" and step > steps * 0.6:
            reward = 0.01
        wrong, right = max(0.0, 0.5 - reward) * 0.8, reward**2 * 0.5
        if fault == "stalled" and step > steps * 0.7:
            wrong, right = 0.6, 0.4
        rows.append(
            {
                "step": step,
                "reward/mean": reward,
                "acr/all": wrong + right,
                "acr/all_wrong": wrong,
                "acr/all_correct": right,
                "loss/total": 0.1 * rng.normal(),
                "policy/grad_norm": abs(1 + 0.2 * rng.normal()),
                "policy/entropy": 0.9 * np.exp(-step / steps) + 0.02 * rng.random(),
                "response/length_mean": 80 + 40 * step / steps + 5 * rng.normal(),
                "time/rollout": 2.0,
                "time/update": 1.0,
                "time/step": 3.5,
                "rollout/tokens": tokens,
                "rollout/tokens_total": tokens * step,
                "rollout/samples_total": 8 * step,
                **_diagnostics(est, step, reward, rng),
            }
        )
    return rows


def _verdicts(rng, p: float, difficulty: np.ndarray, seed_offset: float, samples: int) -> dict[str, list[bool]]:
    probs = _sigmoid(_logit(p) + difficulty + seed_offset)  # (P,)
    return {f"q{i}": list(rng.random(samples) < q) for i, q in enumerate(probs)}


def _write_run(run: Path, config: dict, asym: float, tokens: int, fault, steps: int, every: int, problems: int):
    est, seed = config["estimator"], config["seed"]
    rng = np.random.default_rng([seed, config["group_size"], len(est)])
    write_run_config(run, TRAIN_KIND, record(config))
    write_train_metrics(run, _metric_rows(est, asym, tokens, steps, fault, rng))
    mark_latest_checkpoint(run, steps)
    offset = 0.08 * rng.normal()
    for task, scale in TASKS.items():
        difficulty = np.random.default_rng(len(task)).normal(0, 1.0, problems)  # shared by every run
        for step in [*range(0, steps, every), None]:
            at = steps if step is None else step
            p = float(scalerl_curve(np.array([at * tokens]), 0.1, asym * scale, 1.5, 20_000)[0])
            if fault == "collapsed" and at > steps * 0.6:
                p = 0.02
            write_eval(eval_dir(run, step), task, _verdicts(rng, p, difficulty, offset, 8), model=run.name, seed=seed)


def write_showcase(root: Path, seeds: int = 5, group_sizes=(4, 8), steps: int = 60, every: int = 10, problems=60):
    """ROOT/results (runs + index.parquet) and ROOT/claims.yaml; returns (results, claims)."""
    results, rows = Path(root) / "results", []
    faults = {("avspo", group_sizes[-1], 2): "collapsed", ("oar", group_sizes[0], 1): "stalled"}
    for est, (asym, tokens) in ARMS.items():
        for g in group_sizes:
            for seed in range(seeds):
                config = {**train_config(est, seed, group_size=g), "steps": steps}
                run = results / "runs" / f"{est}-g{g}-s{seed}"
                fault = faults.get((est, g, seed))
                _write_run(run, config, asym + 0.01 * (g == 8), tokens * g // 4, fault, steps, every, problems)
                rows.append(index_row(results, run, config, "done"))
    write_index(results, rows)
    claims = Path(root) / "claims.yaml"
    claims.write_text(CLAIMS)
    return results, claims


if __name__ == "__main__":
    from benchctl.report import ReportConfig, build_report

    root = Path(sys.argv[1])
    results, claims = write_showcase(root)
    build_report(ReportConfig(inputs=(str(results),), out=str(root / "report"), claims=str(claims)))
    print(root / "report" / "report.html")
