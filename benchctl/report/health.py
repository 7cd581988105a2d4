"""Run health: `ok`, `diverged`, `collapsed`, `stalled`, `never_learned` or `entropy_decayed`, with the evidence
(which metric, which step, which value), from one run's training metrics and held-out evaluations; and whether the
run's mechanism acted (`mechanism_activity`).  Pure: frames in, a label out; nothing is read or written here
(`benchctl.report.load` calls `classify` for every run; the report writes it to runs.parquet).

States and thresholds [our choices; the defaults of `Thresholds`]:
* diverged: a non-finite value (NaN or inf) in `loss/*` or `policy/grad_norm` at a step that trained rows
  (`update/rows_trained` > 0, every step when that column is missing: a step with no row to train logs no loss),
  or a gradient spike: log `policy/grad_norm` (the norm before clipping) above the run's median log norm by more
  than max(6 robust standard deviations, log 100), the robust standard deviation the normal-scaled median absolute
  deviation of the log norms over steps with a non-zero norm (at least 3 such steps).  On the log scale heavy
  but healthy noise (lognormal norms, sigma 1.5) moves the threshold with it; a step 100x the median is always a
  spike in a run whose norms barely move.
* collapsed: the score ends under half of its smoothed running peak, at least 0.05 under it (so that noise
  around a small score is not a collapse), and under it by more than the run's own noise band, late collapses
  included: the smoothed series' last value against its maximum.  The noise band (`fall_band`) is
  q sqrt(2 / w) sigma: sigma the sd of the score's first differences / sqrt(2) over the points before the end
  window (`noise_sd`; the fall itself is no noise), w the smoothing window, q the Student t quantile
  1 - 0.01 / (number of windows) with sigma's degrees of freedom (Bonferroni: the peak is the highest of that
  many noisy window means).  A peak that is only the highest of many noisy windows is no peak; a curve of fewer
  than 5 points has no noise estimate and is judged on the size rules alone.  Held-out evaluations that carry
  their sampling se (`pass@1_se`, `eval_se`) are judged on it instead (normal quantiles): the rise and fall of a
  6-point curve are no noise.  With a measured se or a training reward, the end must also be under half of the
  peak by more than noise (one-sided, collapse_alpha), so that a 45% decline read low by noise is no collapse.
  The score is the held-out pass@1
  of each task evaluated at least twice (steps >= 0; step 0 evaluates the starting model when the run was trained
  with eval_every; the final one is RUN/eval/final), and the training `reward/mean` when no task was evaluated
  periodically (3 or more times).  Smoothing: a trailing mean over 3% of the points (`smooth_fraction`, rounded
  down: a collapse over the last 3% fills the last window), at least 2 steps of `reward/mean` (runs with fewer
  than 6 logged rewards are not judged on it) and 1 evaluation (each is already a mean over problems).  Also
  collapsed: an entropy blow-up, `policy/entropy` ending at 3x its start or more (means over the end and start
  windows) while `reward/mean` falls (its end under its start by 0.05, or under half of it); and the evaluation
  the report uses solving no held-out problem of the training task (or of its designated held-out task,
  `eval_task_resolved`) at its largest k (pass@16 = 0) although the training reward started above 0 and the run
  did learn (not never_learned) [our addition: it needs no periodic evaluation].
* stalled: no informative group in the last quarter of the steps (at least 2): every step there has
  `acr/all` == 1 (every group all right or all wrong) or `update/rows_trained` == 0.
* never_learned: the training `reward/mean` averaged over every window of 10% of its steps (`edge_fraction`, at
  least 3) never above 0.02 (`never_learned`) by more than its noise band (Bonferroni over the windows; or the
  mean over every step above it by more than its own): the run had almost no right answer to learn from, so an end
  with nothing solved is no fall.  A note (`NOTES`), named beside its arm's health without a warning
  (`shown_notes`: 'ok (never learned: seed 3)'): the run is a real outcome of its method and seed, and the arm's
  score counts it.
* entropy_decayed: `policy/entropy` at the end (mean of the end window) under 5% of its first finite value or under
  0.001 nats per token.  A policy turning deterministic is worth knowing (pass@k at large k suffers), but on its own
  it is not a collapse: an improving run's entropy decays; the score decides collapse.  So it is a note
  (`NOTES`): runs.parquet keeps the label and the run health lists the run, but the run counts as ok for its arm
  (`summarize`): it marks no comparison `unhealthy` and no verdict cell.
Windows: the start and end windows hold 10% of the finite values (`edge_fraction`), at least 3 (`MIN_EDGE`).
A run with findings of several states is labelled by the first of diverged, collapsed, stalled, never_learned,
entropy_decayed; the evidence lists every finding.  A run without training metrics (a plain eval) is `ok` unless its
evaluations show a collapse.

Mechanisms: a method whose mechanism acts on some steps only (AVSPO augments a group, HA-DW moves its
anchor, DAPO filters groups) logs `mechanism/<name>/acted` (0 or 1) per step.  `mechanism_activity` gives the
run's `mechanism_acted_frac`, the smallest over its mechanisms of the fraction of logged steps on which it acted
(NaN without such a column: a plain method), and the mechanisms that acted on under 5% of the steps
(`INERT_FRACTION`): such a run trained as its base method, and its evidence says so (`inert: ...`) whatever its
state.  An arm is inert when the median over its runs is under 5% (`inert_arms`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from benchctl.fields import setting

STATES = ("ok", "diverged", "collapsed", "stalled", "never_learned", "entropy_decayed")  # after "ok": label order
NOTES = ("never_learned", "entropy_decayed")  # labels worth showing that do not make a run unfit to compare
SHOWN_NOTES = ("never_learned",)  # notes named beside the arm's health (`shown_notes`), without a warning
MIN_NOISE = 5  # points of a score at least for its noise band (4 differences: df 3)
MIN_SMOOTH = 2  # steps of reward/mean in its trailing mean at least (the collapse rule)
MIN_EDGE = 3  # steps in the start and end windows of reward/entropy at least (one noisy step decides nothing)
INERT_FRACTION = 0.05  # a mechanism acting on fewer steps than this trained as its base
INERT = "inert: trained as its base"
ACTED = re.compile(r"^mechanism/(.+)/acted$")


@dataclass(frozen=True)
class Thresholds:
    """Where a run stops being `ok`."""

    collapse_fraction: float = setting(0.5, "the smoothed score ending under this x its smoothed running peak")
    collapse_min_drop: float = setting(0.05, "... and at least this far under it (score units)")
    smooth_fraction: float = setting(0.03, "trailing-mean window of the score, as a fraction of its points")
    collapse_alpha: float = setting(0.01, "the fall from peak to end must exceed noise at this level (fall_band)")
    never_learned: float = setting(0.02, "the smoothed reward/mean never above this (near zero): never_learned")
    entropy_blowup: float = setting(3.0, "policy/entropy ending at this x its start or more while reward/mean falls")
    entropy_fraction: float = setting(0.05, "policy/entropy ending under this x its first value: entropy_decayed")
    entropy_floor: float = setting(1e-3, "policy/entropy ending under this many nats per token: entropy_decayed")
    grad_blowup: float = setting(100.0, "policy/grad_norm over this x the run's median is always a spike")
    grad_sigmas: float = setting(6.0, "log policy/grad_norm over its median by this many robust sd: a spike")
    stall_fraction: float = setting(0.25, "the last fraction of the steps that must all be uninformative")
    edge_fraction: float = setting(0.1, "start and end windows (fraction of the steps, at least 1) for reward/entropy")


@dataclass(frozen=True)
class Health:
    """A run's state (one of STATES) and the evidence ('' when ok and active)."""

    state: str
    evidence: str


