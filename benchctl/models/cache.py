"""Build-once cache of the embedded models, safe for concurrent test processes.

`cached_tiny_model(sft_steps=100, seed=0)` returns `<cache>/tiny-<key>`, building it on first use. The key is a
hash of every `TinyModelConfig` field plus `BUILDER_VERSION`, so a change of parameters or of the builder gives a
new folder. `<cache>` is `$BENCHCTL_CACHE_DIR`, else `~/.cache/benchctl` [our choice: outside the repo, shared by
worktrees and CI steps]. An exclusive `fcntl.flock` on `tiny-<key>.lock` serialises builders; the model is built
in a temporary folder and renamed into place, so a reader never sees a half-written model (`build_once`, which
`benchctl.models.smollm2` shares for its converted GGUF).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.models.tiny import BUILDER_VERSION, INFO_FILE, TinyModelConfig, build_tiny_model, resolve_config

CACHE_ENV = "BENCHCTL_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$BENCHCTL_CACHE_DIR`, else `~/.cache/benchctl`."""
    env = os.environ.get(CACHE_ENV, "")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "benchctl"


def tiny_model_key(cfg: TinyModelConfig) -> str:
    """12 hex digits identifying (builder version, every config field)."""
    blob = json.dumps({"builder_version": BUILDER_VERSION, **asdict(cfg)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def cached_tiny_model(*, cache_dir: Path | str | None = None, config: TinyModelConfig | None = None, **options) -> Path:
    """Folder of the tiny model for these parameters, built now (under a file lock) if not cached yet."""
    cfg = resolve_config(config, options)
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return build_once(
        root / f"tiny-{tiny_model_key(cfg)}", lambda scratch: build_tiny_model(scratch, config=cfg), INFO_FILE
    )


def build_once(target: Path, build: Callable[[Path], object], done_file: str) -> Path:
    """`target`, built by `build(scratch)` into a temporary sibling folder and renamed into place unless
    `target/done_file` already exists. An exclusive `fcntl.flock` on `<target>.lock` serialises builders across
    processes; a build that raises leaves nothing behind (the scratch folder is removed), and a half-built leftover
    without `done_file` is replaced."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if (target / done_file).is_file():
        return target
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / done_file).is_file():  # another process built it while we waited
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            build(scratch)
            if target.exists():  # a half-built leftover without done_file
                shutil.rmtree(target)
            scratch.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def export_tiny_model(out_dir: Path | str, *, overwrite: bool = False, **options) -> Path:
    """Build the tiny model into `out_dir` atomically (temporary sibling folder, then rename).

    An existing `out_dir` is an error unless `overwrite`, so a finished model is never lost or half-replaced.
    """
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise BenchctlError(f"{out} already exists; pass --overwrite to replace it")
    resolve_config(None, options)  # bad options fail before any work
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        build_tiny_model(scratch, **options)
        if out.exists():
            shutil.rmtree(out)
        scratch.rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
