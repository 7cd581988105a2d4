"""`benchctl replay RUN --estimators a,b`: how other estimators would have weighted a run's own batches.

Reads RUN/rollouts/ through the storage layer (`benchctl.results.train_run`), rebuilds each step's rewards
(P, G) (groups in logged order, samples by index) and feeds them, step after step, to a fresh instance of each
estimator (`benchctl.estimators.get_estimator`), so stateful ones (HA-DW's anchor, AVSPO's tau) carry state
exactly as in training.  The run's logged advantages appear as the row `logged`.  No model, no GPU.

Per step and estimator [our choices]: a rollout is *correct* when its reward > `correct_above` (0 for binary
verifiable rewards); a group is *degenerate* when all its rewards are equal; among non-degenerate groups a
prompt is *hard* when its group accuracy is < `hard_below` (0.5), else *easy*.  Masses are sums of |A|:
share_correct = |A| on correct / |A| on all, share_hard = |A| on hard / |A| on non-degenerate groups,
degenerate_mass = |A| on degenerate groups / |A| on all (GRPO: exactly 0), plus the signed sums on correct and
wrong rollouts, |A| per rollout, and the estimator's own diagnostics (`diag/<name>`).  Sequence-level only:
OAR's token weights need per-token scores the rollout log does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.errors import BenchctlError, check_range
from benchctl.fields import setting
from benchctl.results.train_run import iter_rollout_steps

_COLUMNS = ["step", "group", "sample", "reward", "advantage", "problem_id"]


@dataclass(frozen=True)
class ReplayConfig:
    """Everything `benchctl replay` needs."""

    run: str = setting("", "training run folder with rollouts/part-*.parquet")
    estimators: str = setting("grpo", "estimator specs, e.g. 'grpo,ha_dw(lambda_scale=1.5),a_grae(base=dr_grpo)'")
    out: str | None = setting(None, "folder for replay_steps.parquet, replay_summary.parquet and replay.png")
    correct_above: float = setting(0.0, "a rollout is correct when its reward exceeds this")
    hard_below: float = setting(0.5, "a non-degenerate prompt is hard when its group accuracy is below this")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|default"})

    def __post_init__(self) -> None:
        check_range("hard_below", self.hard_below, 0.0, 1.0)


@dataclass
class ReplayResult:
    """Per-step rows (estimator x step), the per-estimator summary, the figure (PNG) and written files."""

    steps: pd.DataFrame
    summary: pd.DataFrame
    figure: bytes | None
    files: list[Path] = field(default_factory=list)

    def rich_table(self):
        from benchctl.report.render import rich_table

        return rich_table(self.summary, "replay: how each estimator weights the run's batches (means over steps)")


def step_arrays(table) -> tuple[np.ndarray, np.ndarray]:
    """One step's rollouts -> rewards (P, G) and logged advantages (P, G), groups in logged order."""
    frame = table.to_pandas()
    rewards = frame.pivot(index="group", columns="sample", values="reward")
    if rewards.isna().any().any():
        raise BenchctlError(f"step {int(frame['step'].iloc[0])}: groups have different sizes; cannot form (P, G)")
    adv = frame.pivot(index="group", columns="sample", values="advantage").loc[rewards.index, rewards.columns]
    return rewards.to_numpy(np.float64), adv.to_numpy(np.float64)


def step_prompt_ids(table) -> list[str]:
    """One step's problem id per group, in `step_arrays`' group order (history-aware estimators such as DBB follow
    them; the rollouts hold no log-probs, so CoDaPO replays with confidence 1, estimators/codapo.py)."""
    return table.to_pandas().groupby("group")["problem_id"].first().sort_index().astype(str).tolist()


def weighting(rewards: np.ndarray, adv: np.ndarray, correct_above: float, hard_below: float) -> dict:
    """Where the advantage mass of one batch goes (see the module docstring)."""
    correct = rewards > correct_above  # (P, G)
    degenerate = np.all(rewards == rewards[:, :1], axis=1)  # (P,)
    hard = ~degenerate & (correct.mean(axis=1) < hard_below)  # (P,)
    mag = np.abs(adv)  # (P, G)
    total = mag.sum()
    live = mag[~degenerate].sum()
    share = lambda part, whole: float(part / whole) if whole > 0 else np.nan  # noqa: E731
    return {
        "groups": rewards.shape[0],
        "degenerate_groups": float(degenerate.mean()),
        "abs_per_rollout": float(mag.mean()),
        "share_correct": share(mag[correct].sum(), total),
        "share_hard": share(mag[hard].sum(), live),
        "degenerate_mass": share(mag[degenerate].sum(), total),
        "signed_correct": float(adv[correct].sum()),
        "signed_wrong": float(adv[~correct].sum()),
    }


