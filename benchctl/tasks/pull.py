"""`benchctl data pull`: each task's canonical hub dataset, written as the local JSON Lines file `--data-dir` reads.

The rows are the hub rows mapped by the same per-source functions every hub load uses (`benchctl.tasks.sources`),
so a pulled folder gives the same problems and golds as loading from the hub; MBPP is written whole (all four
splits, each row with its `split`), like the `shared/benchmarks` copy. Files are written to a temporary name and
renamed, so an interrupted pull never leaves a half-written task file behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.tasks.base import Task, get_task, list_tasks
from benchctl.tasks.sources import HubUnreachableError


@dataclass(frozen=True)
class PulledFile:
    """One task file written by `pull`."""

    task: str
    rows: int
    path: Path


def pullable_tasks() -> list[str]:
    """Names of the tasks that have a hub dataset and a local file name (every task but generated ones)."""
    return [task.name for task in list_tasks() if task.local_file and task.hub_id]


def _task(name: str) -> Task:
    task = get_task(name)  # UnknownNameError lists every task
    if name not in pullable_tasks():
        raise BenchctlError(f"task {name!r} has no hub dataset to pull; choose from: {', '.join(pullable_tasks())}")
    return get_task(name, split="all") if name == "mbpp" else task


def write_jsonl(rows: Sequence[dict], path: Path) -> None:
    """UTF-8 JSON Lines (non-ASCII kept as is), written to a temporary file and renamed into place."""
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def pull(names: Sequence[str] | None, out: Path | str, mirror: Path | str | None = None) -> list[PulledFile]:
    """Write `<out>/<task.local_file>` for each task (default: every pullable task); names are checked first.

    `mirror`: read the hub datasets from local snapshots `<mirror>/<org>/<name>` instead of the network."""
    tasks = [_task(name) for name in (names or pullable_tasks())]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pulled = []
    for task in tasks:
        try:
            rows = task.hub_rows(None if mirror is None else Path(mirror))  # type: ignore[attr-defined]
        except HubUnreachableError:
            raise BenchctlError(
                f"cannot reach the Hugging Face hub to pull task {task.name} ({task.hub_id}); check "
                "the network, or pass --from DIR with local snapshots of the datasets"
            ) from None
        if not rows:
            raise BenchctlError(f"the hub dataset of task {task.name} ({task.hub_id}) has no rows")
        path = out / str(task.local_file)
        write_jsonl(rows, path)
        pulled.append(PulledFile(task.name, len(rows), path))
    return pulled
