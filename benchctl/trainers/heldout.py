"""Held-out evaluation during training: pass@k of the current policy on the run's held-out task, sampled by the
trainer's own engine through the `benchctl eval` code path (`RUN/eval/step-NNNNNN/`)."""

from __future__ import annotations

from pathlib import Path

from benchctl.results import train_run
from benchctl.trainers.plan import Plan


def evaluate(plan: Plan, engine, run: Path, step: int) -> dict[str, float]:
    """Held-out pass@k of the current policy on the run's held-out task (`Plan.eval_task`, `Plan.eval_ks`, the
    rollouts' `Plan.max_tokens`) through the `benchctl eval` code path, sampled by the training engine (which holds
    the policy's weights) into RUN/eval/step-NNNNNN/; returns its `eval/*` metrics."""
    from benchctl.evaluation import EvalConfig, run_eval

    cfg = plan.cfg
    config = EvalConfig(
        model=str(run),
        tasks=(plan.eval_task,),
        ks=plan.eval_ks,
        n=cfg.eval_n,
        temperature=cfg.eval_temperature,
        top_p=1.0,
        max_tokens=plan.max_tokens,
        seed=cfg.seed,
        limit=cfg.eval_limit,
        data_dir=cfg.data_dir,
        out=str(train_run.eval_dir(run, step)),
        progress=False,
    )
    result = run_eval(config, engine=engine)
    summary = result.tasks[0].summary.to_pydict()
    out = {f"eval/pass@{k}": v for k, v in zip(summary["k"], summary["pass_at_k"])}
    out.update({f"eval/pass@{k}_low": v for k, v in zip(summary["k"], summary["pass_at_k_low"])})
    out.update({f"eval/pass@{k}_high": v for k, v in zip(summary["k"], summary["pass_at_k_high"])})
    return out
