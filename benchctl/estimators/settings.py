"""Build an estimator from `KEY=VALUE` strings (command lines, config files): typed by the dataclass fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from benchctl.errors import BenchctlError
from benchctl.estimators.api import Estimator, get_estimator
from benchctl.estimators.registry import get_spec

_TRUE, _FALSE, _NONE = ("true", "yes", "1", "on"), ("false", "no", "0", "off"), ("none", "null")


def _field_types(name: str, base: str | None) -> dict[str, str]:
    """Field name -> annotation string, the estimator's own fields first, then its base's (modifiers)."""
    spec = get_spec(name)
    types = {f.name: str(f.type) for f in dataclasses.fields(spec.params)}
    if spec.kind == "modifier":
        for key, value in _field_types(base or "grpo", None).items():
            types.setdefault(key, value)
    return types


def _coerce(key: str, text: str, annotation: str) -> Any:
    low = text.strip().lower()
    if "None" in annotation and low in _NONE:
        return None
    try:
        if "bool" in annotation:
            if low not in _TRUE + _FALSE:
                raise ValueError(text)
            return low in _TRUE
        if "int" in annotation:
            return int(text)
        if "float" in annotation:
            return float(text)
    except ValueError:
        kind = next(t for t in ("bool", "int", "float") if t in annotation)
        raise BenchctlError(f"{key}={text!r} is not a valid {kind}") from None
    return text


def parse_settings(name: str, settings: Sequence[str], base: str | None = None) -> dict[str, Any]:
    """["lambda_scale=1.3", "std=population"] -> {"lambda_scale": 1.3, "std": "population"}."""
    types = _field_types(name, base)
    out: dict[str, Any] = {}
    for item in settings:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise BenchctlError(f"setting {item!r} must look like KEY=VALUE")
        if key not in types:
            raise BenchctlError(f"unknown hyperparameter {key!r} for {name}; valid: {', '.join(types) or 'none'}")
        out[key] = _coerce(key, text, types[key])
    return out


def build_estimator(name: str, settings: Sequence[str] = (), base: str | None = None) -> Estimator:
    """`get_estimator(name, base=base, **parse_settings(...))`; BenchctlError on any bad name or value."""
    params = parse_settings(name, settings, base)
    if base is not None:
        params["base"] = base
    return get_estimator(name, **params)
