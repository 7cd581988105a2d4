"""`benchctl plan`'s outputs: the rich tables, plan.json, the parquet tables and the mde-against-core-hours figure."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchctl.report.figstyle import plt, png

FAMILY_STYLE = {  # family -> (colour, line style, marker): told apart in grey print too
    "add seeds": ("tab:blue", "-", "o"),
    "add questions": ("tab:orange", "--", "s"),
    "add samples": ("tab:green", ":", "^"),
    "cheapest": ("black", "-.", "D"),
}


def plan_json(result) -> dict:
    """Everything the plan says, as plain JSON types (`benchctl plan --json`, plan.json)."""
    cfg = {k: v for k, v in asdict(result.config).items() if k != "sources"}
    return {
        "kind": "benchctl-plan",
        "config": cfg,
        "pilot": result.pilot,
        "components": result.components.to_dict("records"),
        "cost": asdict(result.cost),
        "choice": result.choice,
        "message": result.message,
        "designs": result.designs.to_dict("records"),
    }


def plot_plan(result, path: Path) -> Path:
    """mde (worst comparison, points) against core-hours, one line per design family, the target as a line."""
    p = plt()
    fig, ax = p.subplots(figsize=(7.5, 4.8))
    for family, part in result.designs.groupby("family", sort=False):
        colour, dash, marker = FAMILY_STYLE[family]
        part = part.sort_values("core_hours")
        ax.plot(part["core_hours"], part["mde"], dash, color=colour, marker=marker, ms=4, lw=1.6, label=family)
    ax.axhline(result.config.target_mde, color="tab:red", lw=1, label=f"target mde {result.config.target_mde:g}")
    if result.choice is not None:
        c = result.choice
        ax.plot([c["core_hours"]], [c["mde"]], "*", color="tab:red", ms=14, label="recommended")
    if result.config.budget is not None:
        ax.axvline(result.config.budget, color="grey", lw=1, ls="--", label=f"budget {result.config.budget:g}")
    ax.set(xscale="log", yscale="log", xlabel="core-hours of the design", ylabel="predicted mde (points, worst)")
    ax.set_title(f"pilot: {result.pilot['seeds']} seeds x {result.pilot['questions']} questions x "
                 f"{result.pilot['samples']:g} samples", fontsize=10)  # fmt: skip
    from matplotlib.ticker import FormatStrFormatter

    for axis in (ax.xaxis, ax.yaxis):  # plain numbers on the log axes (1, 2, 5, 10, ...), not 10^x
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.tick_params(which="minor", labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    path.write_bytes(png(fig))
    return path


def write_plan(result, out: Path) -> tuple[Path, ...]:
    """plan_designs.parquet, plan_components.parquet, plan_comparisons.parquet, plan.json, plan.png under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "plan_designs.parquet", out / "plan_components.parquet", out / "plan_comparisons.parquet"]
    for frame, path in zip((result.designs, result.components, result.per_comparison), files, strict=True):
        frame.to_parquet(path, index=False)
    (out / "plan.json").write_text(json.dumps(plan_json(result), indent=1, default=_plain))
    return (*files, out / "plan.json", plot_plan(result, out / "plan.png"))


def _plain(value):
    return value.item() if isinstance(value, np.generic) else str(value)


def rich_tables(result) -> list:
    """The components of each comparison, then the families' designs (the recommendation marked)."""
    from rich.table import Table

    comp = Table(title="variance components of the pilot (sd in points; mde at the pilot's design)")
    cols = [
        "comparison",
        "diff",
        "seed",
        "arm x problem",
        "seed x problem",
        "per sample",
        "mde printed",
        "mde predicted",
    ]
    for col in cols:
        comp.add_column(col, justify="left" if col == "comparison" else "right")
    for r in result.components.itertuples():
        name = f"{r.arm} vs {r.baseline} ({r.eval_task})"
        nums = (r.diff, r.seed_sd, r.problem_sd, r.interaction_sd, r.sampling_sd, r.printed_mde, r.pilot_mde)
        comp.add_row(name, *(f"{x:+.2f}" if i == 0 else f"{x:.2f}" for i, x in enumerate(nums)))
    designs = Table(title=f"designs (mde: the worst comparison, points; target {result.config.target_mde:g})")
    for col in ("family", "seeds", "questions", "samples", "core-hours", "mde", "worst comparison"):
        designs.add_column(col, justify="left" if col in ("family", "worst comparison") else "right")
    shown = result.designs[result.designs["family"] != "cheapest"]
    rows = [*shown.to_dict("records"), *([{**result.choice, "family": "recommended"}] if result.choice else [])]
    for r in rows:
        designs.add_row(
            r["family"], str(int(r["seeds"])), str(int(r["questions"])), f"{r['samples']:g}",
            f"{r['core_hours']:.3g}", f"{r['mde']:.2f}", r["worst"], style="green" if r["meets"] else None,
        )  # fmt: skip
    return [comp, designs]
