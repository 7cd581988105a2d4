"""The generation progress bar: prompts done, samples/s and generated tokens/s, drawn by rich on stderr.

vLLM's own tqdm bars are off. Under the CLI, `benchctl.quiet` draws the bar only on a terminal (`progress_allowed`);
a disabled bar still counts samples and tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchctl.engine.config import Sample
from benchctl.quiet import progress_allowed


class GenerationProgress:
    """Rich progress on stderr: prompts done, samples/s, generated tokens/s (a no-op when disabled)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.samples, self.tokens = total, enabled and progress_allowed(), 0, 0
        self._bar = None

    def __enter__(self) -> GenerationProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("generate"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rates]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task("generate", total=self.total, rates="")
        return self

    def advance(self, samples: Sequence[Sample]) -> None:
        """One prompt finished with `samples`."""
        self.samples += len(samples)
        self.tokens += sum(s.num_tokens for s in samples)
        if self._bar is not None:
            elapsed = max(self._bar.tasks[0].elapsed or 0.0, 1e-9)
            rates = f"{self.samples / elapsed:,.0f} samples/s  {self.tokens / elapsed:,.0f} tok/s"
            self._bar.update(self._task, advance=1, rates=rates)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
