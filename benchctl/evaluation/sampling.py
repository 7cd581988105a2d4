"""The sampling side of `run_eval`: resume bookkeeping, streamed generation, per-chunk grading and writing.

Memory is bounded by one chunk: `chunk_samples // n` prompts (at least one) are generated, graded and written
as one parquet part before the next chunk starts, and the summary tables are built by streaming the parts back
(`tables.collect_problem_stats`), keeping only the first max-k extracted answers per problem.
The engine is built lazily: a fully resumed run (every problem already on disk) never loads the model.
Grading (`graded_table`: the task's own batched grader) happens here too, so the storage layer never grades.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from benchctl.errors import BenchctlError
from benchctl.evaluation.outcome import TaskResult, finalize_task
from benchctl.results import store
from benchctl.results.runs import ResolvedModel
from benchctl.results.tables import SampleRow, sample_table


class LazyEngine:
    """Builds `benchctl.engine.Engine` on first use, so a fully resumed run never starts vLLM."""

    def __init__(self, model: ResolvedModel, config, ready=None) -> None:
        self.model, self.config, self._engine = model, config, ready  # ready: an Engine already running

    def get(self):
        if self._engine is None:
            from benchctl.engine import Engine

            self._engine = Engine(self.model.path, seed=self.config.seed, max_model_len=self.config.max_model_len)
        return self._engine


def _sampling(config, n: int):
    from benchctl.engine import SamplingConfig

    return SamplingConfig(
        n=n, temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens, seed=config.seed
    )


def graded_table(
    task, rows: Sequence[SampleRow], problems: Sequence, *, workers: int | None, timeout: float
) -> pa.Table:
    """Grade `rows` (row i answers `problems[i]`) with the task's own batched grader -> a per-sample table."""
    verdicts = task.grade([(p, r.completion) for p, r in zip(problems, rows)], workers=workers, timeout=timeout)
    return sample_table(rows, verdicts)


def write_graded_part(task, parts: store.SampleParts, groups: list, config) -> None:
    """groups: [(problem, [SampleRow, ...])] -> one part with every sample graded by `task.grade`
    (shared by `benchctl eval` and `benchctl grade`)."""
    rows = [row for _, problem_rows in groups for row in problem_rows]
    owners = [problem for problem, problem_rows in groups for _ in problem_rows]
    parts.append(graded_table(task, rows, owners, workers=config.grade_workers, timeout=config.grade_timeout))


def _grade_and_write(task, parts: store.SampleParts, batch: list, config) -> None:
    """batch: [(problem, [Sample, ...])] from the engine -> one graded part."""
    write_graded_part(
        task,
        parts,
        [
            (p, [SampleRow(p.id, j, s.text, s.num_tokens, s.finish_reason) for j, s in enumerate(samples)])
            for p, samples in batch
        ],
        config,
    )


def sample_missing(task, todo: list, parts: store.SampleParts, n: int, config, engine: LazyEngine) -> None:
    """Generate n samples for each problem in `todo`, writing one graded part per chunk of prompts."""
    if not todo:
        return
    eng = engine.get()
    chunk = max(1, config.chunk_samples // n)
    prompts = [eng.render(task, p) for p in todo]
    batch: list = []
    # Seeds keyed by problem id: a resumed run samples each problem exactly as an uninterrupted one would.
    keys = [f"{task.name}/{p.id}" for p in todo]
    stream = eng.generate_iter(
        prompts, _sampling(config, n), chunk_prompts=chunk, progress=config.progress, seed_keys=keys
    )
    for index, samples in stream:
        if len(samples) != n:
            raise BenchctlError(f"engine returned {len(samples)} samples for one prompt, expected n={n}")
        batch.append((todo[index], samples))
        if len(batch) == chunk:
            _grade_and_write(task, parts, batch, config)
            batch = []
    if batch:
        _grade_and_write(task, parts, batch, config)


def evaluate_task(task, out: Path, model: ResolvedModel, n: int, config, engine: LazyEngine):
    """Resume-aware eval of one task: sample only problems without n stored samples, then write the tables."""
    problems = task.load(config.data_dir, config.limit)
    ids = [p.id for p in problems]
    if len(set(ids)) != len(ids):
        raise BenchctlError(f"task {task.name} has duplicate problem ids; cannot store samples per problem")
    if not problems:
        raise BenchctlError(f"task {task.name} loaded no problems (data dir {config.data_dir!r})")
    task_dir = out / task.name
    parts = store.SampleParts(task_dir)
    counts = parts.sample_counts()
    todo = [p for p in problems if counts.get(p.id) != n]
    sample_missing(task, todo, parts, n, config, engine)
    summary = finalize_task(
        task_dir,
        ids,
        config.ks,
        task=task.name,
        model=model.name,
        resamples=config.resamples,
        confidence=config.confidence,
        seed=config.seed,
    )
    return TaskResult(task.name, task_dir, len(problems), len(todo), len(problems) - len(todo), summary)
