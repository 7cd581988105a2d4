"""`benchctl matrix run FILE.yaml` / `benchctl matrix status FILE.yaml`: parse options, call `benchctl.matrix`."""

from __future__ import annotations

from typing import Annotated

import typer

Results = Annotated[
    str, typer.Option("--results", help="Folder for the cells (runs/<cell>/), index.parquet and the report.")
]
MatrixFile = Annotated[
    str,
    typer.Argument(
        help="Matrix YAML (models, task, estimators with grids, recipes, group_sizes, seeds, train, eval).",
        show_default=False,
    ),
]

matrix_app = typer.Typer(
    help="Run a (model x estimator grid x recipe x G x seed) matrix of training runs, "
    "resumably, each evaluated; RESULTS/index.parquet lists them.",
    no_args_is_help=True,
)


@matrix_app.command("run")
def run_command(
    file: MatrixFile,
    results: Results = "results",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the cells and their run folders; run nothing.")
    ] = False,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="How cells run: serial (one after another, one "
            "engine start) or ray (one Ray task per cell, one GPU each where "
            "there are GPUs).",
        ),
    ] = "serial",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray cluster address (--executor ray); default: a local cluster for this command."
        ),
    ] = None,
    report_to: Annotated[
        str | None,
        typer.Option(
            "--report-to", help="Each cell's trackers: none | tensorboard,wandb,trackio (default: the file's)."
        ),
    ] = None,
    retries: Annotated[
        int,
        typer.Option(
            "--retries",
            help="Runs again, from its checkpoint, of a cell that failed from outside it (worker killed, out of "
            "memory, node lost, engine start-up); a cell failing in itself (bad setting, traceback) is not retried.",
        ),
    ] = 2,
):
    """Train then evaluate every cell into RESULTS/runs/<cell>/. Rerunning skips finished cells, resumes
    interrupted ones from their checkpoint and runs the failed ones again. Ends with the cells left failed; exit 1
    when a cell is left failed, 130 on Ctrl-C."""
    from benchctl.matrix import read_matrix, run_matrix
    from benchctl.matrix.render import print_cells, print_outcome, progress_printer

    spec = read_matrix(file)
    _warn_inert(spec)
    if dry_run:
        print_cells(spec, results)
        return
    outcome = run_matrix(
        spec,
        results,
        executor=executor,
        on_event=progress_printer(len(spec.cells), retries),
        address=address,
        report_to=report_to,
        retries=retries,
    )
    print_outcome(outcome)
    if outcome.interrupted or outcome.failed:
        raise typer.Exit(130 if outcome.interrupted else 1)


def _warn_inert(spec) -> None:
    """One stderr line per cell setting that cannot act (void combinations, clips without off-policy steps)."""
    from benchctl.trainers import build_config
    from benchctl.trainers.plan import config_warnings, resolve

    for cell in spec.cells:
        for line in config_warnings(resolve(build_config(flag_values=cell.train_values()))):
            typer.echo(f"warning: {cell.name}: {line}", err=True)


@matrix_app.command("status")
def status_command(file: MatrixFile, results: Results = "results"):
    """Each cell's state (index status, latest checkpoint step, final pass@k, failure reason). Reads only."""
    from benchctl.matrix import matrix_status, read_matrix
    from benchctl.matrix.render import print_status

    print_status(matrix_status(read_matrix(file), results))


def register(app: typer.Typer) -> None:
    """Add the `matrix` group (run, status) to the root app."""
    app.add_typer(matrix_app, name="matrix")
