"""Experiment trackers: `--report-to none|tensorboard|wandb|trackio` (a comma list), each fed the same numeric
scalars as `RUN/train_metrics.parquet`, one row per step.

    trackers = open_trackers("tensorboard,wandb", run, config=cfg_dict, resume_step=state.step)
    trackers.log(step, row)        # after each step's row is final (eval columns included)
    trackers.close()               # at the end, also on Ctrl-C / errors (or `with open_trackers(...) as t:`)

- tensorboard: event files in `RUN/tensorboard/` (`tensorboard --logdir RUN/tensorboard`). A resumed run purges
  the events after its checkpoint's step (`SummaryWriter(purge_step=...)`), so a crash does not leave the
  abandoned steps twice in the curves.
- wandb: the run's files under `RUN/wandb/`, the run id in `RUN/wandb_id.txt` so a resume continues the same
  wandb run. Offline [our choice: training machines often have no network, and an online init would block]
  unless `WANDB_MODE` says otherwise or `WANDB_API_KEY` is set; `wandb sync RUN/wandb/offline-run-*` uploads
  an offline run later.
- trackio: `trackio.init(project, name, config)` / `trackio.log` / `trackio.finish`; trackio keeps its own local
  store (`TRACKIO_DIR`, default under the Hugging Face cache).

Each backend is an optional extra (`pip install 'benchctl[tensorboard]'`, `[wandb]`, `[trackio]`); nothing is
imported until asked for, and a missing package is one `BenchctlError` line naming the extra. Values that are
not finite numbers (NaN eval columns of steps without an eval, strings) are skipped, as the parquet file's
numeric columns hold them as null.
"""

from __future__ import annotations

import math
import numbers
import os
import uuid
from pathlib import Path

from benchctl.errors import BenchctlError

BACKENDS = ("tensorboard", "wandb", "trackio")


def _missing(backend: str, error: ImportError) -> BenchctlError:
    return BenchctlError(f"--report-to {backend} needs the {backend!r} package: pip install 'benchctl[{backend}]'")


def numeric_scalars(row: dict) -> dict[str, float]:
    """The finite numeric entries of a metrics row as floats (bools 0/1, numpy/torch 0-d values), `step` left out."""
    out = {}
    for key, value in row.items():
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # torch / numpy 0-d
            value = value.item()
        if key != "step" and isinstance(value, numbers.Real) and math.isfinite(float(value)):
            out[key] = float(value)
    return out


class TensorBoardTracker:
    """Scalars to `RUN/tensorboard/` with torch's `SummaryWriter` (needs the `tensorboard` package)."""

    def __init__(self, run: Path, resume_step: int | None = None) -> None:
        try:
            import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            raise _missing("tensorboard", error) from None
        purge = resume_step + 1 if resume_step else None  # drop events after the checkpoint we resume from
        self.writer = SummaryWriter(log_dir=str(Path(run) / "tensorboard"), purge_step=purge)

    def log(self, step: int, row: dict) -> None:
        for key, value in numeric_scalars(row).items():
            self.writer.add_scalar(key, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """A wandb run in `RUN/wandb/`, offline unless `WANDB_MODE` / `WANDB_API_KEY` say otherwise."""

    def __init__(self, run: Path, config: dict | None, name: str, project: str) -> None:
        try:
            import wandb
        except ImportError as error:
            raise _missing("wandb", error) from None
        run = Path(run)
        id_file = run / "wandb_id.txt"
        run_id = id_file.read_text().strip() if id_file.is_file() else uuid.uuid4().hex[:12]
        id_file.write_text(run_id + "\n")
        mode = os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")
        self.run = wandb.init(
            project=project, name=name, id=run_id, dir=str(run), config=config, mode=mode, resume="allow"
        )

    def log(self, step: int, row: dict) -> None:
        self.run.log(numeric_scalars(row), step=step)

    def close(self) -> None:
        self.run.finish()


class TrackioTracker:
    """A trackio run (trackio's local store; `trackio show` displays it)."""

    def __init__(self, config: dict | None, name: str, project: str) -> None:
        try:
            import trackio
        except ImportError as error:
            raise _missing("trackio", error) from None
        self.trackio = trackio
        trackio.init(project=project, name=name, config=config, resume="allow")

    def log(self, step: int, row: dict) -> None:
        self.trackio.log(numeric_scalars(row), step=step)

    def close(self) -> None:
        self.trackio.finish()


class Trackers:
    """Several trackers as one (none at all: a null object, so the loop has no `if tracking:` branch)."""

    def __init__(self, trackers: list) -> None:
        self.trackers = trackers

    def log(self, step: int, row: dict) -> None:
        for tracker in self.trackers:
            tracker.log(step, row)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()
        self.trackers = []

    def __enter__(self) -> Trackers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def parse_report_to(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """`"tensorboard,wandb"` (or a list) -> ("tensorboard", "wandb"); "none" or "" -> (). Unknown names fail."""
    names = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    names = [n for n in names if n != "none"]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise BenchctlError(f"--report-to {unknown[0]!r} is not valid; choose from: none, {', '.join(BACKENDS)}")
    return tuple(dict.fromkeys(names))


def open_trackers(
    report_to: str | list[str] | tuple[str, ...],
    run: Path | str,
    config: dict | None = None,
    name: str | None = None,
    project: str = "benchctl",
    resume_step: int | None = None,
) -> Trackers:
    """The trackers `report_to` names, writing under the run folder `run`; `config` (JSON-able) goes to wandb /
    trackio as the run config, `name` defaults to the folder's name, `resume_step` is the checkpoint step a
    resumed run starts after (None for a fresh run)."""
    run = Path(run)
    name = name or run.name
    opened = []
    try:
        for backend in parse_report_to(report_to):
            if backend == "tensorboard":
                opened.append(TensorBoardTracker(run, resume_step))
            elif backend == "wandb":
                opened.append(WandbTracker(run, config, name, project))
            else:
                opened.append(TrackioTracker(config, name, project))
    except BaseException:
        Trackers(opened).close()
        raise
    return Trackers(opened)
