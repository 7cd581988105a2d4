"""The lab's result object: plain rows (list of dicts) plus notes and findings; writers for parquet/JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class LabResult:
    """What every `simulate` entry point returns.

    command: which experiment ("bias", "symmetry", "collapse", "bandit").
    config: the resolved config as a dict (written into parquet metadata and JSON).
    rows: one dict per table row; every row has the same keys (the parquet columns).
    notes: how expectations were taken and other caveats, printed under the table.
    findings: bandit only: one dict per checked paper claim (claim, measured, verdict).
    series: optional extra long-format rows (e.g. per-step curves) kept out of the main table.
    """

    command: str
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)

    def columns(self) -> list[str]:
        """Column names, in row order."""
        return list(self.rows[0]) if self.rows else []

    def to_arrow(self):
        """The rows as a pyarrow Table with config / notes / findings in the schema metadata."""
        import pyarrow as pa

        table = pa.Table.from_pylist(self.rows)
        meta = {
            "benchctl.command": self.command,
            "benchctl.config": json.dumps(_clean(self.config)),
            "benchctl.notes": json.dumps(self.notes),
            "benchctl.findings": json.dumps(_clean(self.findings)),
        }
        return table.replace_schema_metadata(meta)

    def write_parquet(self, path: str | Path) -> Path:
        """Write the rows to a parquet file (parent folders created)."""
        import pyarrow.parquet as pq

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.to_arrow(), target)
        return target

    def to_json(self) -> str:
        """JSON text: {command, config, notes, findings, rows, series}; NaN/inf become null."""
        payload = {
            "command": self.command,
            "config": self.config,
            "notes": self.notes,
            "findings": self.findings,
            "rows": self.rows,
            "series": self.series,
        }
        return json.dumps(_clean(payload), indent=1)


def _clean(value):
    """Make a value JSON-safe: NaN/inf -> None, tuples -> lists, numpy scalars -> Python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def config_dict(config) -> dict[str, Any]:
    """A frozen config dataclass as a JSON-safe dict."""
    return _clean(dataclasses.asdict(config))
