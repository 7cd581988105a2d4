"""`setting`: a dataclass field with its default and its one help string, the form of every benchctl config and
hyperparameter dataclass (the CLIs, `--help` panels and generated docs read the help from the field's metadata).

A setting may also carry its valid values in the same metadata, `valid=Range(...)` or `choices=(...)`, so that a
field's range is written once, beside its help; `check_settings` checks an instance against them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from benchctl.errors import BenchctlError, check_range


@dataclass(frozen=True)
class Range:
    """low <= value <= high; an end None is unbounded, an open end excludes its bound (`errors.check_range`)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def check(self, name: str, value: Any) -> None:
        check_range(name, value, self.low, self.high, low_open=self.low_open, high_open=self.high_open)


def setting(default: Any, help_text: str, **metadata: Any) -> Any:
    """`dataclasses.field(default=default, metadata={"help": help_text, **metadata})`; `valid` (a `Range`) and
    `choices` (a tuple) in `metadata` are the values `check_settings` accepts."""
    return field(default=default, metadata={"help": help_text, **metadata})


def check_settings(obj: Any) -> None:
    """Each field of the dataclass instance `obj` against its metadata's `valid` range and `choices`, in
    declaration order: one `BenchctlError` line for the first bad value. None passes (an optional setting unset)."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if "valid" in f.metadata:
            f.metadata["valid"].check(f.name, value)
        choices = f.metadata.get("choices")
        if choices is not None and value not in choices:
            raise BenchctlError(f"{f.name}={value!r} is not valid; choose one of: {', '.join(choices)}")
