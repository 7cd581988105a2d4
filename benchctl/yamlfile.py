"""`read_yaml`: the one reader of benchctl's YAML files (train config, matrix, claims), with their one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError


def read_yaml(path: str | Path, kind: str) -> Any:
    """The parsed content of YAML file `path`; BenchctlError "`kind` file PATH does not exist" or "... is not
    readable YAML (ExcType)" in one line, never a traceback."""
    import yaml

    p = Path(path)
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchctlError(f"{kind} file {p} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BenchctlError(f"{kind} file {p} is not readable YAML ({type(exc).__name__})") from None
