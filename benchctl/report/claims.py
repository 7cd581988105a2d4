"""The seed papers' claims, tested: a claims file and the verdict of each claim from seed-level statistics.

A claims file (YAML) lists what papers report, in terms the report can check:

    claims:
      - paper: "2601.08521"                       # arXiv id
        claim: HA-DW improves GRPO                # the paper's statement
        arm: ha_dw                                # estimator_label of the arm ...
        baseline: grpo                            # ... and of the baseline
        metric: pass@k                            # pass@k (held-out) or a training metric, e.g. acr/all
        k: 1                                      # for pass@k
        direction: greater                        # greater | less | at_least (non-inferiority) | at_most
        paper_effect: "+2.1 points (MATH500 avg)" # the paper's own number, shown beside ours
        eval_task: arith                          # optional: the held-out task (default: the only one)
        arm_where: {group_size: 8}                # optional run filters for the arm / the baseline
        baseline_where: {group_size: 16}
        relative: false                           # true: effect = mean(arm) / mean(baseline) - 1
        margin: 0.0                               # non-inferiority margin (at_least / at_most)
        testbed: null                             # a reason when the embedded testbed cannot express the claim

Statistics [our choice]: the training run is the unit, as in the report's comparisons. The arm's and the
baseline's runs are paired by seed (same data order and sampling seeds) and, for pass@k, by held-out problem; the
effect is the mean difference and its interval the report's seed-level one (`benchctl.report.stats.
crossed_estimate`: between-seed plus between-problem variance, t with seeds - 1 degrees of freedom; a training
metric, e.g. acr/all, is one mean per run, so only the seed term remains). For a relative effect (mean(arm) /
mean(baseline) - 1) the interval is a percentile bootstrap over seeds. Fewer than 3 paired seeds: no verdict.
Verdicts: `greater` holds when the interval's low end is above 0, does not hold when its high end is at or below 0;
`at_least` holds when the low end is above -margin, does not hold when the high end is below -margin (mirrored for
`less` / `at_most`); otherwise (or with too few seeds) `inconclusive`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchctl.errors import BenchctlError

DIRECTIONS = ("greater", "less", "at_least", "at_most")
VERDICTS = ("holds", "does not hold", "inconclusive")
CLAIM_COLUMNS = (
    "paper",
    "claim",
    "arm",
    "baseline",
    "metric",
    "k",
    "direction",
    "relative",
    "effect",
    "low",
    "high",
    "seeds",
    "verdict",
    "paper_effect",
    "reason",
)
MIN_SEEDS = 3


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as the report tests it (see the module docstring for each field)."""

    paper: str
    claim: str
    arm: str
    baseline: str
    metric: str = "pass@k"
    k: int | None = 1
    direction: str = "greater"
    paper_effect: str = ""
    eval_task: str | None = None
    arm_where: Mapping[str, Any] = field(default_factory=dict)
    baseline_where: Mapping[str, Any] = field(default_factory=dict)
    relative: bool = False
    margin: float = 0.0
    testbed: str | None = None


CLAIM_KEYS = tuple(f.name for f in dataclasses.fields(Claim))  # the keys a claims file may give


