"""Shared fixtures: where the real benchmark files live.

In order: `$BENCHCTL_DATA_DIR`; `shared/benchmarks` beside the checkout (the project layout, and CI's); for a
clone of a local checkout (`git clone . $(mktemp -d)`), `shared/benchmarks` beside the checkout it was cloned
from (its `origin` remote).
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _origin_checkout() -> Path | None:
    """The local folder this checkout was cloned from, if `origin` is a path (not a URL)."""
    try:
        url = subprocess.run(["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    url = url.removeprefix("file://")
    return Path(url).resolve() if url and os.path.isabs(url) else None


def _benchmarks_dir_candidates() -> list[Path]:
    env = os.environ.get("BENCHCTL_DATA_DIR")
    if env:
        return [Path(env)]
    origin = _origin_checkout()
    return [REPO.parent / "shared" / "benchmarks"] + ([origin.parent / "shared" / "benchmarks"] if origin else [])


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    candidates = _benchmarks_dir_candidates()
    for path in candidates:
        if (path / "math500.jsonl").exists():
            return path
    pytest.fail(f"benchmark data not found at {', '.join(map(str, candidates))}; set BENCHCTL_DATA_DIR")
