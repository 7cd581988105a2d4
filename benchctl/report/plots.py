"""The report's figures (matplotlib, `benchctl.report.figstyle`): each builder returns a Figure (or None when
there is nothing to draw), with one panel per task and context (split past `training_plots.MAX_LINES` arms), one
colour per method, and one legend for the whole figure outside the panels; `figstyle.png` turns it into bytes.

pass@k curves (k on a log2 axis, CI bands), compute curves (every seed's held-out pass@1 against rollout tokens,
each arm's fitted ScaleRL curve), pass@1 against rollout tokens (when no run has the 3 evaluations a fit needs),
rliable aggregates and performance profiles.  Training curves and the estimators' diagnostics: `training_plots`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchctl.report.figstyle import ArmStyles, grid, panel_title, png, token_axis
from benchctl.report.load import ReportData
from benchctl.report.rl import TAUS, RliableSummary


def _grid(n: int, width: float = 4.6, height: float = 3.4, max_cols: int = 3):
    """(figure, list of n axes): the grid `benchctl.replay` draws its panels on."""
    return grid(n, max_cols, width, height)


def _png(fig) -> bytes:
    """PNG bytes of a figure (`benchctl.replay`)."""
    return png(fig)


def _task_grid(frame: pd.DataFrame, styles: ArmStyles, width: float, height: float):
    """One panel per task and column of `training_plots.panel_columns` present in frame (eval_task, arm): a context
    per column, side by side, and a context of more than its `MAX_LINES` arms split over panels each with the
    baseline (the 2026 claims matrix has 18 arms beside GRPO: in one panel their lines and bands cannot be told
    apart). Returns the figure, (axis, task, column label, rows) per panel, and the panels split from one (task,
    context), which `_same_y` gives one y range once drawn."""
    from benchctl.report.training_plots import panel_columns

    parts = []
    for task in sorted(frame["eval_task"].unique()):
        own = frame[frame["eval_task"] == task]
        for label, arms in panel_columns(sorted(own["arm"].unique()), styles):
            key = (task, styles.context.get(arms[-1], ""))
            parts.append((task, label, key, own[own["arm"].isin(arms)]))
    per_task = max(sum(p[0] == task for p in parts) for task in {p[0] for p in parts})
    fig, axes = grid(len(parts), per_task if 1 < per_task <= 4 else 3, width, height)  # more: rows of 3
    keys = list(dict.fromkeys(p[2] for p in parts))
    groups = [[ax for ax, p in zip(axes, parts) if p[2] == key] for key in keys]
    return fig, [(ax, task, label, rows) for ax, (task, label, _, rows) in zip(axes, parts)], groups


def _same_y(groups: list) -> None:
    """The panels split from one (task, context) (`_task_grid`'s groups) get the union of their y ranges."""
    for axes in groups:
        if len(axes) > 1:
            low, high = min(ax.get_ylim()[0] for ax in axes), max(ax.get_ylim()[1] for ax in axes)
            for ax in axes:
                ax.set_ylim(low, high)


def passk_curves(passk: pd.DataFrame, styles: ArmStyles):
    """One panel per task and context: pass@k against k (log2 axis) per arm, CI band over seeds and problems."""
    if passk.empty:
        return None
    fig, panels, groups = _task_grid(passk, styles, 4.6, 3.3)
    for ax, task, context, part in panels:
        for arm, own in part.groupby("arm"):
            own = own.sort_values("k")
            style = styles.of(arm)
            ax.plot(own["k"], own["pass_at_k"], marker="o", ms=3, **style)
            ax.fill_between(own["k"], own["low"], own["high"], color=style["color"], alpha=0.12, lw=0)
        ks = sorted(part["k"].unique())
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set(title=panel_title(f"{task}: pass@k", context), xlabel="k", ylabel="pass@k")
        ax.grid(alpha=0.3)
    _same_y(groups)
    styles.legend(fig, passk["arm"].unique())
    return fig


def compute_curves(points: pd.DataFrame, fits: pd.DataFrame, styles: ArmStyles):
    """One panel per task and context: every held-out pass@1 of every seed against rollout tokens (dots), and each
    arm's fitted ScaleRL curve (line) from `benchctl.report.compute`, its asymptote A dotted where identified; a fit
    that misses its arm's own points (`_misses`: a falling run) is not drawn."""
    from benchctl.report.compute import scalerl_curve

    if points.empty:
        return None
    fig, panels, groups = _task_grid(points, styles, 5.4, 3.6)
    for ax, task, context, part in panels:
        top = part["score"].max()
        grid_x = np.geomspace(max(part.loc[part["tokens"] > 0, "tokens"].min(), 1.0), part["tokens"].max(), 200)
        for arm, own in part.groupby("arm"):
            style = styles.of(arm)
            ax.scatter(own["tokens"].clip(lower=grid_x[0] / 2), own["score"], s=9, alpha=0.35, color=style["color"])
            fit = fits[(fits["arm"] == arm) & (fits["eval_task"] == task)]
            if len(fit) and np.isfinite(fit.iloc[0]["asymptote"]):
                f = fit.iloc[0]
                if _misses(own, f):  # a falling curve: the rising ScaleRL form does not describe it
                    continue
                curve = scalerl_curve(grid_x, f["r0"], f["asymptote"], f["efficiency"], f["midpoint"])
                ax.plot(grid_x, curve, lw=1.8, **style)
                if bool(f["asymptote_identified"]):  # an unidentified asymptote is no line to read
                    ax.axhline(f["asymptote"], color=style["color"], ls=":", lw=0.9, alpha=0.7)
                top = max(top, float(np.nanmax(curve)))
        ax.set_ylim(max(0.0, part["score"].min() - 0.05), min(1.0, top + 0.08))  # an asymptote above: off the panel
        token_axis(ax)
        ax.set(title=panel_title(f"{task}: held-out pass@1", context), ylabel="pass@1")
        ax.set_xlabel("rollout tokens (log; step 0 at the left edge)")
        ax.grid(alpha=0.3)
    _same_y(groups)
    styles.legend(fig, points["arm"].unique())
    return fig


MISS = 0.05  # a fitted curve further than this (pass@1, mean over evaluation points) from its arm's means: not drawn


def _misses(own: pd.DataFrame, f) -> bool:
    """Whether the arm's fitted curve misses its own points: mean |curve - mean score| over the evaluated token
    counts above `MISS` (a rising ScaleRL curve fitted to a falling or flat-then-falling run)."""
    from benchctl.report.compute import scalerl_curve

    means = own[own["tokens"] > 0].groupby("tokens")["score"].mean()
    if means.empty:
        return False
    at = scalerl_curve(means.index.to_numpy(float), f["r0"], f["asymptote"], f["efficiency"], f["midpoint"])
    return float(np.mean(np.abs(at - means.to_numpy()))) > MISS


def pass1_vs_tokens(data: ReportData, styles: ArmStyles):
    """One panel per task and context: pass@1 of every evaluation of every run against the rollout tokens spent by
    then (dots), and the arm's mean over its runs' n-th evaluations (line; a large marker where each run has one).
    A run stopped by a token budget ends at the step its answers' lengths allow, so its final evaluation is matched
    to the others' by order, not by step number."""
    curve = data.eval_curve
    if curve.empty or curve["tokens"].isna().all():
        return None
    curve = curve.dropna(subset=["tokens"]).merge(data.runs[["run_id", "arm"]], on="run_id")
    fig, panels, groups = _task_grid(curve, styles, 4.6, 3.3)
    for ax, task, context, part in panels:
        for arm, own in part.groupby("arm"):
            style = styles.of(arm)
            ax.scatter(own["tokens"], own["pass@1"], s=12, alpha=0.5, color=style["color"])
            nth = own.sort_values("step").groupby("run_id").cumcount()  # (evaluations,) 0, 1, ... within each run
            mean = own.groupby(nth).agg(tokens=("tokens", "mean"), p=("pass@1", "mean"))
            if len(mean) > 1:
                ax.plot(mean["tokens"], mean["p"], marker="o", ms=3, **style)
            else:
                ax.plot(mean["tokens"], mean["p"], marker="D", ms=8, ls="none", mec="white", color=style["color"])
        token_axis(ax)
        ax.set(title=panel_title(f"{task}: pass@1 vs rollout tokens", context), xlabel="rollout tokens")
        ax.set_ylabel("pass@1")
        ax.grid(alpha=0.3)
    _same_y(groups)
    styles.legend(fig, curve["arm"].unique())
    return fig


def rliable_figure(summary: RliableSummary, styles: ArmStyles):
    """Aggregate point estimates with stratified-bootstrap intervals, and performance profiles."""
    if summary.aggregates.empty:
        return None
    agg = summary.aggregates[summary.aggregates["k"] == summary.k]
    metrics = list(dict.fromkeys(agg["metric"]))
    fig, axes = grid(len(metrics) + 1, 3, 4.4, 3.2)
    arms = sorted(agg["arm"].unique())
    for ax, metric in zip(axes, metrics):
        part = agg[agg["metric"] == metric].set_index("arm").loc[arms]
        value, low, high = (part[c].to_numpy(dtype=float) for c in ("value", "low", "high"))
        y = np.arange(len(arms))
        for i, arm in enumerate(arms):
            err = [[value[i] - low[i]], [high[i] - value[i]]]
            ax.errorbar(value[i], y[i], xerr=err, fmt="o", capsize=3, color=styles.of(arm)["color"])
        ax.set_yticks(y, arms, fontsize=8)
        ax.set(title=f"{metric} (pass@{summary.k})")
        ax.grid(alpha=0.3)
    ax = axes[len(metrics)]
    for arm in arms:
        if arm in summary.profiles:
            style = styles.of(arm)
            ax.plot(TAUS, summary.profiles[arm], **style)
            ci = summary.profile_cis.get(arm)
            if ci is not None:
                ax.fill_between(TAUS, ci[0], ci[1], color=style["color"], alpha=0.12, lw=0)
    ax.set(title=f"performance profile (pass@{summary.k})", xlabel="tau", ylabel="fraction of runs > tau")
    styles.legend(fig, arms)
    return fig