@dataclass(frozen=True)
class Activity:
    """A run's `mechanism_acted_frac` (NaN: no mechanism logged) and its inert mechanisms (names, sorted)."""

    acted_frac: float
    inert: tuple[str, ...]
    fractions: tuple[tuple[str, float], ...] = ()


def _g(value: float) -> str:
    return f"{value:.3g}"


def _span(p: pd.DataFrame) -> str:
    return f"step {int(p['step'].iloc[0])}" + (f"-{int(p['step'].iloc[-1])}" if len(p) > 1 else "")


def _trained(m: pd.DataFrame) -> np.ndarray:
    if "update/rows_trained" in m:
        return (m["update/rows_trained"].fillna(0) > 0).to_numpy()
    return np.ones(len(m), bool)


def _nonfinite(m: pd.DataFrame) -> list[str]:
    out, trained = [], _trained(m)
    for col in [c for c in m.columns if c.startswith("loss/") or c == "policy/grad_norm"]:
        values = m[col].to_numpy(dtype=np.float64)
        bad = np.isinf(values) | (np.isnan(values) & trained)
        if bad.any():
            first = int(np.argmax(bad))
            out.append(f"{col} = {values[first]} at step {int(m['step'].iloc[first])} ({int(bad.sum())} steps)")
    return out