def read_claims(path: str | Path) -> list[Claim]:
    """Parse a claims file; every problem is one BenchctlError line naming the file and the claim."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchctlError(f"claims file {p} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BenchctlError(f"claims file {p} is not readable YAML ({type(exc).__name__})") from None
    items = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise BenchctlError(f"claims file {p} must hold 'claims:', a list of claims with keys: {', '.join(CLAIM_KEYS)}")
    return [_claim(item, f"{p}: claim {i + 1}") for i, item in enumerate(items)]


def _claim(item: Any, where: str) -> Claim:
    if not isinstance(item, dict):
        raise BenchctlError(f"{where} must be a mapping with keys: {', '.join(CLAIM_KEYS)}")
    unknown = [str(k) for k in item if k not in CLAIM_KEYS]
    if unknown:
        raise BenchctlError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(CLAIM_KEYS)}")
    missing = [k for k in ("paper", "claim", "arm", "baseline") if not item.get(k)]
    if missing:
        raise BenchctlError(f"{where}: {missing[0]!r} is required")
    values = {k: item[k] for k in CLAIM_KEYS if k in item}
    values["paper"], values["paper_effect"] = str(values["paper"]), str(values.get("paper_effect", ""))
    if values.get("direction", "greater") not in DIRECTIONS:
        raise BenchctlError(f"{where}: direction {values['direction']!r}; choose one of: {', '.join(DIRECTIONS)}")
    metric = values.get("metric", "pass@k")
    k = values.get("k", 1)
    if metric == "pass@k" and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise BenchctlError(f"{where}: k must be an integer >= 1 for metric pass@k; got {k!r}")
    for key in ("arm_where", "baseline_where"):
        if not isinstance(values.get(key, {}), dict):
            raise BenchctlError(f"{where}: {key} must be a mapping of run columns to values")
    margin = values.get("margin", 0.0)
    if not isinstance(margin, (int, float)) or isinstance(margin, bool) or margin < 0:
        raise BenchctlError(f"{where}: margin must be a number >= 0; got {margin!r}")
    return Claim(**values)


# ---- evaluation -----------------------------------------------------------------------------------------------


def _select(runs: pd.DataFrame, label: str, where: Mapping[str, Any]) -> pd.DataFrame:
    from benchctl.report.config import _norm

    arm_col = "estimator_label" if "estimator_label" in runs else "arm"
    keep = runs[arm_col].astype(str) == label
    for key, value in where.items():
        if key not in runs:
            return runs.iloc[0:0]
        keep &= runs[key].map(lambda v: _norm(None if pd.isna(v) else v)) == _norm(value)
    return runs[keep]


def run_values(data, claim: Claim) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """Values of the arm and of the baseline as units x seeds frames (runs of one seed averaged): problems x seeds
    of per-problem pass@k, or one row of per-run training-metric means; or a reason why there are none."""
    runs, empty = data.runs, pd.DataFrame()
    arm, base = _select(runs, claim.arm, claim.arm_where), _select(runs, claim.baseline, claim.baseline_where)
    if arm.empty or base.empty:
        missing = claim.arm if arm.empty else claim.baseline
        return empty, empty, f"no finished run of {missing!r} matches the claim"
    if claim.metric == "pass@k":
        frame = data.problems[data.problems["k"] == claim.k]
        tasks = sorted(frame["eval_task"].unique())
        task = claim.eval_task or (tasks[0] if len(tasks) == 1 else None)
        if task is None or task not in tasks:
            return empty, empty, f"pass@{claim.k} on eval task {task!r}: not found"
        values = frame[frame["eval_task"] == task][["run_id", "problem_id", "value"]]
    else:
        if claim.metric not in data.metrics:
            return empty, empty, f"training metric {claim.metric!r} not logged"
        values = data.metrics.groupby("run_id")[claim.metric].mean().rename("value").reset_index()
        values["problem_id"] = "run"

    def wide(rows: pd.DataFrame) -> pd.DataFrame:
        joined = values.merge(rows[["run_id", "seed"]], on="run_id").dropna(subset=["value"])
        return joined.pivot_table(index="problem_id", columns="seed", values="value", aggfunc="mean")

    return wide(arm), wide(base), None


def seed_effect(arm: pd.DataFrame, base: pd.DataFrame, relative: bool, confidence: float = 0.95, seed: int = 0):
    """(effect, low, high, paired seeds) from units x seeds values paired by seed and unit (module docstring)."""
    from benchctl.report.stats import crossed_estimate

    seeds = sorted(set(arm.columns) & set(base.columns))
    if not seeds:
        return np.nan, np.nan, np.nan, 0
    both = arm[seeds].join(base[seeds], how="inner", lsuffix="_arm", rsuffix="_base").dropna()
    a, b = both.iloc[:, : len(seeds)].to_numpy(float), both.iloc[:, len(seeds) :].to_numpy(float)
    if not relative:
        est = crossed_estimate(a - b, confidence)
        return est.mean, est.low, est.high, len(seeds)
    a, b = a.mean(axis=0), b.mean(axis=0)  # per-seed means
    effect = float(a.mean() / b.mean() - 1) if b.mean() else np.nan
    if len(seeds) < 2:
        return effect, np.nan, np.nan, len(seeds)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(seeds), size=(5000, len(seeds)))
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = a[picks].mean(axis=1) / b[picks].mean(axis=1) - 1
    reps = reps[np.isfinite(reps)]
    tail = 100 * (1 - confidence) / 2
    return effect, float(np.percentile(reps, tail)), float(np.percentile(reps, 100 - tail)), len(seeds)


def verdict(direction: str, low: float, high: float, seeds: int, margin: float = 0.0) -> str:
    """holds / does not hold / inconclusive from the interval [low, high] (module docstring)."""
    if seeds < MIN_SEEDS or not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if direction in ("less", "at_most"):  # mirror onto greater / at_least
        low, high = -high, -low
    bar = 0.0 if direction in ("greater", "less") else -margin
    if low > bar:
        return "holds"
    if high <= bar if direction in ("greater", "less") else high < bar:
        return "does not hold"
    return "inconclusive"


def evaluate_claims(data, claims: list[Claim], confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The `claims.parquet` table: one row per claim (CLAIM_COLUMNS), a reason where no verdict could be made."""
    rows = []
    for c in claims:
        row = {
            "paper": c.paper,
            "claim": c.claim,
            "arm": c.arm,
            "baseline": c.baseline,
            "metric": c.metric,
            "k": c.k if c.metric == "pass@k" else None,
            "direction": c.direction,
            "relative": bool(c.relative),
            "paper_effect": c.paper_effect,
        }
        if c.testbed:
            rows.append({**row, "effect": np.nan, "low": np.nan, "high": np.nan, "seeds": 0})
            rows[-1].update(verdict="inconclusive", reason=f"not expressible on this testbed: {c.testbed}")
            continue
        arm, base, reason = run_values(data, c)
        effect, low, high, n = seed_effect(arm, base, c.relative, confidence, seed)
        if reason is None and n < MIN_SEEDS:
            reason = f"too few seeds: {n} paired (at least {MIN_SEEDS})"
        rows.append(
            {
                **row,
                "effect": effect,
                "low": low,
                "high": high,
                "seeds": n,
                "verdict": verdict(c.direction, low, high, n, c.margin),
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
