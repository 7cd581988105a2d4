"""`benchctl eval` and `benchctl grade`: sample with the engine (or read completions), grade, write tables.

Library entry points: `run_eval(EvalConfig) -> EvalResult` and `run_grade(GradeConfig) -> EvalResult`.  Both
grade with the task's own grader (`task.grade`) and write the same tables through the same code
(`benchctl.results.tables`, run-dir layout in `benchctl.results.store`):
* per-sample parquet parts, streamed: one part per chunk of complete problems, written atomically;
* per-problem (n, c, pass@k, maj@k), and a summary per k with percentile-bootstrap CIs over problems.
Metrics: unbiased pass@k (arXiv:2107.03374 Eq. 1; spec estimators.md §8), maj@k, mean@n (`benchctl.metrics`).
Defaults follow A-GRAE's evaluation protocol (arXiv:2602.05548 App. C.2: temperature 0.6, top-p 0.95, at most
4096 new tokens, Pass@k for k in 1..256).  Resume: problems whose n samples are on disk are not sampled again.

Layering: command (`benchctl.cli`) -> this package (orchestration: `config`, `sampling` (engine, grading,
resume), `grade_file`, `outcome`, `render`) -> storage (`benchctl.results`: run-dir layout, tables, readers and
writers), which imports none of the orchestration (tested in tests/report/test_run_storage.py).
"""

from __future__ import annotations

from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.evaluation.config import EvalConfig, GradeConfig, config_record
from benchctl.evaluation.outcome import EvalResult, TaskResult, finalize_task
from benchctl.results import store
from benchctl.results.kspec import parse_ks
from benchctl.results.runs import ResolvedModel, default_out_dir, resolve_model
from benchctl.tasks import get_task

__all__ = [
    "EvalConfig",
    "EvalResult",
    "GradeConfig",
    "TaskResult",
    "config_record",
    "finalize_task",
    "parse_ks",
    "run_eval",
    "run_grade",
]


def run_eval(config: EvalConfig, engine=None) -> EvalResult:
    """Sample n completions per problem for every task, grade them, write the tables (resumable).

    `engine`: an already running `benchctl.engine.Engine` to sample from as it is (a trainer's colocated engine,
    holding the current policy's weights); `config.model` then only names the model in tables and config.json.
    """
    from benchctl.evaluation.sampling import LazyEngine, evaluate_task

    if not config.tasks:
        raise BenchctlError("no task given; e.g. --tasks math500,aime24")
    n = config.resolved_n()
    model = (
        resolve_model(config.model)
        if engine is None
        else ResolvedModel(config.model, Path(config.model).name, "engine")
    )
    out = Path(config.out) if config.out else default_out_dir(model)
    identity = {
        "model": model.path,
        "n": n,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
        "max_model_len": config.max_model_len,
    }
    tasks = [get_task(name) for name in config.tasks]  # unknown names fail before anything is written
    store.prepare_run_dir(
        out,
        config_record(
            config, n_resolved=n, model_resolved=model.path, model_source=model.source, out_resolved=str(out)
        ),
        identity,
        config.overwrite,
    )
    lazy = LazyEngine(model, config, ready=engine)
    results = [evaluate_task(task, out, model, n, config, lazy) for task in tasks]
    store.write_overall_summary(out)
    return EvalResult(out, model.name, tuple(results))


def run_grade(config: GradeConfig) -> EvalResult:
    """Grade completions from a JSON Lines file with the task's grader; same tables as `run_eval`."""
    from benchctl.evaluation.grade_file import grade_samples_file

    return grade_samples_file(config)