def _grad_blowup(m: pd.DataFrame, t: Thresholds) -> list[str]:
    """Spikes of log policy/grad_norm over median + max(grad_sigmas x MAD sd, log grad_blowup)."""
    if "policy/grad_norm" not in m:
        return []
    values, steps = m["policy/grad_norm"].to_numpy(dtype=np.float64), m["step"].to_numpy()
    keep = np.isfinite(values) & (values > 0)
    if keep.sum() < 3:
        return []
    logs = np.log(values[keep])
    median, sd = float(np.median(logs)), float(stats.median_abs_deviation(logs, scale="normal"))
    margin = max(t.grad_sigmas * sd, math.log(t.grad_blowup))
    hits = keep & (np.log(np.where(keep, values, 1.0)) > median + margin)
    if not hits.any():
        return []
    worst, mid = int(np.argmax(np.where(hits, values, -np.inf))), math.exp(median)
    return [
        f"policy/grad_norm {_g(values[worst])} at step {int(steps[worst])} = {_g(values[worst] / mid)}x "
        f"the run's median {_g(mid)} ({int(hits.sum())} steps over {_g(math.exp(margin))}x: log-scale robust sd "
        f"{_g(sd)})"
    ]


def _finite(m: pd.DataFrame, col: str) -> pd.DataFrame | None:
    if col not in m:
        return None
    return m[["step", col]][np.isfinite(m[col].to_numpy(dtype=np.float64))]


