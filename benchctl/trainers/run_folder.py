"""A training run's folder through its life: start, checkpoint, stop, resume. Every resume question is answered here.

    where does a run resume?      `resume_step`: the step RUN/checkpoints/latest names (None: start afresh)
    what may change on resume?    the settings whose metadata says change="resume" or "free" (`TrainConfig`);
                                  `config.resumed_config` applies them to the stored config.json
    what is thrown away?          `open_run` -> `train_run.discard_after`: metrics rows, rollout parts, evals and
                                  checkpoints of later steps, and every half-written temporary
    what is restored?             `restore`: weights (loaded by the caller from the checkpoint's model/), optimizer,
                                  scheduler, RNG streams, estimator state, the counters (`TrainState`) and the
                                  metrics rows up to the checkpoint
    is it finished?               `finished`: RUN/model/ holds the exported final policy
    what is kept once evaluated?  `prune`: all, the model without the checkpoints, or the results alone

The metrics are stored once, in RUN/train_metrics.parquet (rewritten whole, atomically, after every step); a
checkpoint holds the counters, not the metrics, and a resume reads the rows back from the parquet file, which
`discard_after` has cut back to the checkpoint's step. The layout and the readers are `benchctl.results.train_run`
(the storage layer, shared with the report); what a checkpoint holds is `benchctl.trainers.checkpoint`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from benchctl.results import train_run


@dataclass(frozen=True)
class TrainState:
    """The counters that move from step to step; saved whole in every checkpoint (state.json)."""

    step: int = 0  # last finished step
    data_pos: int = 0  # prompts drawn so far (position in the seeded data order)
    tokens_total: int = 0  # rollout tokens generated so far
    samples_total: int = 0
    focus: tuple = ()  # data positions the next step re-rolls (CoDaPO's focus step, `trainers.focus`); () = normal


@dataclass
class RunFolder:
    """RUN/ of one training run and its metrics rows so far (the content of RUN/train_metrics.parquet)."""

    path: Path
    resume_step: int | None = None  # the checkpoint this process continued from; None for a new run
    metrics: list[dict[str, float]] = field(default_factory=list)

    def log(self, row: dict[str, float]) -> None:
        """Append one step's metrics row and rewrite RUN/train_metrics.parquet (atomically)."""
        self.metrics.append(row)
        train_run.write_train_metrics(self.path, self.metrics)

    def write_rollouts(self, step: int, table) -> None:
        """RUN/rollouts/part-NNNNN.parquet of step `step` (a redone step after a resume rewrites its part)."""
        train_run.write_rollouts(self.path, step, table)

    def checkpoint(self, state: TrainState, *, policy, estimator) -> Path:
        """RUN/checkpoints/step-N (built in a scratch folder, then renamed; `latest` moves last)."""
        from benchctl.trainers import checkpoint

        return checkpoint.save(
            self.path,
            state,
            model=policy.model,
            source=policy.source,
            optimizer=policy.optimizer,
            scheduler=policy.scheduler,
            estimator=estimator,
        )

    def export_model(self, policy) -> Path:
        """RUN/model/: the final policy as an HF folder, built in a temporary sibling and renamed into place."""
        from benchctl.trainers import checkpoint

        final = self.path / "model"
        scratch = self.path / f".model.{os.getpid()}.tmp"
        shutil.rmtree(scratch, ignore_errors=True)
        checkpoint.export_model(policy.model, policy.source, scratch)
        if final.exists():
            shutil.rmtree(final)
        os.replace(scratch, final)
        return final


# ---- questions about a folder (reads only) ------------------------------------------------------------------


def resume_step(run: Path) -> int | None:
    """The step a resumed run continues from (its latest checkpoint), or None when it has none."""
    return train_run.latest_checkpoint_step(Path(run))


def finished(run: Path) -> bool:
    """True when the run exported its final policy (RUN/model/config.json): it trained to its end."""
    return (Path(run) / "model" / "config.json").is_file()


PRUNED = "PRUNED"  # RUN/model/PRUNED: the weights were removed on purpose (`prune`), names what is left


def prune(run: Path, keep: str) -> None:
    """Remove what a finished, evaluated run folder need not keep (the matrix file's `keep:`): `all` nothing;
    `model` RUN/checkpoints/; `results` also RUN/model/'s weight files, leaving its config (so the run still reads as
    finished) and a PRUNED note. Metrics, rollouts and evaluations stay in every case."""
    run = Path(run)
    if keep == "all":
        return
    shutil.rmtree(run / "checkpoints", ignore_errors=True)
    if keep == "results" and finished(run):
        (run / "model" / PRUNED).write_text("weights removed after the final evaluation (matrix keep: results)\n")
        for path in (run / "model").glob("*.safetensors"):
            path.unlink()


def pruned(run: Path) -> bool:
    """True when `prune` removed the run's final weights."""
    return (Path(run) / "model" / PRUNED).is_file()


def started(run: Path) -> bool:
    """True when the trainer wrote the run's config.json: the folder can be resumed (from step 0 at worst)."""
    return (Path(run) / "config.json").is_file()


def checkpoint_weights(run: Path, step: int | None) -> Path | None:
    """The HF folder of checkpoint `step`'s policy weights (None for a new run: the initial model is loaded)."""
    return train_run.checkpoint_dir(Path(run), step) / "model" if step else None


# ---- the life cycle ---------------------------------------------------------------------------------------


def open_run(path: Path, record: dict, resume: bool) -> RunFolder:
    """A new run: create RUN/ with its config.json (an existing non-empty folder is refused). A resumed one: cut
    RUN/ back to its latest checkpoint (`train_run.discard_after`), rewrite config.json (a resume may have changed
    resumable settings), and read the metrics rows up to that checkpoint back from train_metrics.parquet."""
    path = Path(path)
    if not resume:
        train_run.create_run(path, record)
        return RunFolder(path)
    step = resume_step(path)
    train_run.discard_after(path, step or 0)
    train_run.write_config(path, record)
    return RunFolder(path, step, _metrics_rows(path))


def restore(folder: RunFolder, *, policy, estimator) -> TrainState:
    """Optimizer, scheduler, RNG streams and estimator state from the folder's resume checkpoint; returns the
    counters. The weights were loaded from `checkpoint_weights` when the policy was built."""
    from benchctl.trainers import checkpoint

    stored = checkpoint.load(
        train_run.checkpoint_dir(folder.path, folder.resume_step),
        optimizer=policy.optimizer,
        scheduler=policy.scheduler,
        estimator=estimator,
    )
    stored.pop("metrics", None)  # checkpoints written before the metrics were stored once held them too
    return TrainState(**stored)


def _metrics_rows(run: Path) -> list[dict[str, float]]:
    """RUN/train_metrics.parquet as the trainer's rows: a metric missing at a step (null) is absent from its row."""
    table = train_run.read_train_metrics(run)
    if table is None:
        return []
    return [{k: v for k, v in row.items() if v is not None} for row in table.to_pylist()]
