"""`setting`: a dataclass field with its default and its one help string, the form of every benchctl config and
hyperparameter dataclass (the CLIs, `--help` panels and generated docs read the help from the field's metadata)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def setting(default: Any, help_text: str, **kw: Any) -> Any:
    """`dataclasses.field(default=default, metadata={"help": help_text}, **kw)`."""
    return field(default=default, metadata={"help": help_text}, **kw)