def _edges(m: pd.DataFrame, col: str, t: Thresholds):
    """(start mean, its steps, end mean, its steps) of the finite values of `col`, over windows of
    `edge_fraction` of them, at least MIN_EDGE; None when there are fewer than 2 x MIN_EDGE values."""
    part = _finite(m, col)
    if part is None or len(part) < 2 * MIN_EDGE:
        return None
    w = max(MIN_EDGE, min(math.ceil(t.edge_fraction * len(part)), len(part) // 2))
    head, tail = part.iloc[:w], part.iloc[-w:]
    return float(head[col].mean()), _span(head), float(tail[col].mean()), _span(tail)


def noise_sd(values: np.ndarray) -> tuple[float, int]:
    """(sigma, df): the per-point noise sd of a series from its own step-to-step changes, the sample sd of its first
    differences / sqrt(2) (a difference of two independent points has sd sqrt(2) sigma; a steady trend only moves
    the differences' mean), and the degrees of freedom of that estimate (differences - 1).  (0, 0) for a series of
    fewer than MIN_NOISE points: too few to tell noise from trend."""
    diffs = np.diff(np.asarray(values, dtype=np.float64))
    if len(diffs) < MIN_NOISE - 1:
        return 0.0, 0
    return float(np.std(diffs, ddof=1)) / math.sqrt(2), len(diffs) - 1


def fall_band(sigma: float, df: int, window: int, windows: int, alpha: float) -> float:
    """How far the highest of `windows` trailing means of `window` points may stand above the last one by noise
    alone: q sqrt(2 / window) sigma, q the Student t quantile 1 - alpha / windows with the df of sigma (Bonferroni
    over the windows the peak was picked from; the difference of two window means has sd sqrt(2 / window) sigma;
    t, not normal, because sigma is itself estimated).  0 without a noise estimate (df 0)."""
    if df < 1:
        return 0.0
    return _quantile(df, windows, alpha) * math.sqrt(2.0 / window) * sigma


def _quantile(df: float, windows: int, alpha: float) -> float:
    """The one-sided Student t (normal for df = inf) quantile 1 - alpha / windows (Bonferroni over the windows)."""
    return float(stats.t.isf(alpha / max(windows, 1), df))


def eval_se(n: np.ndarray, c: np.ndarray) -> float:
    """The sampling standard error of an evaluation's pass@1 (the mean over its P problems of c / n, c of n samples
    right): sqrt(sum_i v_i) / P, v_i = phat_i (1 - phat_i) / (n_i - 1) the unbiased estimate of the binomial
    variance of problem i's c / n, and pbar (1 - pbar) / n_i (an upper bound) where n_i = 1.  The noise of
    re-evaluating the same policy on the same problems with new samples: what tells a fall of the policy's score
    from a fall of its measurement.  NaN without a problem."""
    n, c = np.asarray(n, dtype=np.float64), np.asarray(c, dtype=np.float64)
    if not len(n) or not (n > 0).all():
        return np.nan
    phat = c / n
    pbar = float(phat.mean())
    v = np.where(n > 1, phat * (1 - phat) / np.maximum(n - 1, 1), pbar * (1 - pbar) / n)
    return float(np.sqrt(v.sum())) / len(n)


def _noise(part: pd.DataFrame, col: str, window: int, alpha: float):
    """(variance of each trailing window mean (n,), the quantiles 1 - alpha / windows (Bonferroni) and 1 - alpha,
    what the evidence says of the noise; None without a noise estimate).  The evaluations' own sampling se (`se`
    column, all finite: `eval_se`), normal quantiles; else `noise_sd` of the points before the end window (the
    fall itself is no noise), t quantiles."""
    windows = len(part) - window + 1
    se = part["se"].to_numpy(dtype=np.float64) if "se" in part else np.array([np.nan])
    if np.isfinite(se).all():
        var = pd.Series(se**2).rolling(window).sum().to_numpy() / window**2
        quantiles = _quantile(np.inf, windows, alpha), _quantile(np.inf, 1, alpha)
        return var, *quantiles, f"evaluation se {_g(se[-1])} at the end"
    sigma, df = noise_sd(part[col].to_numpy()[: len(part) - window])
    if df < 1:
        return None
    quantiles = _quantile(df, windows, alpha), _quantile(df, 1, alpha)
    return np.full(len(part), sigma**2 / window), *quantiles, f"noise sd {_g(sigma)}"


def _peak_collapse(
    part: pd.DataFrame, col: str, label: str, window: int, t: Thresholds, margin: bool = True
) -> list[str]:
    """The smoothed (trailing mean over `window` points) `col` of `part` (step, col[, se]) ending under
    collapse_fraction x its peak and at least collapse_min_drop under it, each by more than noise (`_noise`): the
    fall peak - end over q sqrt(v_peak + v_end) (`fall_band`), v the window means' variances, q the quantile
    1 - collapse_alpha / windows (the peak was real, not the highest of many noisy windows), and (`margin`) the
    margin fraction x peak - end over q1 sqrt(fraction**2 v_peak + v_end), q1 the quantile 1 - collapse_alpha
    (the end is under its fraction of the peak, not a smaller decline read low by noise) [our choice: not for a
    noise sd estimated from a few evaluations, where the rise and fall themselves inflate it]."""
    if len(part) < max(2, window + 1):
        return []
    smooth = part[col].rolling(window).mean().to_numpy()
    peak_at = int(np.nanargmax(smooth))
    peak, end, f = float(smooth[peak_at]), float(smooth[-1]), t.collapse_fraction
    noise = _noise(part, col, window, t.collapse_alpha)
    var, q, q1, said = noise if noise is not None else (np.zeros(len(part)), 0.0, 0.0, "")
    band = q * math.sqrt(var[peak_at] + var[-1])
    under = q1 * math.sqrt(f**2 * var[peak_at] + var[-1]) if margin else 0.0
    if f * peak - end <= under or peak - end < max(t.collapse_min_drop, band):
        return []
    at = lambda i: _span(part.iloc[i - window + 1 : i + 1])  # noqa: E731
    noise = f", over its noise band {_g(band)} ({said})" if said else ""
    return [
        f"{label} {_g(peak)} at its peak ({at(peak_at)}) -> {_g(end)} at the end ({at(len(part) - 1)}), under "
        f"{_g(f)}x its peak (trailing mean of {window}){noise}"
    ]


def _reward_window(n: int, t: Thresholds) -> int:
    return max(MIN_SMOOTH, int(t.smooth_fraction * n))


def _reward_collapse(m: pd.DataFrame, t: Thresholds) -> list[str]:
    part = _finite(m, "reward/mean")
    if part is None or len(part) < 2 * MIN_EDGE:
        return []
    return _peak_collapse(part.reset_index(drop=True), "reward/mean", "reward/mean", _reward_window(len(part), t), t)


def _never_learned(m: pd.DataFrame, t: Thresholds) -> list[str]:
    """The training reward's mean over every window of `edge_fraction` of its steps (at least MIN_EDGE) never above
    `never_learned` by more than noise: the run had almost no right answer to learn from, so it cannot have
    collapsed from anything (at least 2 x MIN_EDGE steps).  Noise: the highest window mean is the highest of many
    noisy ones, so it must clear the threshold by q sigma / sqrt(window), q the t quantile 1 - collapse_alpha /
    windows (Bonferroni), sigma `noise_sd` of the whole series; or the mean over every step clear it by
    t(1 - collapse_alpha) sigma / sqrt(steps) (a noisy run well above the threshold throughout)."""
    part = _finite(m, "reward/mean")
    if part is None or len(part) < 2 * MIN_EDGE:
        return []
    window = max(MIN_EDGE, math.ceil(t.edge_fraction * len(part)))
    peak = float(part["reward/mean"].rolling(window).mean().max())
    values = part["reward/mean"].to_numpy(dtype=np.float64)
    sigma, df = noise_sd(values)
    band = _quantile(df, len(part) - window + 1, t.collapse_alpha) * sigma / math.sqrt(window) if df else 0.0
    overall = _quantile(df, 1, t.collapse_alpha) * sigma / math.sqrt(len(values)) if df else 0.0
    if peak > t.never_learned + band or values.mean() > t.never_learned + overall:
        return []
    return [
        f"reward/mean at most {_g(peak)} (trailing mean of {window}) over {_span(part)}, never above "
        f"{_g(t.never_learned)} by more than its noise band {_g(band)} (noise sd {_g(sigma)}): no rise to collapse from"
    ]


def _heldout(evals: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """task -> its evaluations at steps >= 0 (step, pass@1, se: the `pass@1_se` column, NaN without it), in step
    order."""
    if evals is None or evals.empty:
        return {}
    part = evals[evals["step"] >= 0].sort_values("step", kind="stable")
    part = part.assign(se=part["pass@1_se"] if "pass@1_se" in part else np.nan)
    return {task: own[["step", "pass@1", "se"]].reset_index(drop=True) for task, own in part.groupby("eval_task")}


def _heldout_collapse(curves: dict[str, pd.DataFrame], t: Thresholds) -> list[str]:
    out = []
    for task, part in curves.items():
        window = max(1, int(t.smooth_fraction * len(part)))
        measured = bool(np.isfinite(part["se"]).all())  # the evaluations' own se, not the curve's wobble
        out += _peak_collapse(part, "pass@1", f"held-out pass@1 on {task}", window, t, margin=measured)
    return out


def _entropy_blowup(m: pd.DataFrame, t: Thresholds) -> list[str]:
    entropy, reward = _edges(m, "policy/entropy", t), _edges(m, "reward/mean", t)
    if entropy is None or reward is None or entropy[0] <= 0 or entropy[2] < t.entropy_blowup * entropy[0]:
        return []
    if not reward[2] < reward[0] - min(t.collapse_min_drop, reward[0] / 2):
        return []
    return [
        f"entropy blow-up: policy/entropy {_g(entropy[0])} ({entropy[1]}) -> {_g(entropy[2])} ({entropy[3]}), "
        f"{_g(entropy[2] / entropy[0])}x, while reward/mean fell {_g(reward[0])} -> {_g(reward[2])}"
    ]


def _entropy_decay(m: pd.DataFrame, t: Thresholds) -> list[str]:
    edges = _edges(m, "policy/entropy", t)
    if edges is None:
        return []
    first = float(_finite(m, "policy/entropy")["policy/entropy"].iloc[0])
    _, _, end, end_at = edges
    if first > 0 and end < t.entropy_fraction * first:
        return [f"policy/entropy {_g(first)} (first) -> {_g(end)} ({end_at}), under {_g(t.entropy_fraction)}x"]
    if end < t.entropy_floor:
        return [f"policy/entropy {_g(end)} ({end_at}), under the floor {_g(t.entropy_floor)} nats"]
    return []


def _stall(m: pd.DataFrame, t: Thresholds) -> list[str]:
    if len(m) < 2:
        return []
    w = max(2, math.ceil(t.stall_fraction * len(m)))
    tail = m.iloc[-w:]
    why = []
    if "acr/all" in tail and (tail["acr/all"] >= 1.0 - 1e-9).all():
        why.append("acr/all = 1")
    if "update/rows_trained" in tail and (tail["update/rows_trained"] == 0).all():
        why.append("update/rows_trained = 0")
    if not why:
        return []
    steps = f"{int(tail['step'].iloc[0])}-{int(tail['step'].iloc[-1])}"
    return [f"no informative group in the last {w} steps ({steps}): {' and '.join(why)} at each"]


def _nothing_solved(m: pd.DataFrame, final: pd.DataFrame | None, tasks: tuple[str, ...]) -> list[str]:
    """The evaluation the report uses solves no held-out problem of the training task (`tasks`: its name and its
    designated held-out task) at its largest k, although the run's training reward started above 0 (the same
    distribution: the model could solve some at first)."""
    if final is None or final.empty or not tasks or "reward/mean" not in m:
        return []
    out = []
    head = m[np.isfinite(m["reward/mean"].to_numpy(dtype=np.float64))].iloc[:MIN_EDGE]  # the first steps
    if head.empty or head["reward/mean"].mean() <= 0:
        return []
    steps = f"step {int(head['step'].iloc[0])}-{int(head['step'].iloc[-1])}"
    for task, mine in final[final["eval_task"].isin(tasks)].groupby("eval_task"):
        top = mine.loc[mine["k"].idxmax()]
        if top["pass@k"] <= 0:
            out.append(
                f"held-out pass@{int(top['k'])} on {task} = 0 in the evaluation reported (no problem solved), while "
                f"reward/mean started at {_g(head['reward/mean'].mean())} ({steps})"
            )
    return out


def mechanism_activity(metrics: pd.DataFrame | None) -> Activity:
    """The run's Activity from its `mechanism/<name>/acted` columns (0 or 1 per step; steps not logged left out)."""
    fractions = []
    for col in sorted(metrics.columns) if metrics is not None else ():
        match = ACTED.match(str(col))
        values = metrics[col].to_numpy(dtype=np.float64) if match else np.array([])
        values = values[np.isfinite(values)]
        if len(values):
            fractions.append((match.group(1), float((values >= 0.5).mean())))
    if not fractions:
        return Activity(np.nan, ())
    inert = tuple(name for name, frac in fractions if frac < INERT_FRACTION)
    return Activity(min(frac for _, frac in fractions), inert, tuple(fractions))


def _inert_evidence(activity: Activity) -> str:
    acted = ", ".join(
        f"mechanism/{n}/acted on {100 * f:.1f}% of steps" for n, f in activity.fractions if n in activity.inert
    )
    return f"{INERT}: {acted} (under {100 * INERT_FRACTION:g}%)"


def classify(
    metrics: pd.DataFrame | None,
    evals: pd.DataFrame | None = None,
    thresholds: Thresholds = Thresholds(),
    final: pd.DataFrame | None = None,
    tasks: tuple[str, ...] = (),
) -> Health:
    """One run's Health from its train_metrics frame (`step` + metric columns; None for a plain eval), its
    held-out evaluations (`step`, `eval_task`, `pass@1`; step -1 for a plain eval), the evaluation the report
    uses (`final`: `eval_task`, `k`, `pass@k` means over problems) and the run's training task with its held-out
    counterpart (`tasks`: config `task` and `eval_task_resolved`)."""
    t, found = thresholds, {state: [] for state in STATES[1:]}
    curves = _heldout(evals)
    periodic = any(len(part) >= 3 for part in curves.values())
    found["collapsed"] = _heldout_collapse(curves, t)
    inert = ""
    if metrics is not None and len(metrics):
        m = metrics.sort_values("step", kind="stable").reset_index(drop=True)
        found["diverged"] = _nonfinite(m) + _grad_blowup(m, t)
        found["collapsed"] += [] if periodic else _reward_collapse(m, t)
        found["never_learned"] = _never_learned(m, t)
        never = bool(found["never_learned"])  # nothing solved at the end is then no fall
        found["collapsed"] += _entropy_blowup(m, t) + ([] if never else _nothing_solved(m, final, tasks))
        found["stalled"] = _stall(m, t)
        found["entropy_decayed"] = _entropy_decay(m, t)
        activity = mechanism_activity(m)
        inert = _inert_evidence(activity) if activity.inert else ""
    state = next((s for s in STATES[1:] if found[s]), "ok")
    evidence = [f"{s}: {e}" for s in STATES[1:] for e in found[s]] + ([inert] if inert else [])
    return Health(state, "; ".join(evidence))


def is_ok(state: str) -> bool:
    """Whether a run in `state` is fit to compare: ok, or a note (`NOTES`)."""
    return state == "ok" or state in NOTES


def _seed_lists(states: Sequence[str], seeds: Sequence, keep) -> dict[str, list[str]]:
    """state -> the seeds (as text, '-' for none) of the runs whose state `keep` accepts."""
    out: dict[str, list[str]] = {}
    for state, seed in zip(states, seeds):
        if keep(state):
            name = "-" if seed is None or (isinstance(seed, float) and np.isnan(seed)) else str(int(seed))
            out.setdefault(state, []).append(name)
    return out


def _seeds_text(by_state: dict[str, list[str]], name=lambda s: s) -> str:
    return "; ".join(f"{name(s)}: seed{'s' if len(v) > 1 else ''} {', '.join(v)}" for s, v in sorted(by_state.items()))


def summarize(states: Sequence[str], seeds: Sequence) -> str:
    """'ok' when every run is ok or only noted (`NOTES`), else 'collapsed: seed 1; stalled: seeds 2, 3' (runs of
    one arm)."""
    bad = _seed_lists(states, seeds, lambda s: not is_ok(s))
    return _seeds_text(bad) if bad else "ok"


def shown_notes(states: Sequence[str], seeds: Sequence) -> str:
    """'never learned: seeds 2, 3' for the runs of one arm labelled with a note shown beside the arm's health
    (`SHOWN_NOTES`), '' when none: not a warning, but the arm's score counts those runs' near-zero ones."""
    noted = _seed_lists(states, seeds, lambda s: s in SHOWN_NOTES)
    return _seeds_text(noted, lambda s: s.replace("_", " "))


def inert_note(runs: pd.DataFrame) -> str:
    """'inert: trained as its base (median mechanism_acted_frac 1.2%; avspo)' when the median `mechanism_acted_frac`
    of these runs (one arm's) is under INERT_FRACTION, else '' (runs without a mechanism column are never inert)."""
    if "mechanism_acted_frac" not in runs:
        return ""
    acted = runs["mechanism_acted_frac"].dropna()  # NaN: a run without a mechanism
    median = float(acted.median()) if len(acted) else np.nan
    if not median < INERT_FRACTION:
        return ""
    names = sorted({n for v in runs.get("inert_mechanisms", pd.Series()).dropna() for n in str(v).split(",") if n})
    return f"{INERT} (median mechanism_acted_frac {100 * median:.1f}%" + (f"; {', '.join(names)})" if names else ")")


def inert_arms(runs: pd.DataFrame | None) -> dict[str, str]:
    """arm -> its `inert_note`, for the arms that are inert."""
    if runs is None or "mechanism_acted_frac" not in runs:
        return {}
    notes = {arm: inert_note(own) for arm, own in runs.groupby("arm")}
    return {arm: note for arm, note in notes.items() if note}
