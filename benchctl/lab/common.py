"""Shared config helpers: help-carrying dataclass fields, grid validation, seeded generators."""

from __future__ import annotations

import dataclasses

import numpy as np

from benchctl.errors import BenchctlError, check_range
from benchctl.fields import setting as opt  # noqa: F401  (a study option: a default and one help string)

# Default success-probability grid: contains the docs/contract.md §5 check points 0.05, 0.10, 0.25, 0.5, 0.75.
DEFAULT_P = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def field_help(config_type: type) -> dict[str, str]:
    """Field name -> help text of a config dataclass (the CLI and the docs read this)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_type)}


def check_p_grid(p: tuple[float, ...], *, open_interval: bool = True) -> None:
    """Every p must be a number in (0, 1) (or [0, 1] when open_interval is False)."""
    if not p:
        raise BenchctlError("the p grid is empty; pass e.g. --p 0.1,0.5,0.9")
    for value in p:
        check_range("p", value, 0.0, 1.0, low_open=open_interval, high_open=open_interval)


def check_group_sizes(sizes: tuple[int, ...], low: int = 2, high: int = 1024) -> None:
    """Every group size must be an integer in [low, high]."""
    if not sizes:
        raise BenchctlError("no group size given; pass e.g. --G 8 or --G 4,8,16")
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise BenchctlError(f"G={size!r} must be an integer in [{low}, {high}]")
        check_range("G", size, low, high)


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """Categorical option check with the valid choices in the message."""
    if value not in choices:
        raise BenchctlError(f"{name}={value!r} is not valid; choose one of: {', '.join(choices)}")


def generator(seed: int, *key: int) -> np.random.Generator:
    """An independent numpy Generator for (seed, key...) via SeedSequence spawn keys."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=tuple(key)))


def parse_numbers(name: str, text: str | None, kind: type, default: tuple) -> tuple:
    """Parse a comma list such as "4,8,16" (CLI options) into a tuple of `kind`; None -> default."""
    if text is None:
        return default
    try:
        values = tuple(kind(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        raise BenchctlError(f"--{name} must be a comma list of {kind.__name__}s; got {text!r}") from None
    if not values:
        raise BenchctlError(f"--{name} is empty; got {text!r}")
    return values
