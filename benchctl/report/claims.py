"""The seed papers' claims, tested: a claims file and the verdict of each claim from seed-level statistics.

A claims file (YAML) lists what papers report, in terms the report can check:

    claims:
      - paper: "2601.08521"                       # arXiv id
        claim: HA-DW improves GRPO                # the paper's statement
        arm: ha_dw                                # the arm (a matrix arm, else estimator_label) ...
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
        id: hadw_beats_grpo                       # optional: a name other claims can require
        requires: null                            # optional: the id of the claim this one presupposes
        stated_effect: 0.021                      # optional: low end of the paper's effect, a magnitude in the
                                                  # claim's direction and units (0.04 for +4-6 points of pass@1,
                                                  # 0.58 for "58-63% lower" with relative: true)

Statistics [our choice]: the training run is the unit, as in the report's comparisons. The arm's and the
baseline's runs are paired by seed (same data order and sampling seeds) and, for pass@k, by held-out problem; the
effect is the mean difference and its interval the report's seed-level one (`benchctl.report.stats.
crossed_estimate`, at the report's `--population`; a training metric, e.g. acr/all, is one mean per run, so only
the seed term remains), not Holm-corrected: each claim is its own question. `mde`: the effect that interval's test
detects with 80% power at level 1 - confidence (`stats.minimum_detectable_effect`).
A relative effect (`relative: true`) is read on the log scale:
* pass@k at `--population problems` (new problems like these and new seeds): the log ratio of means
  log R = log(mean(arm) / mean(baseline)) over the problems x seeds cells, its variance by the delta method, the
  crossed variance of Z_ps = arm_ps / mean(arm) - baseline_ps / mean(baseline) (`stats.crossed_log_ratio`):
  effect R - 1, interval exp(log R +- t(df) se) - 1, mde from that se and df;
* a training metric (one value per run), or pass@k at `--population fixed`: a paired t-interval on the per-seed
  log ratios d_s = log(mean_s(arm) / mean_s(baseline)): effect exp(mean d) - 1, interval
  exp(mean d +- t(S-1) sd(d) / sqrt(S)) - 1 (the geometric mean ratio; the problems enter through the per-seed
  means only, so it holds for this problem set).
Coverage (benchmarks/report_claims_coverage.py, docs/report.md "Claims"): the per-seed interval covered a
training metric's true ratio in 94.0-95.7% of replications at 3-10 seeds (the percentile bootstrap over seeds
used before: 74-90%); on pass@k with an arm x problem interaction it covers the population ratio of pass@1 in
73.5-92.0% (fewer the more seeds), the crossed one in 94.6-96.2% of replications, with and without the
interaction, at 3, 5 and 10 seeds. Fewer than 3 paired seeds: no verdict.
A side whose swept setting was chosen leave-one-seed-out (`benchctl.report.tuning`): its seeds are not
independent (each helps choose the others' settings), so the seed part of the variance is the delete-one-seed
jackknife of the claim's own statistic with the choice redone (`seed_jackknife`: the difference, as the
comparisons table; the log ratio of means; the mean per-seed log ratio), the rest as above; for an arm not swept
nothing changes. Measured in benchmarks/report_tuning_bias.py --claims (docs/report.md "Claims").
Verdicts (read in the claim's direction: `less` / `at_most` mirror the interval onto `greater` / `at_least`):
* `greater` holds when the interval's low end is above 0, does not hold when its high end is at or below 0;
  `at_least` holds when the low end is above -margin, does not hold when the high end is below -margin;
* with `stated_effect` e, "paper's effect excluded" replaces holds or inconclusive when the interval's high end
  is below e: the runs rule out an effect as large as the paper's (does not hold stays);
* with `requires`, the claim is "inconclusive" (reason "premise not established") unless the required claim
  holds: "OAR-P at least matches OAR-G" says nothing when OAR-G does not beat GRPO, since two arms that both equal
  GRPO also "match";
* otherwise (or with too few seeds) `inconclusive`.
`inert` names the claim's arm or baseline whose mechanism did not act (median `mechanism_acted_frac` of its runs
under 5%, `benchctl.report.health`): "arm avspo inert: trained as its base (...)"; the verdict is kept, but it is
then a verdict about the base method. `seeds_expected` / `seeds_lost`: the seeds the inputs list for both sides
whatever their runs' status, and those the claim did not get with why (`s4 failed (baseline grpo)`,
`benchctl.report.lost_seeds`); the verdict is made on the seeds there are, and the table marks the shortfall.
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
from benchctl.report.config import MIN_SEEDS
from benchctl.yamlfile import read_yaml

DIRECTIONS = ("greater", "less", "at_least", "at_most")
EXCLUDED = "paper's effect excluded"
VERDICTS = ("holds", "does not hold", "inconclusive", EXCLUDED)
CLAIM_COLUMNS = (
    "id",
    "requires",
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
    "seeds_expected",
    "seeds_lost",
    "mde",
    "margin",
    "stated_effect",
    "verdict",
    "paper_effect",
    "reason",
    "inert",
)


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
    id: str | None = None
    requires: str | None = None
    stated_effect: float | None = None


CLAIM_KEYS = tuple(f.name for f in dataclasses.fields(Claim))  # the keys a claims file may give


def read_claims(path: str | Path) -> list[Claim]:
    """Parse a claims file; every problem is one BenchctlError line naming the file and the claim."""
    p = Path(path)
    data = read_yaml(p, "claims")
    items = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise BenchctlError(f"claims file {p} must hold 'claims:', a list of claims with keys: {', '.join(CLAIM_KEYS)}")
    claims = [_claim(item, f"{p}: claim {i + 1}") for i, item in enumerate(items)]
    _check_requires(claims, p)
    return claims


def _check_requires(claims: list[Claim], path: Path) -> None:
    """Ids are unique; every `requires` names an id of the file; no claim requires itself through a chain."""
    ids: dict[str, int] = {}
    for i, c in enumerate(claims):
        if c.id is not None and ids.setdefault(c.id, i) != i:
            raise BenchctlError(f"{path}: claim {i + 1}: id {c.id!r} is already claim {ids[c.id] + 1}'s")
    for i, c in enumerate(claims):
        seen, current = {i}, c
        while current.requires is not None:
            if current.requires not in ids:
                known = ", ".join(ids) or "none"
                raise BenchctlError(f"{path}: claim {i + 1}: requires {current.requires!r}, no claim has that id "
                                    f"(ids: {known})")  # fmt: skip
            j = ids[current.requires]
            if j in seen:
                raise BenchctlError(f"{path}: claim {i + 1}: its requires chain returns to itself")
            seen.add(j)
            current = claims[j]


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
    _check_numbers_and_ids(values, where)
    return Claim(**values)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))


def _check_numbers_and_ids(values: dict, where: str) -> None:
    """margin >= 0; stated_effect > 0 (a magnitude in the claim's direction); id and requires non-empty text."""
    margin = values.get("margin", 0.0)
    if not _is_number(margin) or margin < 0:
        raise BenchctlError(f"{where}: margin must be a number >= 0; got {margin!r}")
    stated = values.get("stated_effect")
    if stated is not None and (not _is_number(stated) or stated <= 0):
        raise BenchctlError(
            f"{where}: stated_effect must be a number > 0, the low end of the paper's effect in the claim's "
            f"direction and units (0.04 for +4-6 points); got {stated!r}"
        )
    for key in ("id", "requires"):
        value = values.get(key)
        if value is not None and (not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value)):
            raise BenchctlError(f"{where}: {key} must be a name; got {value!r}")
        if value is not None:
            values[key] = str(value)


