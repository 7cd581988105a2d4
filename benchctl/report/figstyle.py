"""What every report figure shares: matplotlib (Agg, imported lazily), one colour per method and one line style per
context, a panel grid, one legend outside the panels, and PNG bytes.

An arm is a method (the estimator label, or the model) in a context (the other group-by columns, e.g. `G=8`); when
the runs' losses differ (`crossed.varies`) the method is the estimator (the arm without its `+<loss>`) and the loss
(`loss_resolved`) leads the context, so a panel compares estimators under one loss.
Figures draw one panel per context (and task, or metric), so a panel holds one line per method, each method keeps
its colour in every panel and figure, and the context's line style (solid, dashed, ...) repeats in the legend.
With more than `MAX_CONTEXTS` contexts the arm itself is the method (one colour per arm, one context).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd

MAX_CONTEXTS = 4
DASHES = ("-", "--", ":", "-.")


def plt():
    """matplotlib.pyplot on the Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def png(fig) -> bytes:
    """The figure as PNG bytes (every artist, the outside legend included), then closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt().close(fig)
    return buf.getvalue()


@dataclass(frozen=True)
class ArmStyles:
    """arm -> method and context; method -> colour; context -> line style."""

    method: dict[str, str]
    context: dict[str, str]
    colors: dict[str, tuple]
    dashes: dict[str, str]

    @property
    def contexts(self) -> list[str]:
        return list(self.dashes)

    def is_baseline(self, arm: str) -> bool:
        return self.colors.get(self.method.get(arm, arm)) == BASELINE_COLOR

    def of(self, arm: str) -> dict:
        """plot() keyword arguments of an arm (arms not known get grey)."""
        return {
            "color": self.colors.get(self.method.get(arm, arm), "0.5"),
            "ls": self.dashes.get(self.context.get(arm, ""), "-"),
        }

    def legend(self, fig, arms, title: str = "") -> None:
        """One legend for the whole figure, above the panels: a colour per method of `arms`, then (with several
        contexts) a line style per context."""
        from matplotlib.lines import Line2D

        methods = sorted({self.method.get(a, a) for a in arms}, key=lambda m: (self.colors.get(m) != BASELINE_COLOR, m))
        handles = [Line2D([], [], color=self.colors.get(m, "0.5"), lw=2, label=m) for m in methods]
        contexts = sorted({self.context.get(a, "") for a in arms} - {""}, key=self.contexts.index)
        if len(contexts) > 1:
            handles += [Line2D([], [], color="0.55", ls=self.dashes[c], lw=1.5, label=c) for c in contexts]
        fig.legend(
            handles=handles,
            loc="outside upper center",
            ncols=min(len(handles), 8),
            frameon=False,
            fontsize=9,
            title=title or None,
            title_fontsize=9,
        )


BASELINE_COLOR = (0.15, 0.15, 0.15, 1.0)


def _colors(names: list[str], baselines: set[str]) -> dict[str, tuple]:
    """One distinct colour per name, near-black for the baselines: tab10 up to 10 others, tab20 up to 20 (the
    default cycle repeats after 10)."""
    others = [n for n in names if n not in baselines]
    cmap = plt().get_cmap("tab10" if len(others) <= 10 else "tab20")
    colors = {name: cmap(i % cmap.N) for i, name in enumerate(others)}
    return colors | {name: BASELINE_COLOR for name in names if name in baselines}


def _split(row: dict, method_cols: tuple, context_cols: tuple, losses: bool) -> tuple[str, str]:
    """(method, context) of one arm's row; with `losses` the arm's `+<loss>` leaves the method and its
    `loss_resolved` leads the context."""
    from benchctl.report.load import arm_label

    method = arm_label(row, method_cols) if method_cols else row["arm"]
    context = arm_label(row, context_cols) if context_cols else ""
    if not losses:
        return method, context
    loss, resolved = row.get("loss"), row.get("loss_resolved")
    method = method.replace(f"+{loss}", "", 1) if isinstance(loss, str) else method
    return method, " ".join(t for t in (resolved if isinstance(resolved, str) else "-", context) if t)


def arm_styles(runs: pd.DataFrame, group_by: tuple[str, ...], arm_column: str, baselines=()) -> ArmStyles:
    """Split each arm of `runs` (columns arm + the group-by columns) into method and context; the methods of the
    `baselines` arms are drawn near-black."""
    from benchctl.report.crossed import LOSS_COLUMNS, varies

    losses = varies(runs)  # estimator x loss: the method is the estimator, the loss leads the context
    skip = LOSS_COLUMNS if losses else ()
    context_cols = tuple(c for c in group_by if c != arm_column and not c.startswith("est") and c not in skip)
    method_cols = tuple(c for c in group_by if c not in context_cols and c not in skip)
    method, context = {}, {}
    for row in runs.drop_duplicates("arm").to_dict("records"):
        method[row["arm"]], context[row["arm"]] = _split(row, method_cols, context_cols, losses)
    names = sorted(set(context.values()))
    if len(names) > MAX_CONTEXTS or not method_cols:
        method, context, names = {a: a for a in method}, {a: "" for a in method}, [""]
    base = {method[a] for a in baselines if a in method}
    colors = _colors(sorted(set(method.values())), base)
    return ArmStyles(method, context, colors, dict(zip(names, DASHES)))


def grid(n: int, ncols: int, width: float, height: float):
    """A figure of n panels in ncols columns (constrained layout, so the outside legend gets its own room);
    returns (figure, the n visible axes)."""
    ncols = max(1, min(n, ncols))
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt().subplots(
        nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained"
    )
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)[:n]


def panel_title(name: str, context: str) -> str:
    return f"{name} ({context})" if context else name


def compact(value: float, _pos=None) -> str:
    """An axis label for a token count: 20k, 1.5M."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def token_axis(ax) -> None:
    """A log x axis of rollout tokens labelled 10k, 20k, 50k, 100k (no crowded minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(compact))
    ax.xaxis.set_minor_formatter(NullFormatter())
