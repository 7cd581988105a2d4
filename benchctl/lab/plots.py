"""PNG plots of lab results (matplotlib, Agg backend, imported lazily). Each returns the written paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchctl.lab import theory
from benchctl.lab.result import LabResult


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _by(rows: list[dict], key: str) -> dict:
    out: dict = {}
    for row in rows:
        out.setdefault(row[key], []).append(row)
    return out


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def plot_bias(result: LabResult, out: Path) -> list[Path]:
    plt, paths = _plt(), []
    for G, rows in _by(result.rows, "G").items():
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
        dense = np.linspace(0.01, 0.99, 197)
        for label, est_rows in _by(rows, "estimator").items():
            p = [r["p"] for r in est_rows]
            for ax, key in zip(axes, ("adv_correct", "adv_wrong", "bias_any")):
                ax.plot(p, [r[key] for r in est_rows], "o-", label=label, ms=4)
        axes[0].plot(dense, 1 - dense, "k--", lw=1, label="true 1−p")
        axes[1].plot(dense, -dense, "k--", lw=1, label="true −p")
        axes[2].plot(dense, theory.conditional_bias(dense, G), "k-", lw=1.5, label="HA-DW Lemma 2")
        axes[2].axhline(0, color="grey", lw=0.5)
        for ax, title in zip(axes, ("E[A | S, correct]", "E[A | S, wrong]", "bias E[(r−p) − A | S]")):
            ax.set(title=f"{title}, G={G}", xlabel="success probability p")
            ax.legend(fontsize=7)
        paths.append(_save(fig, out / f"bias_G{G}.png"))
    return paths


def plot_symmetry(result: LabResult, out: Path) -> list[Path]:
    plt, paths = _plt(), []
    for G, rows in _by(result.rows, "G").items():
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        dense = np.linspace(0, 1, 201)
        mixed = [r for r in rows if 0 < r["c"] < G]  # degenerate groups: no magnitude for most estimators
        for label, est_rows in _by(mixed, "estimator").items():
            p = [r["p_hat"] for r in est_rows]
            axes[0].plot(p, [r["total"] for r in est_rows], "o-", ms=4, label=label)
            share = [r["sum_abs_correct"] / r["total"] if r["total"] > 0 else np.nan for r in est_rows]
            axes[1].plot(p, share, "o-", ms=4, label=label)
        axes[0].plot(dense, theory.grpo_total_magnitude(dense, G), "k--", lw=1, label="2G√(p(1−p)) (Thm. 2)")
        totals = [r["total"] for r in mixed if r["total"] > 0]
        if totals and max(totals) > 8 * min(totals):
            axes[0].set_yscale("log")  # e.g. pos_dominant's beta = 10 would flatten the others
        axes[0].set(title=f"update magnitude Σ|A|, G={G}", xlabel="group success rate p̂ = c/G")
        axes[1].axhline(0.5, color="k", lw=0.8, ls="--")
        axes[1].set(title="share of Σ|A| on correct rollouts (0.5 = symmetric)", xlabel="p̂", ylim=(0, 1))
        for ax in axes:
            ax.legend(fontsize=7)
        paths.append(_save(fig, out / f"symmetry_G{G}.png"))
    return paths


def plot_collapse(result: LabResult, out: Path) -> list[Path]:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    dense = np.linspace(0, 1, 201)
    for i, G in enumerate(sorted({r["G"] for r in result.rows})):
        colour = f"C{i}"
        ax.plot(dense, theory.degenerate_probability(dense, G), color=colour, label=f"P(degenerate), G={G}")
        ax.plot(dense, theory.all_wrong_probability(dense, G), color=colour, ls=":", lw=1)
        ax.plot(dense, theory.all_correct_probability(dense, G), color=colour, ls="--", lw=1)
        pts = [r for r in result.rows if r["G"] == G and not r["dist"].startswith("beta")]
        ax.plot([r["p"] for r in pts], [r["expected_acr"] for r in pts], "o", color=colour, ms=4)
        for r in (r for r in result.rows if r["G"] == G and r["dist"].startswith("beta")):
            ax.plot(
                [r["p"]], [r["expected_acr"]], "*", color=colour, ms=12, label=f"{r['dist']} prompts (at mean p), G={G}"
            )
    ax.set(
        title="expected ACR = (1−p)^G + p^G  (dotted: all wrong, dashed: all correct)",
        xlabel="success probability p",
        ylabel="probability",
    )
    ax.legend(fontsize=7)
    return [_save(fig, out / "collapse.png")]


def plot_bandit(result: LabResult, out: Path) -> list[Path]:
    plt = _plt()
    metrics = [f"pass@{k}" for k in result.config["k"]] + ["entropy", "undiscovered_frac"]
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.8 * nrows), squeeze=False)
    axes = grid.ravel()
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    for i, (label, rows) in enumerate(_by(result.rows, "estimator").items()):
        steps = np.array([r["step"] for r in rows])
        for ax, m in zip(axes, metrics):
            mean = np.array([r[f"{m}_mean"] for r in rows])
            ci = np.array([r[f"{m}_ci95"] for r in rows])
            ax.plot(steps, mean, color=f"C{i % 10}", label=label, lw=1.3)
            ax.fill_between(steps, mean - ci, mean + ci, color=f"C{i % 10}", alpha=0.15)
    titles = {"entropy": "policy entropy (nats)", "undiscovered_frac": "correct behaviours never sampled"}
    for ax, m in zip(axes, metrics):
        ax.set(title=titles.get(m, f"{m} (exact, mean over prompts)"), xlabel="step")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"softmax bandit, mode={result.config['mode']}, {result.config['seeds']} seeds, 95% CI bands")
    return [_save(fig, out / "bandit.png")]


def plot_anchor(result: LabResult, out: Path) -> list[Path]:
    """HA-DW's anchor under both gain rules against one simulated run's batch accuracy, per trajectory."""
    plt = _plt()
    trajectories = _by(result.series, "trajectory")
    fig, axes = plt.subplots(1, len(trajectories), figsize=(6.2 * len(trajectories), 4.0), sharey=True)
    styles = {"anchor_std": ("#d62728", "--", "Eq. 10 as written (gain=anchor_std)"),
              "constant": ("#1f77b4", "-", "default (gain=constant)")}  # fmt: skip
    for ax, (name, rows) in zip(np.atleast_1d(axes), trajectories.items()):
        first = [r for r in rows if r["gain"] == "constant"]
        ax.plot([r["step"] for r in first], [r["accuracy"] for r in first], "o", ms=3, color="0.6",
                label="batch accuracy (one run)")  # fmt: skip
        for gain, group in _by(rows, "gain").items():
            color, dash, label = styles[gain]
            ax.plot([r["step"] for r in group], [r["anchor_mean"] for r in group], dash, color=color, lw=2.2,
                    label=f"anchor (mean of runs), {label}")  # fmt: skip
        ax.set_title(f"{name} accuracy")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("accuracy / anchor")
    np.atleast_1d(axes)[0].legend(loc="upper left", fontsize=8, framealpha=0.9)
    return [_save(fig, out / "anchor.png")]


def plot(result: LabResult, directory: str | Path) -> list[Path]:
    """Write the result's PNG plots into `directory` (created)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    plots = {"bias": plot_bias, "symmetry": plot_symmetry, "collapse": plot_collapse, "bandit": plot_bandit}
    return {**plots, "anchor": plot_anchor}[result.command](result, out)
