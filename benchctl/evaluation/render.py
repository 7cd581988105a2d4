"""Rich rendering of eval summary tables (formatting only: the numbers come from `benchctl.results.tables`)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from rich.table import Table


def _pct(value: float, low: float, high: float) -> str:
    return f"{100 * value:.1f} [{100 * low:.1f}-{100 * high:.1f}]"


def summary_rich_table(summaries: Sequence[pa.Table], title: str = "benchctl eval") -> Table:
    """One row per (task, k): pass@k and maj@k with their CIs (percent), mean@n and problems x n on each
    task's first row (compact enough for 80 columns)."""
    table = Table(title=title)
    for name, justify in (
        ("task", "left"),
        ("k", "right"),
        ("pass@k [CI]", "right"),
        ("maj@k [CI]", "right"),
        ("mean@n [CI]", "right"),
        ("P x n", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)
    for summary in summaries:
        rows = summary.to_pylist()
        for i, row in enumerate(rows):
            first = i == 0
            n_text = str(row["n_min"]) if row["n_min"] == row["n_max"] else f"{row['n_min']}-{row['n_max']}"
            table.add_row(
                row["task"] if first else "",
                str(row["k"]),
                _pct(row["pass_at_k"], row["pass_at_k_low"], row["pass_at_k_high"]),
                _pct(row["maj_at_k"], row["maj_at_k_low"], row["maj_at_k_high"]),
                _pct(row["mean_at_n"], row["mean_at_n_low"], row["mean_at_n_high"]) if first else "",
                f"{row['problems']} x {n_text}" if first else "",
                end_section=i == len(rows) - 1,
            )
    if summaries:
        conf = summaries[0].column("confidence")[0].as_py()
        table.caption = f"percent; [{100 * conf:.0f}% percentile-bootstrap CI over problems]"
    return table
