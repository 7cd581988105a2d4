"""`benchctl report` and `benchctl replay`: parse options, build a config, call the library.

Library entry points: `benchctl.report.build_report(ReportConfig)`, `benchctl.replay.run_replay(ReplayConfig)`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from benchctl.cli.evaluate import _config, _print, _split

PrimaryKOpt = Annotated[int, typer.Option("--primary-k", help="k of the primary family (Holm); other k: secondary.")]
BaselineOpt = Annotated[
    str,
    typer.Option(
        "--baseline",
        help="Arm to compare against (arm, estimator_label, estimator or model); 'none' for no comparisons.",
    ),
]
GroupByOpt = Annotated[
    str | None,
    typer.Option(
        "--group-by",
        help="Comma list of run columns that define an arm (default: arm + varying columns; docs/report.md).",
    ),
]
TuningSeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--tuning-seeds", help="Seeds held apart to choose swept settings, e.g. 0,1 (default: leave-one-out)."
    ),
]
PopulationOpt = Annotated[
    str,
    typer.Option(
        "--population", help="'problems': intervals for seeds and problems like these (default); 'fixed': this set."
    ),
]


def report_command(
    ctx: typer.Context,
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="Run folders, results folders (index.parquet), or folders holding runs.", show_default=False
        ),
    ],
    out: Annotated[str | None, typer.Option("--out", help="Write report.md/.html, parquet tables, plots here.")] = None,
    baseline: BaselineOpt = "grpo",
    where: Annotated[
        list[str] | None,
        typer.Option("--where", help="Keep runs with key=value, key=v1,v2 or key!=value (repeatable)."),
    ] = None,
    group_by: GroupByOpt = None,
    tasks: Annotated[str | None, typer.Option("--tasks", help="Evaluated tasks to report (default: all).")] = None,
    k: Annotated[str | None, typer.Option("--k", help="k values to report (default: all), e.g. 1,4,16.")] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="CI level.")] = 0.95,
    alpha: Annotated[float, typer.Option("--alpha", help="Family-wise error rate (Holm).")] = 0.05,
    primary_k: PrimaryKOpt = 1,
    population: PopulationOpt = "problems",
    rliable_reps: Annotated[int, typer.Option("--rliable-reps", help="rliable stratified-bootstrap reps.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    claims: Annotated[str | None, typer.Option("--claims", help="Claims file (YAML) to test.")] = None,
    select_on: Annotated[str | None, typer.Option("--select-on", help="Validation task for swept settings.")] = None,
    tuning_seeds: TuningSeedsOpt = None,
):
    """Who beats the baseline, on which task, at which k, by how much (seed-level paired test, Holm; fewer than 3
    seeds: no claim), at what cost, and whether each run was healthy.  Method: docs/report.md."""
    from benchctl.report import ReportConfig, build_report
    from benchctl.report.config import parse_seeds
    from benchctl.results.kspec import parse_ks

    config = _config(
        ReportConfig,
        ctx,
        {"k": "ks"},
        inputs=tuple(inputs),
        where=tuple(where or ()),
        baseline=None if baseline.lower() == "none" else baseline,
        group_by=_split(group_by or ""),
        tasks=_split(tasks or ""),
        ks=parse_ks(k) if k else (),
        tuning_seeds=parse_seeds(tuning_seeds or ""),
    )
    result = build_report(config)
    for table in result.rich_tables():
        _print(table)
    for note in result.notes:
        typer.echo(f"note: {note}")
    if result.out is not None:
        typer.echo(f"report: {result.out / 'report.html'}")


def replay_command(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Training run folder (with rollouts/).", show_default=False)],
    estimators: Annotated[
        str,
        typer.Option(
            "--estimators", help="Estimators to replay, e.g. 'grpo,ha_dw(lambda_scale=1.5),a_grae(base=dr_grpo)'."
        ),
    ] = "grpo",
    out: Annotated[str | None, typer.Option("--out", help="Write replay_*.parquet and replay.png here.")] = None,
    correct_above: Annotated[float, typer.Option("--correct-above", help="Correct when reward > this.")] = 0.0,
    hard_below: Annotated[float, typer.Option("--hard-below", help="Hard prompt: group accuracy < this.")] = 0.5,
):
    """Re-score a run's logged rollouts with other estimators (state carried step by step): where each puts
    its advantage mass (correct vs wrong, hard vs easy prompts, degenerate groups).  Seconds, no GPU."""
    from benchctl.replay import ReplayConfig, run_replay

    result = run_replay(_config(ReplayConfig, ctx))
    _print(result.rich_table())
    for path in result.files:
        typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add `report` and `replay` to the root app."""
    app.command("report")(report_command)
    app.command("replay")(replay_command)
