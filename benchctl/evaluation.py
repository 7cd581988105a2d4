"""`benchctl eval` and `benchctl grade`: sample with the engine (or read completions), grade, write tables.

Library entry points: `run_eval(EvalConfig) -> EvalResult` and `run_grade(GradeConfig) -> EvalResult`.  Both
grade with the task's own grader (`task.grade`) and write the same tables through the same code
(`benchctl.results.tables`, run-dir layout in `benchctl.results.store`):
* per-sample parquet parts, streamed: one part per chunk of complete problems, written atomically;
* per-problem (n, c, pass@k, maj@k), and a summary per k with percentile-bootstrap CIs over problems.
Metrics: unbiased pass@k (arXiv:2107.03374 Eq. 1; spec estimators.md §8), maj@k, mean@n (`benchctl.metrics`).
Defaults follow A-GRAE's evaluation protocol (arXiv:2602.05548 App. C.2: temperature 0.6, top-p 0.95, at most
4096 new tokens, Pass@k for k in 1..256).  Resume: problems whose n samples are on disk are not sampled again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pyarrow as pa

from benchctl.errors import BenchctlError, check_range
from benchctl.results import store, tables
from benchctl.results.kspec import parse_ks
from benchctl.results.runs import default_out_dir, resolve_model
from benchctl.tasks import get_task

__all__ = ["EvalConfig", "EvalResult", "GradeConfig", "TaskResult", "parse_ks", "run_eval", "run_grade"]


def _f(default, help_text: str, **kw):
    return field(default=default, metadata={"help": help_text}, **kw)


@dataclass(frozen=True)
class EvalConfig:
    """Everything `benchctl eval` needs; `sources` says where each value came from (flag/env/default)."""

    model: str = _f("", "HF model folder, hub id, or benchctl run folder (see benchctl.results.runs)")
    tasks: tuple[str, ...] = _f((), "task names (benchctl.tasks registry)")
    ks: tuple[int, ...] = _f((1,), "k values for pass@k / maj@k; each k <= n")
    n: int | None = _f(None, "samples per problem; None -> max(ks)")
    temperature: float = _f(0.6, "sampling temperature (A-GRAE eval: 0.6)")
    top_p: float = _f(0.95, "nucleus sampling top-p (A-GRAE eval: 0.95)")
    max_tokens: int = _f(4096, "max new tokens per sample (A-GRAE eval: 4096)")
    seed: int = _f(0, "sampling seed (engine) and bootstrap seed")
    limit: int | None = _f(None, "evaluate only the first N problems of each task")
    data_dir: str | None = _f(None, "local benchmark folder (shared/benchmarks schema); None -> $BENCHCTL_DATA_DIR / hub")
    out: str | None = _f(None, "run folder; None -> results/eval/<model-name>")
    overwrite: bool = _f(False, "discard samples in --out made with a different sampling config")
    max_model_len: int | None = _f(None, "engine context length; None -> the model's own")
    chunk_samples: int = _f(4096, "samples per part file / generation chunk (bounds memory, not n)")
    resamples: int = _f(1000, "bootstrap resamples for the CIs")
    confidence: float = _f(0.95, "two-sided CI level")
    grade_workers: int | None = _f(None, "grader processes (None -> task default)")
    grade_timeout: float = _f(5.0, "seconds per graded item")
    progress: bool = _f(True, "show the engine's progress bar")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|env|default"})

    def __post_init__(self) -> None:
        check_range("temperature", self.temperature, 0.0)
        check_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        check_range("max_tokens", self.max_tokens, 1)
        check_range("chunk_samples", self.chunk_samples, 1)
        check_range("resamples", self.resamples, 1)
        check_range("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        if self.limit is not None:
            check_range("limit", self.limit, 1)

    def resolved_n(self) -> int:
        """n if given, else the largest k; BenchctlError when some k > n."""
        if not self.ks:
            raise BenchctlError("no k given; e.g. --k 1..256 or --k 1,5,10")
        n = max(self.ks) if self.n is None else self.n
        check_range("n", n, 1)
        if max(self.ks) > n:
            raise BenchctlError(f"k={max(self.ks)} > n={n}: pass@k needs k <= n; raise --n or lower --k")
        return n


@dataclass(frozen=True)
class GradeConfig:
    """Everything `benchctl grade` needs: completions made elsewhere, graded like `benchctl eval`."""

    task: str = _f("", "task whose problems and grader to use")
    samples: str = _f("", "JSON Lines file: {'problem_id': ..., 'completion': ...} per line")
    out: str = _f("", "output folder (same layout as benchctl eval)")
    ks: tuple[int, ...] | None = _f(None, "k values; None -> powers of two <= min samples per problem")
    data_dir: str | None = _f(None, "local benchmark folder; None -> $BENCHCTL_DATA_DIR / hub")
    overwrite: bool = _f(False, "replace an --out folder made from another samples file")
    chunk_samples: int = _f(4096, "samples per part file")
    resamples: int = _f(1000, "bootstrap resamples")
    confidence: float = _f(0.95, "two-sided CI level")
    seed: int = _f(0, "bootstrap seed")
    grade_workers: int | None = _f(None, "grader processes (None -> task default)")
    grade_timeout: float = _f(5.0, "seconds per graded item")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|env|default"})

    def __post_init__(self) -> None:
        check_range("chunk_samples", self.chunk_samples, 1)
        check_range("resamples", self.resamples, 1)
        check_range("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        check_range("grade_timeout", self.grade_timeout, 0.0, low_open=True)


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
        from benchctl.results.report import summary_rich_table

        table = summary_rich_table([t.summary for t in self.tasks], title=f"{self.model} -> {self.out}")
        done = [f"{t.task}: {t.sampled} new, {t.reused} resumed" for t in self.tasks if t.reused]
        table.caption = "; ".join(x for x in [table.caption or "", *self.notes, *done] if x)
        return table


def config_record(config, **derived) -> dict:
    """{key: {"value": v, "source": flag|env|default}} for every field, plus derived values (source 'derived')."""
    record = {f.name: {"value": getattr(config, f.name), "source": config.sources.get(f.name, "default")}
              for f in dataclasses.fields(config) if f.name != "sources"}
    record.update({k: {"value": v, "source": "derived"} for k, v in derived.items()})
    return record


def finalize_task(task_dir: Path, ids: list[str], ks: tuple[int, ...], *, task: str, model: str,
                  resamples: int, confidence: float, seed: int) -> pa.Table:
    """Stream the sample parts into problems.parquet + summary.parquet for `ids`; returns the summary."""
    parts = store.SampleParts(task_dir)
    stats = tables.collect_problem_stats(parts.iter_parts(tables.STAT_COLUMNS), keep=max(ks))
    missing = [i for i in ids if i not in stats]
    if missing:
        raise BenchctlError(f"{task}: {len(missing)} problems have no samples in {parts.dir} (e.g. {missing[0]})")
    problems = tables.problem_table(ids, stats, ks)
    store.write_table(task_dir / "problems.parquet", problems)
    summary = tables.summary_table(problems, ks, task=task, model=model, resamples=resamples,
                                   confidence=confidence, seed=seed)
    store.write_table(task_dir / "summary.parquet", summary)
    return summary


def run_eval(config: EvalConfig, engine=None) -> EvalResult:
    """Sample n completions per problem for every task, grade them, write the tables (resumable).

    `engine`: an already running `benchctl.engine.Engine` to sample from as it is (a trainer's colocated engine,
    holding the current policy's weights); `config.model` then only names the model in tables and config.json.
    """
    from benchctl.results.eval_loop import LazyEngine, evaluate_task
    from benchctl.results.runs import ResolvedModel

    if not config.tasks:
        raise BenchctlError("no task given; e.g. --tasks math500,aime24")
    n = config.resolved_n()
    model = resolve_model(config.model) if engine is None else ResolvedModel(config.model, Path(config.model).name,
                                                                              "engine")
    out = Path(config.out) if config.out else default_out_dir(model)
    identity = {"model": model.path, "n": n, "temperature": config.temperature, "top_p": config.top_p,
                "max_tokens": config.max_tokens, "seed": config.seed, "max_model_len": config.max_model_len}
    tasks = [get_task(name) for name in config.tasks]  # unknown names fail before anything is written
    store.prepare_run_dir(out, config_record(config, n_resolved=n, model_resolved=model.path, out_resolved=str(out)),
                          identity, config.overwrite)
    lazy = LazyEngine(model, config, ready=engine)
    results = [evaluate_task(task, out, model, n, config, lazy) for task in tasks]
    store.write_overall_summary(out)
    return EvalResult(out, model.name, tuple(results))


def run_grade(config: GradeConfig) -> EvalResult:
    """Grade completions from a JSON Lines file with the task's grader; same tables as `run_eval`."""
    from benchctl.results.grade_file import grade_samples_file

    return grade_samples_file(config)

