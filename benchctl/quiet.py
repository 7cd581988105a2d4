"""How loud the command line is: benchctl's own output only, unless `benchctl -v`.

The root command enters `cli_session(verbose, progress)` around every command. Unless verbose, for the length of
the command:
- third-party logs and warnings are hidden: environment defaults (a value the user set wins) VLLM_LOGGING_LEVEL=ERROR,
  TORCH_CPP_LOG_LEVEL=ERROR (c10's "[W...] Warning: NUMA binding" lines), TRANSFORMERS_VERBOSITY=error,
  PYTHONWARNINGS=ignore (for child processes); the loggers of vLLM, torch, transformers, datasets and the hub at
  ERROR; Python warnings ignored unless raised from benchctl's own code;
- `native_output_silenced()` points file descriptor 2 at /dev/null while vLLM and torch start (the engine wraps its
  start in it): C++ warnings, Triton notices and vLLM's weight-loading bar bypass Python's logging. A failed start
  still reaches the user as one `BenchctlError` line; `-v` shows everything.
Progress bars are drawn on stderr only when it is a terminal (rich's test; `TTY_COMPATIBLE=1` forces it) and
`--no-progress` is not given; without them third-party download bars are off too (HF_HUB_DISABLE_PROGRESS_BARS,
HF_DATASETS_DISABLE_PROGRESS_BARS, TQDM_DISABLE). Colours follow rich, which honours NO_COLOR.
Outside a CLI session (library use) nothing is changed and progress bars are drawn whenever a caller asks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

QUIET_ENV = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    "PYTHONWARNINGS": "ignore",
}
NO_PROGRESS_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}
THIRD_PARTY_LOGGERS = ("vllm", "torch", "transformers", "datasets", "huggingface_hub", "filelock", "urllib3")


@dataclass(frozen=True)
class Settings:
    """What the current command shows beyond its own results."""

    quiet: bool = False  # third-party logs, warnings and native start-up output hidden
    progress: bool = True  # progress bars allowed (a CLI session: only on a terminal)


_settings = Settings()


def settings() -> Settings:
    return _settings


def progress_allowed() -> bool:
    """Whether a progress bar may be drawn now (library use: always; a CLI session: stderr is a terminal)."""
    return _settings.progress


def stderr_is_terminal() -> bool:
    from rich.console import Console

    return Console(stderr=True).is_terminal


@contextlib.contextmanager
def cli_session(verbose: bool, progress: bool) -> Iterator[Settings]:
    """Settings, environment, loggers and warning filters for one command; all restored afterwards."""
    global _settings
    previous = _settings
    _settings = Settings(quiet=not verbose, progress=progress and stderr_is_terminal())
    env = ({} if verbose else QUIET_ENV) | ({} if _settings.progress else NO_PROGRESS_ENV)
    with _env_defaults(env), _third_party_hidden(not verbose):
        try:
            yield _settings
        finally:
            _settings = previous


@contextlib.contextmanager
def _env_defaults(values: dict[str, str]) -> Iterator[None]:
    added = [name for name in values if name not in os.environ]
    os.environ.update({name: values[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _third_party_hidden(hide: bool) -> Iterator[None]:
    if not hide:
        yield
        return
    loggers = [logging.getLogger(name) for name in THIRD_PARTY_LOGGERS]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore")
        warnings.filterwarnings("default", module=r"benchctl(\.|$)")
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test runner or an in-memory stream
        return None


@contextlib.contextmanager
def native_output_silenced() -> Iterator[None]:
    """In a quiet session, file descriptor 2 goes to /dev/null inside the block (then back)."""
    if not _settings.quiet or _stderr_fd() != 2:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