# ---- evaluation -----------------------------------------------------------------------------------------------


def _select(runs: pd.DataFrame, label: str, where: Mapping[str, Any]) -> pd.DataFrame:
    from benchctl.report.config import _norm
    from benchctl.report.load import arm_column

    keep = runs[arm_column(runs)].astype(str) == label
    for key, value in where.items():
        if key not in runs:
            return runs.iloc[0:0]
        keep &= runs[key].map(lambda v: _norm(None if pd.isna(v) else v)) == _norm(value)
    return runs[keep]


def _lost(data, c: Claim, used: set) -> tuple[int, str]:
    """(seeds expected, lost seeds and why) of the claim's comparison (`benchctl.report.lost_seeds`), from every
    run the inputs list (`ReportData.asked`, any status; the done runs where there is none)."""
    from benchctl.report.lost_seeds import lost_seeds

    asked = getattr(data, "asked", None)
    asked = data.runs if asked is None else asked
    arm, base = _select(asked, c.arm, c.arm_where), _select(asked, c.baseline, c.baseline_where)
    return lost_seeds(arm, base, used, c.baseline)


def _inert(runs: pd.DataFrame, c: Claim) -> str:
    """'arm avspo inert: trained as its base (...)' for the claim's arm and baseline whose mechanism did not act
    (`health.inert_note` of their runs), '; '-joined; '' when both acted or have no mechanism."""
    from benchctl.report.health import inert_note

    notes = [
        (who, name, inert_note(_select(runs, name, where)))
        for who, name, where in (("arm", c.arm, c.arm_where), ("baseline", c.baseline, c.baseline_where))
    ]
    return "; ".join(f"{who} {name} {note}" for who, name, note in notes if note)


