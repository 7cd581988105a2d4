"""A math task read from one JSON Lines file (`benchctl train --task FILE.jsonl`), e.g. what `benchctl augment
mqr` writes: rows in the shared/benchmarks math schema (`id`, `problem`, `answer`, extras into `meta`), prompted
and graded like every other math task."""

from __future__ import annotations

from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.tasks import sources
from benchctl.tasks.base import Problem
from benchctl.tasks.math_tasks import MathTask


class JsonlMathTask(MathTask):
    """Math problems from `path`; the task's name is the file's stem."""

    description = "math problems from a local JSON Lines file"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise BenchctlError(f"task file {self.path} does not exist")
        self.name = self.path.stem  # type: ignore[misc]

    @property
    def hub_id(self) -> str | None:  # type: ignore[override]
        return None

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        problems = [sources.math_problem(row) for row in sources.read_jsonl(self.path, limit)]
        if not problems:
            raise BenchctlError(f"task file {self.path} holds no problems")
        return problems


def is_task_file(name: str) -> bool:
    """Whether a --task value names a JSON Lines file rather than a registered task."""
    return name.endswith((".jsonl", ".json")) or Path(name).is_file()
