"""The report's figures as PNG bytes (matplotlib Agg, imported lazily): name -> png.

pass@k curves (k on a log2 axis, CI bands), training curves (mean over seeds, min-max band over seeds),
pass@1 against rollout tokens (equal-compute comparison), rliable aggregates and performance profiles.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from benchctl.report.load import ReportData
from benchctl.report.rl import TAUS, RliableSummary

TRAIN_PANELS = (
    ("reward", ("reward/mean",)),
    ("ACR and its split", ("acr/all", "acr/all_wrong", "acr/all_correct")),
    ("policy entropy", ("policy/entropy",)),
    ("response length", ("response/length_mean",)),
)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    _plt().close(fig)
    return buf.getvalue()


def _colors(arms) -> dict:
    """One distinct colour per arm: tab10 up to 10 arms, tab20 up to 20 (matplotlib's default cycle repeats after
    10, so a 14-arm matrix showed two arms in one colour)."""
    arms = sorted(set(arms))
    cmap = _plt().get_cmap("tab10" if len(arms) <= 10 else "tab20")
    return {arm: cmap(i % cmap.N) for i, arm in enumerate(arms)}


def _grid(n: int, width: float = 4.6, height: float = 3.4, max_cols: int = 3):
    cols = min(n, max_cols)
    rows = (n + cols - 1) // cols
    fig, axes = _plt().subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def passk_curves(passk: pd.DataFrame) -> bytes | None:
    """One panel per task: pass@k against k (log2 axis) per arm, CI band."""
    if passk.empty:
        return None
    tasks = sorted(passk["eval_task"].unique())
    fig, axes = _grid(len(tasks))
    colors = _colors(passk["arm"])
    for ax, task in zip(axes, tasks):
        for arm, part in passk[passk["eval_task"] == task].groupby("arm"):
            part = part.sort_values("k")
            ax.plot(part["k"], part["pass_at_k"], marker="o", ms=3, label=arm, color=colors[arm])
            ax.fill_between(part["k"], part["low"], part["high"], color=colors[arm], alpha=0.15)
        ax.set_xscale("log", base=2)
        ax.set(title=f"{task}: pass@k", xlabel="k", ylabel="pass@k")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return _png(fig)


def _metric_panels(metrics: pd.DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    est = tuple(c for c in metrics.columns if c.startswith("est/") and not c.startswith("est/acr"))  # acr/*: own panel
    panels = [(t, tuple(c for c in cols if c in metrics)) for t, cols in TRAIN_PANELS]
    panels += [(c, (c,)) for c in est]
    return [(t, cols) for t, cols in panels if cols]


def training_curves(data: ReportData) -> bytes | None:
    """Reward, ACR split, entropy, length and every est/* diagnostic by step: mean over runs, min-max band."""
    if data.metrics.empty:
        return None
    m = data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id")
    panels = _metric_panels(m)
    fig, axes = _grid(len(panels))
    styles = ("-", "--", ":")
    for ax, (title, cols) in zip(axes, panels):
        for i, (arm, part) in enumerate(m.groupby("arm")):
            for col, style in zip(cols, styles):
                stats = part.groupby("step")[col].agg(["mean", "min", "max"])
                label = arm if len(cols) == 1 else f"{arm} {col.split('/')[-1]}"
                (line,) = ax.plot(stats.index, stats["mean"], style, color=f"C{i}", label=label)
                ax.fill_between(stats.index, stats["min"], stats["max"], color=line.get_color(), alpha=0.12)
        ax.set(title=title, xlabel="step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    return _png(fig)


def pass1_vs_tokens(data: ReportData) -> bytes | None:
    """One panel per task: pass@1 of every eval (periodic and final) against the rollout tokens spent so far,
    mean over runs of an arm at each step, min-max band; equal-compute comparisons read off vertically."""
    curve = data.eval_curve
    if curve.empty or curve["tokens"].isna().all():
        return None
    curve = curve.dropna(subset=["tokens"]).merge(data.runs[["run_id", "arm"]], on="run_id")
    tasks = sorted(curve["eval_task"].unique())
    fig, axes = _grid(len(tasks))
    colors = _colors(curve["arm"])
    for ax, task in zip(axes, tasks):
        for arm, part in curve[curve["eval_task"] == task].groupby("arm"):
            stats = (
                part.groupby("step")
                .agg(tokens=("tokens", "mean"), mean=("pass@1", "mean"), low=("pass@1", "min"), high=("pass@1", "max"))
                .sort_values("tokens")
            )
            ax.plot(stats["tokens"], stats["mean"], marker="o", ms=3, label=arm, color=colors[arm])
            ax.fill_between(stats["tokens"], stats["low"], stats["high"], color=colors[arm], alpha=0.15)
        ax.set(title=f"{task}: pass@1 vs rollout tokens", xlabel="rollout tokens", ylabel="pass@1")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return _png(fig)


def compute_curves(points: pd.DataFrame, fits: pd.DataFrame) -> bytes | None:
    """One panel per task: every held-out pass@1 of every seed against rollout tokens (dots), and each arm's
    fitted ScaleRL curve (line; dashed at its asymptote A) from `benchctl.report.compute`. Legend outside."""
    from benchctl.report.compute import scalerl_curve

    if points.empty:
        return None
    tasks = sorted(points["eval_task"].unique())
    fig, axes = _grid(len(tasks), width=5.6, height=4.0, max_cols=2)
    colors = _colors(points["arm"])
    for ax, task in zip(axes, tasks):
        part = points[points["eval_task"] == task]
        grid = np.geomspace(max(part.loc[part["tokens"] > 0, "tokens"].min(), 1.0), part["tokens"].max(), 200)
        for arm, own in part.groupby("arm"):
            ax.scatter(own["tokens"].clip(lower=grid[0] / 2), own["score"], s=9, alpha=0.35, color=colors[arm])
            fit = fits[(fits["arm"] == arm) & (fits["eval_task"] == task)]
            if len(fit) and np.isfinite(fit.iloc[0]["asymptote"]):
                f = fit.iloc[0]
                curve = scalerl_curve(grid, f["r0"], f["asymptote"], f["efficiency"], f["midpoint"])
                ax.plot(grid, curve, color=colors[arm], lw=1.8, label=f"{arm} (A={100 * f['asymptote']:.0f})")
                ax.axhline(f["asymptote"], color=colors[arm], ls="--", lw=0.8, alpha=0.6)
            else:
                ax.plot([], [], color=colors[arm], label=f"{arm} (no fit)")
        ax.set_xscale("log")
        ax.set(title=f"{task}: held-out pass@1 vs rollout tokens", ylabel="pass@1")
        ax.set_xlabel("rollout tokens (log; step 0 at the left edge)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def rliable_figure(summary: RliableSummary) -> bytes | None:
    """Aggregate point estimates with stratified-bootstrap intervals, and performance profiles."""
    if summary.aggregates.empty:
        return None
    agg = summary.aggregates[summary.aggregates["k"] == summary.k]
    metrics = list(dict.fromkeys(agg["metric"]))
    fig, axes = _grid(len(metrics) + 1, width=4.0, height=3.0)
    arms = sorted(agg["arm"].unique())
    for ax, metric in zip(axes, metrics):
        part = agg[agg["metric"] == metric].set_index("arm").loc[arms]
        value, low, high = (part[c].to_numpy(dtype=float) for c in ("value", "low", "high"))
        y = np.arange(len(arms))
        ax.errorbar(value, y, xerr=np.vstack([value - low, high - value]), fmt="o", capsize=3)
        ax.set_yticks(y, arms, fontsize=7)
        ax.set(title=f"{metric} (pass@{summary.k})")
        ax.grid(alpha=0.3)
    ax = axes[len(metrics)]
    colors = _colors(arms)
    for arm in arms:
        if arm in summary.profiles:
            (line,) = ax.plot(TAUS, summary.profiles[arm], label=arm, color=colors[arm])
            ci = summary.profile_cis.get(arm)
            if ci is not None:
                ax.fill_between(TAUS, ci[0], ci[1], color=line.get_color(), alpha=0.15)
    ax.set(title=f"performance profile (pass@{summary.k})", xlabel="tau", ylabel="fraction of runs > tau")
    ax.legend(fontsize=6)
    return _png(fig)
