"""`run_grade`: grade completions produced elsewhere (JSON Lines) with exactly `benchctl eval`'s graders/tables.

Input: one JSON object per line with a string `problem_id` (an id of the task's problems) and a string
`completion`; several lines may share a problem — a problem's samples are its lines, in file order
(sample_index 0, 1, ...).  Blank lines are skipped; anything else that is wrong is an error naming the line.
pass@k needs k <= n for every problem, so with uneven counts it is reported only for k <= min n: the default
ks are the powers of two <= min n, and larger requested ks are dropped with a note in the result.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.evaluation.config import config_record
from benchctl.evaluation.outcome import EvalResult, TaskResult, finalize_task
from benchctl.evaluation.sampling import write_graded_part
from benchctl.results import store
from benchctl.results.tables import SampleRow
from benchctl.tasks import get_task


def read_samples(path: Path, known_ids) -> dict[str, list[str]]:
    """problem id -> completions in file order; BenchctlError naming the first bad line."""
    by_problem: dict[str, list[str]] = {}
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise BenchctlError(f"--samples {path}: cannot read ({exc.strerror})") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                why = "not UTF-8 text (need JSON Lines with problem_id and completion)"
                raise BenchctlError(f"{path} line {lineno}: {why}") from None
            except ValueError as exc:
                raise BenchctlError(f"{path} line {lineno}: not JSON ({exc})") from None
            if (
                not isinstance(obj, dict)
                or not isinstance(obj.get("problem_id"), str)
                or not isinstance(obj.get("completion"), str)
            ):
                raise BenchctlError(f"{path} line {lineno}: need an object with string 'problem_id' and 'completion'")
            if obj["problem_id"] not in known_ids:
                raise BenchctlError(f"{path} line {lineno}: unknown problem_id {obj['problem_id']!r} for this task")
            by_problem.setdefault(obj["problem_id"], []).append(obj["completion"])
    if not by_problem:
        raise BenchctlError(f"{path}: no samples")
    return by_problem


def _ks_for(requested, n_min: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    if requested is None:
        return tuple(1 << e for e in range(n_min.bit_length())), ()
    kept = tuple(k for k in requested if k <= n_min)
    dropped = [k for k in requested if k > n_min]
    if not kept:
        raise BenchctlError(f"every requested k exceeds the smallest samples-per-problem n={n_min}")
    note = (f"pass@k only for k <= min n = {n_min} (dropped k={','.join(map(str, dropped))})",) if dropped else ()
    return kept, note


def grade_samples_file(config):
    """Grade `config.samples` for `config.task` and write the eval tables to `config.out`."""
    task = get_task(config.task)
    path, out = Path(config.samples), Path(config.out)
    if not path.is_file():
        raise BenchctlError(f"--samples {path}: no such file (JSON Lines with problem_id and completion)")
    problems = {p.id: p for p in task.load(config.data_dir)}
    by_problem = read_samples(path, problems)
    n_min = min(len(v) for v in by_problem.values())
    ks, notes = _ks_for(config.ks, n_min)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    identity = {"mode": "grade", "task": task.name, "samples_sha256": digest}
    store.prepare_run_dir(out, config_record(config, ks_resolved=list(ks)), identity, config.overwrite)
    task_dir = out / task.name
    shutil.rmtree(task_dir / "samples", ignore_errors=True)  # grading is deterministic: always regrade
    parts = store.SampleParts(task_dir)
    ids = [pid for pid in problems if pid in by_problem]  # task order
    _grade_in_chunks(task, parts, [(problems[i], by_problem[i]) for i in ids], config)
    summary = finalize_task(
        task_dir,
        ids,
        ks,
        task=task.name,
        model=f"samples:{path.name}",
        resamples=config.resamples,
        confidence=config.confidence,
        seed=config.seed,
    )
    result = TaskResult(task.name, task_dir, len(ids), len(ids), 0, summary)
    store.write_overall_summary(out)
    return EvalResult(out, f"samples:{path.name}", (result,), notes)


def _grade_in_chunks(task, parts: store.SampleParts, groups: list, config) -> None:
    batch: list = []
    for problem, completions in groups:
        batch.append((problem, completions))
        if sum(len(c) for _, c in batch) >= config.chunk_samples:
            _write(task, parts, batch, config)
            batch = []
    if batch:
        _write(task, parts, batch, config)


def _write(task, parts, batch, config) -> None:
    """batch: [(problem, [completion, ...])] from the samples file -> one graded part."""
    write_graded_part(
        task, parts, [(p, [SampleRow(p.id, j, text) for j, text in enumerate(texts)]) for p, texts in batch], config
    )