def _eval_task(data, claim: Claim) -> tuple[pd.DataFrame, str | None]:
    """(pass@k rows at the claim's k, its eval task: `eval_task`, else the only one; None when not found)."""
    frame = data.problems[data.problems["k"] == claim.k]
    tasks = sorted(frame["eval_task"].unique())
    task = claim.eval_task or (tasks[0] if len(tasks) == 1 else None)
    return frame, task if task in tasks else None


def run_values(data, claim: Claim) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """Values of the arm and of the baseline as units x seeds frames (runs of one seed averaged): problems x seeds
    of per-problem pass@k, or one row of per-run training-metric means; or a reason why there are none."""
    runs, empty = data.runs, pd.DataFrame()
    arm, base = _select(runs, claim.arm, claim.arm_where), _select(runs, claim.baseline, claim.baseline_where)
    if arm.empty or base.empty:
        missing = claim.arm if arm.empty else claim.baseline
        return empty, empty, f"no finished run of {missing!r} matches the claim"
    if claim.metric == "pass@k":
        frame, task = _eval_task(data, claim)
        if task is None:
            return empty, empty, f"pass@{claim.k} on eval task {claim.eval_task!r}: not found"
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


def claim_refits(data, claim: Claim) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The delete-one-seed re-choices of the claim's arm and of its baseline (`crossfit.REFIT_COLUMNS` rows: the
    runs that the choice of a swept setting made without one seed would test) on the claim's eval task and k, or
    on its training metric (`tuning.REFIT_METRIC_COLUMNS`); None when neither side's setting was chosen
    leave-one-seed-out (the plain variance applies)."""
    pass_k = claim.metric == "pass@k"
    refits = getattr(data, "refits" if pass_k else "refit_metrics", None)
    if refits is None or refits.empty or "arm" not in data.runs:
        return None
    if pass_k:
        task = _eval_task(data, claim)[1]
        refits = refits[(refits["eval_task"] == task) & (refits["k"] == claim.k)]
    else:
        refits = refits[refits["metric"] == claim.metric].assign(problem_id="run")  # one unit, as run_values
    sides = tuple(
        refits[refits["arm"].isin(set(_select(data.runs, name, where)["arm"]))]
        for name, where in ((claim.arm, claim.arm_where), (claim.baseline, claim.baseline_where))
    )
    return None if all(side.empty for side in sides) else sides


def seed_jackknife(
    arm: pd.DataFrame, base: pd.DataFrame, refits: tuple[pd.DataFrame, pd.DataFrame], statistic: str
) -> float | None:
    """The seed part of the variance of a claim's statistic when a swept setting was chosen leave-one-seed-out:
    the delete-one-seed jackknife of the whole procedure, the choice included (Quenouille 1956; Tukey 1958;
    `crossfit.jackknife_variance`: (S - 1) / S sum_i (theta_(i) - theta_(.))^2, theta_(i) the statistic on the other
    seeds with each seed's column from the run chosen without seed i, `crossfit.delete_one_seed_frames`); in
    expectation it does not understate the variance of a symmetric statistic of independent seeds (Efron & Stein
    1981, Ann. Statist. 9:586), and the seeds are the independent units of choose-then-average. arm, base:
    units x seeds of the chosen runs, paired; `refits`: `claim_refits`. None under MIN_SEEDS seeds. `statistic`:
    * "difference": mean(arm) - mean(base), whose jackknife for independent seeds is var(seed means of arm -
      base) / S, the seed part of `stats.crossed_variance` (as `crossfit.cross_fit_seed_variance`);
    * "log ratio": log R = log(mean(arm) / mean(base)) over the cells. To first order log R_(i) - log R =
      mean(Z_(i)) - mean(Z), Z = arm / mean(arm) - base / mean(base) (the linearisation of
      `stats.crossed_log_ratio`), so for independent seeds its jackknife is var(seed means of Z) / S, the seed
      part of that variance; it replaces it;
    * "seed log ratios": mean_s d_s, d_s = log(mean_s(arm) / mean_s(base)) (per-seed means over the units), whose
      jackknife for independent seeds is var(d) / S, the paired t's variance."""
    from benchctl.report.crossfit import delete_one_seed_frames, jackknife_variance

    if arm.shape[1] < MIN_SEEDS:
        return None
    arms, bases = delete_one_seed_frames(arm, refits[0]), delete_one_seed_frames(base, refits[1])
    replicates = []
    for i in arm.columns:
        a, b = arms[i].to_numpy(float), bases[i].to_numpy(float)  # (units, S - 1) each
        with np.errstate(divide="ignore", invalid="ignore"):  # a mean that is not positive: NaN, no interval
            if statistic == "difference":
                replicates.append(np.nanmean(a) - np.nanmean(b))
            elif statistic == "log ratio":
                replicates.append(np.log(np.nanmean(a) / np.nanmean(b)))
            else:
                replicates.append(np.mean(np.log(np.nanmean(a, axis=0) / np.nanmean(b, axis=0))))
    return jackknife_variance(np.asarray(replicates, dtype=float))


def seed_effect(
    arm: pd.DataFrame,
    base: pd.DataFrame,
    relative: bool,
    confidence: float = 0.95,
    population: str = "problems",
    refits: tuple[pd.DataFrame, pd.DataFrame] | None = None,
):
    """(effect, low, high, paired seeds, mde) from units x seeds values paired by seed and unit (module docstring).
    mde: the effect the interval's test detects with 80% power at level 1 - confidence (`stats.
    minimum_detectable_effect`), as a magnitude in the effect's units; for a relative effect, on the log ratio
    (a reduction of 1 - exp(-mde) or an increase of exp(mde) - 1). `population`: as `stats.crossed_estimate`; a
    relative effect over several problems at "problems" is `stats.crossed_log_ratio`'s, else the per-seed log
    ratios' (`log_ratio_interval`). `refits` (`claim_refits`: a side's setting chosen leave-one-seed-out): the
    seed part of the variance is the statistic's `seed_jackknife`."""
    from benchctl.report.stats import crossed_estimate, crossed_log_ratio, minimum_detectable_effect

    seeds = sorted(set(arm.columns) & set(base.columns))
    if not seeds:
        return np.nan, np.nan, np.nan, 0, np.nan
    both = arm[seeds].join(base[seeds], how="inner", lsuffix="_arm", rsuffix="_base").dropna()
    a, b = both.iloc[:, : len(seeds)].to_numpy(float), both.iloc[:, len(seeds) :].to_numpy(float)  # (P, S) each
    alpha = 1.0 - confidence
    crossed = population == "problems" and a.shape[0] > 1  # pass@k: the crossed design, problems sampled too
    statistic = "difference" if not relative else "log ratio" if crossed else "seed log ratios"
    pair = (arm.loc[both.index, seeds], base.loc[both.index, seeds]) if refits is not None else None
    jack = None if pair is None else seed_jackknife(*pair, refits, statistic)
    if not relative:
        est = crossed_estimate(a - b, confidence, population, jack)
        mde = minimum_detectable_effect(est.se, est.df, alpha, seed_share=est.seed_share, seed_df=len(seeds) - 1.0)
        return est.mean, est.low, est.high, len(seeds), mde
    if crossed:
        est = crossed_log_ratio(a, b, confidence, jack)
        effect, low, high = (float(np.expm1(v)) for v in (est.mean, est.low, est.high))
        mde = minimum_detectable_effect(est.se, est.df, alpha, seed_share=est.seed_share, seed_df=len(seeds) - 1.0)
        return effect, low, high, len(seeds), mde
    a, b = a.mean(axis=0), b.mean(axis=0)  # per-seed means (S,)
    effect, low, high = log_ratio_interval(a, b, confidence, jack)
    se = np.log(a / b).std(ddof=1) / np.sqrt(len(seeds)) if np.isfinite(effect) and len(seeds) > 1 else np.nan
    se = se if jack is None or not np.isfinite(effect) else float(np.sqrt(jack))
    return effect, low, high, len(seeds), minimum_detectable_effect(se, len(seeds) - 1.0, alpha)


def log_ratio_interval(
    arm: np.ndarray, base: np.ndarray, confidence: float = 0.95, variance: float | None = None
) -> tuple[float, float, float]:
    """Relative effect of per-seed means arm (S,) over base (S,), paired by seed: a t-interval on the log ratios
    d_s = log(arm_s / base_s), returned as (exp(mean d) - 1, exp(low) - 1, exp(high) - 1). NaN where a mean is
    not positive (the log ratio is undefined); no interval under 2 seeds. `variance`: Var(mean d) when the seeds
    are not independent (`seed_jackknife`), in place of var(d) / S, with t(S - 1)."""
    from scipy import stats

    arm, base = np.asarray(arm, float), np.asarray(base, float)
    if len(arm) == 0 or (arm <= 0).any() or (base <= 0).any():
        return np.nan, np.nan, np.nan
    d = np.log(arm / base)  # (S,)
    effect = float(np.expm1(d.mean()))
    if len(d) < 2:
        return effect, np.nan, np.nan
    if variance is not None:
        half = float(stats.t.ppf(0.5 + confidence / 2, len(d) - 1)) * np.sqrt(variance)
        return effect, float(np.expm1(d.mean() - half)), float(np.expm1(d.mean() + half))
    if np.ptp(d) == 0:  # every seed gives the same ratio
        return effect, effect, effect
    low, high = stats.ttest_1samp(d, 0.0).confidence_interval(confidence)
    return effect, float(np.expm1(low)), float(np.expm1(high))


def verdict(
    direction: str, low: float, high: float, seeds: int, margin: float = 0.0, stated_effect: float | None = None
) -> str:
    """holds / does not hold / inconclusive / paper's effect excluded from the interval [low, high] (module doc)."""
    if seeds < MIN_SEEDS or not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if direction in ("less", "at_most"):  # mirror onto greater / at_least
        low, high = -high, -low
    bar = 0.0 if direction in ("greater", "less") else -margin
    if high <= bar if direction in ("greater", "less") else high < bar:
        return "does not hold"
    if stated_effect is not None and high < stated_effect:
        return EXCLUDED
    return "holds" if low > bar else "inconclusive"


def evaluate_claims(
    data, claims: list[Claim], confidence: float = 0.95, seed: int = 0, population: str = "problems"
) -> pd.DataFrame:
    """The `claims.parquet` table: one row per claim (CLAIM_COLUMNS), a reason where no verdict could be made; a
    claim with `requires` is judged after its premise and is inconclusive unless the premise holds. `seed` is
    unused: every interval is analytic (kept for callers)."""
    rows: dict[int, dict] = {}
    index = {c.id: i for i, c in enumerate(claims) if c.id is not None}

    def judge(i: int) -> dict:
        if i not in rows:
            c = claims[i]
            premise = judge(index[c.requires]) if c.requires is not None else None
            rows[i] = _claim_row(data, c, confidence, premise, population)
        return rows[i]

    for i in range(len(claims)):
        judge(i)
    return pd.DataFrame([rows[i] for i in range(len(claims))], columns=list(CLAIM_COLUMNS))


def _claim_row(data, c: Claim, confidence: float, premise: dict | None, population: str) -> dict:
    """One claim's row; `premise` is the row of the claim it requires (None without `requires`)."""
    row = {
        **{k: getattr(c, k) for k in ("id", "requires", "paper", "claim", "arm", "baseline", "metric", "direction")},
        "k": c.k if c.metric == "pass@k" else None,
        "relative": bool(c.relative),
        "margin": float(c.margin),
        "stated_effect": np.nan if c.stated_effect is None else float(c.stated_effect),
        "paper_effect": c.paper_effect,
    }
    if c.testbed:
        row["inert"] = ""
        row.update(effect=np.nan, low=np.nan, high=np.nan, seeds=0, mde=np.nan, verdict="inconclusive")
        row.update(seeds_expected=0, seeds_lost="")
        return {**row, "reason": f"not expressible on this testbed: {c.testbed}"}
    row["inert"] = _inert(data.runs, c)
    arm, base, reason = run_values(data, c)
    refits = claim_refits(data, c) if reason is None else None  # a setting chosen leave-one-seed-out
    effect, low, high, n, mde = seed_effect(arm, base, c.relative, confidence, population, refits)
    row["seeds_expected"], row["seeds_lost"] = _lost(data, c, set(arm.columns) & set(base.columns))
    if c.relative:  # the log-ratio mde as a relative change in the claim's direction
        mde = -np.expm1(-mde) if c.direction in ("less", "at_most") else np.expm1(mde)
    if reason is None and n < MIN_SEEDS:
        reason = f"too few seeds: {n} paired (at least {MIN_SEEDS})"
    if reason is None and c.relative and not np.isfinite(effect):
        reason = "relative effect undefined: a mean (of a seed, or of all cells) is not positive"
    found = verdict(c.direction, low, high, n, c.margin, c.stated_effect)
    if premise is not None and premise["verdict"] != "holds":
        found, reason = "inconclusive", f"premise not established: {c.requires!r} {premise['verdict']}"
    row.update(effect=effect, low=low, high=high, seeds=n, mde=mde)
    return {**row, "verdict": found, "reason": reason}
