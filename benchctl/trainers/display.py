"""Live training display on stderr (rich), and its null object for files, pipes and `--no-progress`.

The trainer calls `display.update(step, metrics)` and `display.warn(text)` unconditionally (no `if track:`
branches in the loop, like nanochat's DummyWandb).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

# (column title, metric key, format) shown for the latest steps; the estimator's own `est/*` numbers follow.
COLUMNS = (
    ("step", "step", "{:.0f}"),
    ("reward", "reward/mean", "{:.3f}"),
    ("acr", "acr/all", "{:.2f}"),
    ("wrong/right", None, ""),
    ("adv +/-", None, ""),
    ("entropy", "policy/entropy", "{:.3f}"),
    ("kl", "policy/kl", "{:.4f}"),
    ("clip lo/hi", None, ""),
    ("|g|", "policy/grad_norm", "{:.3f}"),
    ("len", "response/length_mean", "{:.1f}"),
    ("trunc", "response/truncated", "{:.2f}"),
    ("lp gap", "logprob/engine_gap", "{:.1e}"),
    ("s/step", "time/step", "{:.2f}"),
)


def _fmt(fmt: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def _cells(m: Mapping[str, float]) -> list[str]:
    pairs = {
        "wrong/right": f"{_fmt('{:.2f}', m.get('acr/all_wrong'))}/{_fmt('{:.2f}', m.get('acr/all_correct'))}",
        "adv +/-": f"{_fmt('{:.1f}', m.get('adv/pos_sum'))}/{_fmt('{:.1f}', m.get('adv/neg_sum'))}",
        "clip lo/hi": f"{_fmt('{:.2f}', m.get('policy/clip_low'))}/{_fmt('{:.2f}', m.get('policy/clip_high'))}",
    }
    return [pairs[title] if key is None else _fmt(fmt, m.get(key)) for title, key, fmt in COLUMNS]


class NullDisplay:
    """Shows nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def update(self, step: int, metrics: Mapping[str, float]) -> None:
        pass

    def warn(self, text: str) -> None:
        pass


class LiveDisplay(NullDisplay):
    """The last `rows` steps as a table, the estimator's diagnostics and warnings, redrawn in place."""

    def __init__(self, title: str, total_steps: int, rows: int = 12) -> None:
        from rich.console import Console

        self.title, self.total, self.rows = title, total_steps, rows
        self.history: list[list[str]] = []
        self.estimator_line = ""
        self.warnings: list[str] = []
        self.console = Console(stderr=True)
        self._live = None

    def __enter__(self):
        from rich.live import Live

        self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
        self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def update(self, step: int, metrics: Mapping[str, float]) -> None:
        self.history = (self.history + [_cells({**metrics, "step": step})])[-self.rows :]
        est = {k[4:]: v for k, v in metrics.items() if k.startswith("est/")}
        self.estimator_line = "  ".join(f"{k}={v:.4g}" for k, v in sorted(est.items()))
        if self._live is not None:
            self._live.update(self._render())

    def warn(self, text: str) -> None:
        self.warnings = (self.warnings + [text])[-3:]
        if self._live is not None:
            self._live.update(self._render())

    def _render(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(
            title=f"{self.title}  ({len(self.history) and self.history[-1][0]}/{self.total} steps)",
            title_justify="left",
            expand=False,
            pad_edge=False,
        )
        for title, _, _ in COLUMNS:
            table.add_column(title, justify="right", no_wrap=True)
        for row in self.history:
            table.add_row(*row)
        parts = [table, Text(f"estimator: {self.estimator_line}" if self.estimator_line else "", style="dim")]
        parts += [Text(f"warning: {w}", style="yellow") for w in self.warnings]
        return Group(*parts)


def make_display(enabled: bool, title: str, total_steps: int) -> NullDisplay:
    """A live display when enabled, stderr is a terminal and the CLI session allows progress output (the root
    `--no-progress`, `benchctl.quiet`), else the null display."""
    from benchctl.quiet import progress_allowed

    if enabled and sys.stderr.isatty() and progress_allowed():
        return LiveDisplay(title, total_steps)
    return NullDisplay()
