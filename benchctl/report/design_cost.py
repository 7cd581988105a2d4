"""The design advisor's cost model: what one matrix cell costs, measured on the pilot's runs.

A cell = start-up + training + the final held-out evaluation [our choice of split]:
* training: the run's logged seconds, time/step summed over steps plus its periodic held-out evaluations
  (time/eval): a design that keeps the training budget keeps them;
* final evaluation: seconds per evaluated sample x questions x samples per question.  The rate is the pilot's own
  final evaluations (file times: RUN/model written -> RUN/eval/final/summary.parquet written, over their samples),
  else its timed periodic evaluations (time/eval over the samples of RUN/eval/step-N, N >= 1: the same engine and
  task; fewer samples a question batch worse, so this rate is high), else its training rollouts (time/rollout over
  rollout/samples_total), said in `eval_source`;
* start-up: what the cell's wall clock (RUN/config.json written -> RUN/eval/final/summary.parquet written) holds
  beyond the two, the mean over the pilot's runs (a serial matrix starts its engine once: the mean spreads that over
  its cells), at least 0 (engine start, weight loading, checkpoints).
A design of A arms x S seeds costs A S (start-up + training + final evaluation) x cores / 3600 core-hours, `cores`
the cores one cell holds.  Training tokens stay the pilot's: the advisor does not trade them (docs/report.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.report.load import ReportData
from benchctl.results.runinfo import eval_tasks, read_eval_problems
from benchctl.results.train_run import eval_dir, list_evals


@dataclass(frozen=True)
class CellCost:
    """Seconds of one cell of the pilot, and the rate its final evaluation scales with (module docstring)."""

    train_s: float  # mean over runs: training steps + periodic evaluations
    eval_sample_s: float  # seconds per evaluated sample (question x sample)
    startup_s: float  # mean over runs of the wall clock the two leave out
    final_samples: float  # mean over runs: questions x samples of the final evaluation, every task
    measured_s: float  # mean wall clock of a cell (NaN when the files do not tell)
    tokens: float  # mean rollout tokens of a run (the training budget the plan keeps)
    eval_source: str  # "final evaluations" | "periodic evaluations" | "training rollouts"
    runs: int

    def cell_s(self, questions: float, samples: float, pilot_questions: float, pilot_samples: float) -> float:
        """Seconds of a cell evaluating `questions` x `samples` where the pilot evaluated pilot_questions x
        pilot_samples of the planned task (the other tasks of its final evaluation scale with it)."""
        scale = questions * samples / (pilot_questions * pilot_samples)
        return self.startup_s + self.train_s + self.eval_sample_s * self.final_samples * scale

    def core_hours(self, cells: float, questions, samples, pilot_questions, pilot_samples, cores: float) -> float:
        return cells * self.cell_s(questions, samples, pilot_questions, pilot_samples) * cores / 3600.0


def _eval_samples(folder: Path) -> float:
    """questions x samples of one eval folder, over its tasks."""
    return float(sum(read_eval_problems(folder, t).column("n").to_numpy().sum() for t in eval_tasks(folder)))


def _wall_s(run: Path) -> float:
    """Seconds from RUN/config.json to RUN/eval/final/summary.parquet (file times), NaN when either is missing."""
    start, end = run / "config.json", eval_dir(run) / "summary.parquet"
    return end.stat().st_mtime - start.stat().st_mtime if start.is_file() and end.is_file() else np.nan


def _final_s(run: Path) -> float:
    """Seconds from the final model's last file to RUN/eval/final/summary.parquet, NaN when either is missing."""
    end, model = eval_dir(run) / "summary.parquet", [p for p in (run / "model").glob("*") if p.is_file()]
    return end.stat().st_mtime - max(p.stat().st_mtime for p in model) if end.is_file() and model else np.nan


def _run_seconds(path: Path, m: pd.DataFrame) -> dict:
    """One run's training seconds, timed evaluation seconds and samples, rollout seconds and samples, wall."""
    step_s = float(m["time/step"].sum()) if "time/step" in m else 0.0
    timed = m[m["time/eval"].notna()] if "time/eval" in m else pd.DataFrame({"step": [], "time/eval": []})
    folders = dict(list_evals(path))
    timed = timed[timed["step"].isin([s for s in folders if s is not None])]
    rollout = float(m["time/rollout"].sum()) if "time/rollout" in m else np.nan
    samples = float(m["rollout/samples_total"].max()) if "rollout/samples_total" in m else np.nan
    final = eval_dir(path)
    return {
        "train_s": step_s + (float(m["time/eval"].sum()) if "time/eval" in m else 0.0),
        "eval_s": float(timed["time/eval"].sum()),
        "eval_samples": sum(_eval_samples(folders[s]) for s in timed["step"]),
        "rollout_s": rollout,
        "rollout_samples": samples,
        "final_samples": _eval_samples(final) if (final / "config.json").is_file() else np.nan,
        "wall_s": _wall_s(path),
        "final_s": _final_s(path),
        "tokens": float(m["rollout/tokens_total"].max()) if "rollout/tokens_total" in m else np.nan,
    }


def cell_cost(data: ReportData) -> CellCost:
    """The pilot's CellCost from its runs' metrics, evaluation folders and file times (module docstring)."""
    rows = []
    for run_id, path in zip(data.runs["run_id"], data.runs["path"], strict=True):
        m = data.metrics[data.metrics["run_id"] == run_id] if len(data.metrics) else pd.DataFrame()
        if len(m):
            rows.append(_run_seconds(Path(path), m))
    t = pd.DataFrame(rows)
    if t.empty:
        return CellCost(np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, "none", 0)
    timed = t[t["final_s"].notna() & (t["final_s"] >= 0) & t["final_samples"].notna()]
    if len(timed) and timed["final_samples"].sum() > 0:
        rate, source = timed["final_s"].sum() / timed["final_samples"].sum(), "final evaluations"
    elif t["eval_samples"].sum() > 0:
        rate, source = t["eval_s"].sum() / t["eval_samples"].sum(), "periodic evaluations"
    else:
        rate, source = t["rollout_s"].sum() / t["rollout_samples"].sum(), "training rollouts"
    final = float(t["final_samples"].mean())
    startup = t["wall_s"] - t["train_s"] - rate * t["final_samples"]
    startup_s = max(float(startup.mean()), 0.0) if startup.notna().any() else 0.0
    return CellCost(
        float(t["train_s"].mean()), float(rate), startup_s, final, float(t["wall_s"].mean()),
        float(t["tokens"].mean()), source, len(t),
    )  # fmt: skip
