"""What running a matrix returns: each cell's outcome and the whole run's (`benchctl.matrix.runner.run_matrix`).

Its own module so that the executors (`benchctl.matrix.ray_executor`) and the runner both import it and not each
other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CellOutcome:
    """What one cell's work returned: done, failed (with reason) or interrupted (Ctrl-C)."""

    name: str
    status: str  # done | failed | interrupted
    reason: str | None = None
    seconds: float = 0.0
    trained_steps: int | None = None
    pass_at: tuple[tuple[str, int, float], ...] = ()  # (eval task, k, pass@k) of the final evaluation
    outside: str | None = None  # a failure's cause outside the cell (`benchctl.matrix.failure`); None: in the cell
    attempts: int = 1  # times the cell ran in this `run_matrix` (1 + its retries)


@dataclass(frozen=True)
class MatrixOutcome:
    """What `run_matrix` did: every cell's outcome this time (finished cells as `skipped`), and the index path."""

    index: Path
    outcomes: tuple[CellOutcome, ...]

    @property
    def failed(self) -> list[CellOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def interrupted(self) -> bool:
        return any(o.status == "interrupted" for o in self.outcomes)
