"""Shared fixtures: where the real benchmark files live (CI clones the repo with shared/ beside it)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _benchmarks_dir() -> Path:
    env = os.environ.get("BENCHCTL_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "benchmarks"


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    path = _benchmarks_dir()
    if not (path / "math500.jsonl").exists():
        pytest.fail(f"benchmark data not found at {path}; set BENCHCTL_DATA_DIR")
    return path
