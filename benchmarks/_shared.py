"""What the benchmark scripts share: a measurement in a fresh interpreter (`run_child`) and a comma list checked
against its choices (`comma_choices`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

HERE = str(Path(__file__).parent)


def run_child(module: str, call: str, label: str, env: dict | None = None) -> dict:
    """`module.call` (a Python expression returning JSON-able data) in a fresh interpreter with `env` (default: this
    one's), so nothing is left from another measurement; its printed result, or SystemExit naming `label`."""
    code = (
        f"import json, sys; sys.path.insert(0, {HERE!r}); import {module} as m; print('RESULT', json.dumps(m.{call}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env or os.environ, capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise SystemExit(f"{label}: child failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def comma_choices(text: str, valid: Iterable[str], what: str) -> list[str]:
    """The names of comma list `text`; one line naming the first unknown one and the choices, exit 2, otherwise."""
    valid = list(valid)
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in names if x not in valid]
    if unknown:
        print(f"unknown {what} {unknown[0]!r}; choose from: {', '.join(valid)}", file=sys.stderr)
        raise SystemExit(2)
    return names