def _make(specs):
    return {spec.label: spec.make() for spec in specs}


def replay_rows(run: Path, specs, config: ReplayConfig) -> tuple[list[dict], dict]:
    """Rows for every (estimator, step), and per-estimator correlation with the logged advantages."""
    estimators, rows = _make(specs), []
    paired: dict[str, list] = {label: [] for label in estimators}
    for step, table in iter_rollout_steps(run, _COLUMNS):
        rewards, logged = step_arrays(table)
        ids = step_prompt_ids(table)
        rows.append(
            {"estimator": "logged", "step": step, **weighting(rewards, logged, config.correct_above, config.hard_below)}
        )
        for label, est in estimators.items():
            adv = np.asarray(est.advantages(rewards, prompt_ids=ids), dtype=np.float64)  # (P, G)
            paired[label].append(np.stack([adv.ravel(), logged.ravel()]))
            diag = {f"diag/{k}": v for k, v in est.diagnostics().items()}
            rows.append(
                {
                    "estimator": label,
                    "step": step,
                    **weighting(rewards, adv, config.correct_above, config.hard_below),
                    **diag,
                }
            )
    if not rows:
        raise BenchctlError(f"{run}: no rollouts logged (rollouts/part-*.parquet); nothing to replay")
    return rows, {label: np.concatenate(v, axis=1) for label, v in paired.items()}


def _agreement(pairs: np.ndarray) -> tuple[float, float]:
    """(Pearson correlation, max |difference|) between replayed and logged advantages."""
    a, b = pairs
    corr = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else np.nan
    return corr, float(np.max(np.abs(a - b)))


def summarise(steps: pd.DataFrame, pairs: dict) -> pd.DataFrame:
    """Means over steps per estimator (logged first), with agreement to the logged advantages."""
    cols = ["abs_per_rollout", "share_correct", "share_hard", "degenerate_mass", "signed_correct", "signed_wrong"]
    summary = steps.groupby("estimator", sort=False)[cols].mean().reset_index()
    summary.insert(1, "steps", steps.groupby("estimator", sort=False).size().to_numpy())
    agree = {label: _agreement(p) for label, p in pairs.items()}
    summary["corr_logged"] = [agree.get(e, (1.0, 0.0))[0] for e in summary["estimator"]]
    summary["max_diff_logged"] = [agree.get(e, (1.0, 0.0))[1] for e in summary["estimator"]]
    return summary


def replay_figure(steps: pd.DataFrame) -> bytes:
    """Four panels by step, one line per estimator: share of |A| on correct rollouts, on hard prompts,
    on degenerate groups, and |A| per rollout."""
    from benchctl.report.plots import _grid, _png  # the report's figure helpers

    panels = (
        ("share_correct", "|A| share on correct rollouts"),
        ("share_hard", "|A| share on hard prompts"),
        ("degenerate_mass", "|A| share on degenerate groups"),
        ("abs_per_rollout", "|A| per rollout"),
    )
    fig, axes = _grid(4, width=5.0, height=3.2, max_cols=2)
    for ax, (col, title) in zip(axes, panels):
        for i, (label, part) in enumerate(steps.groupby("estimator", sort=False)):
            logged = label == "logged"
            ax.plot(
                part["step"],
                part[col],
                ls="--" if logged else "-",
                color="k" if logged else f"C{i}",
                label=label,
                lw=1.2,
            )
        ax.set(title=title, xlabel="step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return _png(fig)


def run_replay(config: ReplayConfig) -> ReplayResult:
    """Replay the run's rollouts through each estimator; write tables and the plot when `config.out` is set."""
    from benchctl.lab.specs import parse_estimators

    run = Path(config.run)
    if not (run / "rollouts").is_dir():
        raise BenchctlError(f"{run}: no rollouts/ folder; replay needs a training run that logged its rollouts")
    specs = parse_estimators(config.estimators)
    rows, pairs = replay_rows(run, specs, config)
    steps = pd.DataFrame(rows)
    result = ReplayResult(steps, summarise(steps, pairs), replay_figure(steps))
    if config.out:
        _write(result, Path(config.out))
    return result


def _write(result: ReplayResult, out: Path) -> None:
    import pyarrow as pa

    from benchctl.results.store import write_atomic, write_table

    for name, frame in (("replay_steps", result.steps), ("replay_summary", result.summary)):
        write_table(out / f"{name}.parquet", pa.Table.from_pandas(frame, preserve_index=False))
        result.files.append(out / f"{name}.parquet")
    write_atomic(out / "replay.png", lambda tmp: tmp.write_bytes(result.figure))
    result.files.append(out / "replay.png")
