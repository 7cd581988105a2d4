"""What `run_eval` / `run_grade` return, and the per-task table step both end with (streamed from the parts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from benchctl.errors import BenchctlError
from benchctl.results import store, tables


@dataclass(frozen=True)
class TaskResult:
    """One task's outcome: its folder, summary table, and how much was sampled now vs reused."""

    task: str
    dir: Path
    problems: int
    sampled: int  # problems sampled (eval) or graded (grade) in this call
    reused: int  # problems whose samples were already on disk (resume)
    summary: pa.Table


@dataclass(frozen=True)
class EvalResult:
    """What run_eval / run_grade return (nothing is printed by the library)."""

    out: Path
    model: str
    tasks: tuple[TaskResult, ...]
    notes: tuple[str, ...] = ()

    def rich_table(self):
        """The closing summary table (rich)."""
        from benchctl.evaluation.render import summary_rich_table

        table = summary_rich_table([t.summary for t in self.tasks], title=f"{self.model} -> {self.out}")
        done = [f"{t.task}: {t.sampled} new, {t.reused} resumed" for t in self.tasks if t.reused]
        table.caption = "; ".join(x for x in [table.caption or "", *self.notes, *done] if x)
        return table


def finalize_task(
    task_dir: Path,
    ids: list[str],
    ks: tuple[int, ...],
    *,
    task: str,
    model: str,
    resamples: int,
    confidence: float,
    seed: int,
) -> pa.Table:
    """Stream the sample parts into problems.parquet + summary.parquet for `ids`; returns the summary."""
    parts = store.SampleParts(task_dir)
    stats = tables.collect_problem_stats(parts.iter_parts(tables.STAT_COLUMNS), keep=max(ks))
    missing = [i for i in ids if i not in stats]
    if missing:
        raise BenchctlError(f"{task}: {len(missing)} problems have no samples in {parts.dir} (e.g. {missing[0]})")
    problems = tables.problem_table(ids, stats, ks)
    store.write_table(task_dir / "problems.parquet", problems)
    summary = tables.summary_table(
        problems, ks, task=task, model=model, resamples=resamples, confidence=confidence, seed=seed
    )
    store.write_table(task_dir / "summary.parquet", summary)
    return summary
