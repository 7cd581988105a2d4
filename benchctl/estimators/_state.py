"""An estimator's cross-step state as JSON (checkpoints' state.json) and back, checked against its dataclass."""

from __future__ import annotations

import dataclasses
from typing import Any

from benchctl.errors import BenchctlError


def state_to_json(state: Any) -> dict | None:
    if state is None:
        return None
    out = {}
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        out[f.name] = [v if isinstance(v, str) else float(v) for v in value] if isinstance(value, tuple) else value
    return out


def state_from_json(spec, data: Any) -> Any:  # spec: registry.EstimatorSpec
    if data is None:
        return None
    names = {f.name for f in dataclasses.fields(spec.state)} if spec.state is not None else set()
    if spec.state is None or not isinstance(data, dict) or set(data) != names:
        want = f"the keys {sorted(names)}" if spec.state is not None else "no state (null)"
        raise BenchctlError(f"state for {spec.name} must have {want}; got {data!r}")
    return spec.state(**{k: _state_value(spec.name, k, v) for k, v in data.items()})


def _state_value(name: str, key: str, value: Any) -> Any:
    """A JSON state value back as the dataclass expects it: numbers (or None), lists of numbers or of str (prompt
    ids, e.g. DBB's) as tuples."""

    def number(v, ids=False):
        if v is None or (ids and isinstance(v, str)) or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            return v
        raise BenchctlError(f"state for {name}: {key} must be a number or null; got {v!r}")

    return tuple(number(v, ids=True) for v in value) if isinstance(value, list) else number(value)
