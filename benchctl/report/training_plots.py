"""Training curves and the estimators' own diagnostics by step, as small multiples (`benchctl.report.figstyle`):
one panel per metric and context, the mean over an arm's seeds (line) and their min-max (band), each run's
values first smoothed by a trailing rolling mean over `smoothing_window(steps)` steps (stated in the figure's
title and the page).  Diagnostics (`est/*`, `oar/*`) get one panel each, holding only the arms that log them.
"""

from __future__ import annotations

import pandas as pd

from benchctl.report.figstyle import ArmStyles, grid, panel_title
from benchctl.report.load import ReportData

TRAIN_METRICS = {
    "reward/mean": "training reward",
    "acr/all": "all-same groups (ACR)",
    "acr/all_wrong": "all-wrong groups",
    "acr/all_correct": "all-correct groups",
    "policy/entropy": "policy entropy (nats/token)",
    "response/length_mean": "response length (tokens)",
}
DIAGNOSTIC_PREFIXES = ("est/", "oar/")
SKIPPED = ("est/acr",)  # AVSPO's est/acr is acr/all of what it saw: already a training panel
MAX_LINES = 8  # arms in one training panel; more are split over several panels (each with the baseline)


def smoothing_window(steps: int) -> int:
    """Steps of the trailing rolling mean: 1 (none) up to 29 steps, then about a twentieth of the run."""
    return max(1, round(steps / 20))


def smoothing_text(window: int) -> str:
    if window == 1:
        return "not smoothed"
    return f"each run smoothed by a trailing rolling mean over {window} steps"


def caption(window: int) -> str:
    """The figure's statement of what a line and a band are, and of the smoothing."""
    return f"mean over seeds (line), min-max over seeds (band); {smoothing_text(window)}"


def diagnostic_columns(metrics: pd.DataFrame) -> list[str]:
    """The estimators' own diagnostics the runs logged (est/*, oar/*), in column order."""
    return [
        c
        for c in metrics.columns
        if c.startswith(DIAGNOSTIC_PREFIXES) and not c.startswith(SKIPPED) and metrics[c].notna().any()
    ]


def _arm_curve(part: pd.DataFrame, col: str, window: int) -> pd.DataFrame:
    """Per step: mean, min and max over the runs of one arm of the run's rolling mean of `col`."""
    own = part[["run_id", "step", col]].dropna().sort_values("step")
    own[col] = own.groupby("run_id")[col].transform(lambda s: s.rolling(window, min_periods=1).mean())
    return own.groupby("step")[col].agg(["mean", "min", "max"])


def _draw(ax, m: pd.DataFrame, col: str, arms, styles: ArmStyles, window: int) -> None:
    for arm in arms:
        stats = _arm_curve(m[m["arm"] == arm], col, window)
        if stats.empty:
            continue
        style = styles.of(arm)
        ax.plot(stats.index, stats["mean"], lw=1.4, **style)
        ax.fill_between(stats.index, stats["min"], stats["max"], color=style["color"], alpha=0.12, lw=0)
    ax.grid(alpha=0.3)
    ax.set_xlabel("step")


def _share_y(axes: list) -> None:
    low = min(ax.get_ylim()[0] for ax in axes)
    high = max(ax.get_ylim()[1] for ax in axes)
    for ax in axes:
        ax.set_ylim(low, high)


def _with_arms(data: ReportData) -> pd.DataFrame:
    return data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id")


def training_curves(data: ReportData, styles: ArmStyles):
    """Reward, ACR and its split, entropy and length by step: one row of panels per metric, one column per context
    (the same y range along a row); None without training metrics."""
    if data.metrics.empty:
        return None
    m = _with_arms(data)
    cols = [c for c in TRAIN_METRICS if c in m and m[c].notna().any()]
    if not cols:
        return None
    window = smoothing_window(int(m["step"].max()))
    columns = panel_columns(sorted(m["arm"].unique()), styles)
    split = len(columns) > 1
    fig, axes = grid(len(cols) * len(columns), len(columns) if split else 3, 5.6 if split else 4.6, 2.8)
    panels = iter(axes)
    for col in cols:
        row = []
        for label, arms in columns:
            ax = next(panels)
            _draw(ax, m, col, arms, styles, window)
            ax.set_title(panel_title(f"{col}: {TRAIN_METRICS[col]}", label), fontsize=10)
            row.append(ax)
        _share_y(row)
    styles.legend(fig, m["arm"].unique(), title=caption(window))
    return fig


def panel_columns(arms: list[str], styles: ArmStyles) -> list[tuple[str, list[str]]]:
    """(label, arms) of each column of training panels: one per context; a context with more than
    `MAX_LINES` arms is split into columns of at most `MAX_LINES` - 1 arms, each with the baseline."""
    out = []
    for context in [c for c in styles.contexts if any(styles.context.get(a, "") == c for a in arms)] or [""]:
        own = [a for a in arms if styles.context.get(a, "") == context]
        base = [a for a in own if styles.is_baseline(a)]
        others = [a for a in own if a not in base]
        if len(own) <= MAX_LINES:
            out.append((context, own))
            continue
        parts = -(-len(others) // max(1, MAX_LINES - len(base)))  # ceil
        size = -(-len(others) // parts)  # even, contiguous chunks
        chunks = [others[i : i + size] for i in range(0, len(others), size)]
        out += [(f"{context} arms {i + 1}/{len(chunks)}".strip(), base + c) for i, c in enumerate(chunks)]
    return out


def diagnostics(data: ReportData, styles: ArmStyles):
    """One panel per estimator diagnostic (est/*, oar/*) with only the arms that log it; None when no run logs
    one."""
    if data.metrics.empty:
        return None
    m = _with_arms(data)
    cols = diagnostic_columns(m)
    if not cols:
        return None
    window = smoothing_window(int(m["step"].max()))
    fig, axes = grid(len(cols), 3, 4.6, 2.8)
    shown = set()
    for ax, col in zip(axes, cols):
        arms = sorted(m.loc[m[col].notna(), "arm"].unique())
        shown.update(arms)
        _draw(ax, m, col, arms, styles, window)
        methods = ", ".join(sorted({styles.method.get(a, a) for a in arms}))
        ax.set_title(f"{col} ({methods})", fontsize=10)
    styles.legend(fig, sorted(shown), title=caption(window))
    return fig
