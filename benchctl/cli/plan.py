"""`benchctl plan`: parse options, build a PlanConfig, call `benchctl.report.design_plan.build_plan`."""

from __future__ import annotations

from typing import Annotated

import typer

from benchctl.cli.evaluate import _config, _print, _split
from benchctl.cli.report import BaselineOpt, PopulationOpt, PrimaryKOpt

CountsOpt = Annotated[str | None, typer.Option(help="Comma list of counts for this axis of the grid (default: wide).")]


def plan_command(
    ctx: typer.Context,
    inputs: Annotated[
        list[str],
        typer.Argument(help="The pilot: a finished matrix's results folder, or run folders.", show_default=False),
    ],
    target_mde: Annotated[
        float, typer.Option("--target-mde", help="mde to reach for every comparison (points).")
    ] = 3.0,
    budget: Annotated[float | None, typer.Option("--budget", help="Core-hours the design may cost.")] = None,
    baseline: BaselineOpt = "grpo",
    where: Annotated[list[str] | None, typer.Option("--where", help="Keep runs with key=value (repeatable).")] = None,
    tasks: Annotated[str | None, typer.Option("--tasks", help="Evaluated tasks to plan for (default: all).")] = None,
    seeds: CountsOpt = None,
    questions: CountsOpt = None,
    samples: CountsOpt = None,
    seed_bound: Annotated[
        float,
        typer.Option("--seed-bound", help="Plan with the seed variance at this upper confidence limit (0: none)."),
    ] = 0.0,
    cores: Annotated[float, typer.Option("--cores", help="Cores one cell holds (core-hours = hours x cores).")] = 1.0,
    alpha: Annotated[float, typer.Option("--alpha", help="Family-wise error rate (as in benchctl report).")] = 0.05,
    primary_k: PrimaryKOpt = 1,
    population: PopulationOpt = "problems",
    out: Annotated[str | None, typer.Option("--out", help="Write plan_*.parquet, plan.json and plan.png here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON instead of tables.")] = False,
):
    """How many seeds, held-out questions and samples per question reach --target-mde for every comparison, at the
    fewest core-hours: variance components and cell cost measured on a finished pilot matrix.  docs/report.md."""
    import json

    from benchctl.report.design_plan import PlanConfig, build_plan, parse_counts
    from benchctl.report.design_plot import plan_json, rich_tables

    config = _config(
        PlanConfig,
        ctx,
        inputs=tuple(inputs),
        where=tuple(where or ()),
        tasks=_split(tasks or ""),
        **{k: parse_counts(k, ctx.params[k]) for k in ("seeds", "questions", "samples")},
    )
    result = build_plan(config)
    if config.as_json:
        typer.echo(json.dumps(plan_json(result), default=str))
        return
    for table in rich_tables(result):
        _print(table)
    typer.echo(result.message)
    for path in result.files:
        typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add `plan` to the root app."""
    app.command("plan")(plan_command)
