"""What `benchctl tasks` shows: one summary per registered task (sizes counted from local files when present)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchctl.tasks.base import get_task, list_tasks, local_path


@dataclass(frozen=True)
class TaskSummary:
    """One row of the task listing."""

    name: str
    kind: str  # "math" | "code"
    size: int  # rows of the default split: counted from the local file if found, else the known size
    size_source: str  # "local" | "known" | "generated"
    hub_id: str  # "-" for synthetic tasks
    local_file: str  # file name expected in a data dir ("-" if none)
    local_path: str  # resolved path if the file exists, else ""
    description: str


def summarize(name: str, data_dir: Path | str | None = None) -> TaskSummary:
    """Summary of one task (UnknownNameError for an unknown name)."""
    task = get_task(name)
    path = local_path(task.local_file, data_dir)
    source = "generated" if task.local_file is None else ("local" if path else "known")
    return TaskSummary(
        task.name,
        task.kind,
        task.size(data_dir),
        source,
        task.hub_id or "-",
        task.local_file or "-",
        str(path or ""),
        task.description,
    )


def describe_tasks(data_dir: Path | str | None = None) -> list[TaskSummary]:
    """Summaries of every registered task, sorted by name."""
    return [summarize(task.name, data_dir) for task in list_tasks()]


def example_prompt(name: str, data_dir: Path | str | None = None, index: int = 0) -> tuple[TaskSummary, str, str]:
    """(summary, first user message, gold) for problem `index` of a task (loads the data)."""
    task = get_task(name)
    problems = task.load(data_dir, limit=index + 1)
    problem = problems[min(index, len(problems) - 1)]
    return summarize(name, data_dir), task.messages(problem)[0]["content"], problem.gold
