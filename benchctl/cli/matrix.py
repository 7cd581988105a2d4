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

RetriesOption = Annotated[
    int,
    typer.Option(
        "--retries",
        help="Runs again, from its checkpoint, of a cell that failed from outside it (worker killed, out of "
        "memory, node lost, engine start-up); a cell failing in itself (bad setting, traceback) is not retried.",
    ),
]
UntilDecided = Annotated[
    str | None,
    typer.Option(
        "--until-decided",
        help="Claims file: run seeds in waves until each claim is decided (group-sequential, O'Brien-Fleming "
        "via Lan-DeMets; docs/report.md 'Seeds until decided'); needs --max-seeds.",
    ),
]
MaxSeeds = Annotated[int | None, typer.Option("--max-seeds", help="Seeds per arm at the last wave (--until-decided).")]
WaveSeeds = Annotated[
    int, typer.Option("--wave-seeds", help="Seeds each wave after the file's own adds (--until-decided).")
]

SeedShape = Annotated[
    str,
    typer.Option(
        "--seed-shape",
        help="Per-seed values the boundary is calibrated on (--until-decided): normal, or skewed (holds the level "
        "when per-seed values are exponential-shaped, at a cost in power; docs/report.md 'Seeds until decided').",
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
    retries: RetriesOption = 2,
    until_decided: UntilDecided = None,
    max_seeds: MaxSeeds = None,
    wave_seeds: WaveSeeds = 2,
    seed_shape: SeedShape = "normal",
):
    """Train then evaluate every cell into RESULTS/runs/<cell>/. Rerunning skips finished cells, resumes
    interrupted ones from their checkpoint and runs the failed ones again. Ends with the cells left failed; exit 1
    when a cell is left failed, 130 on Ctrl-C. With --until-decided, the file's seeds are the first wave."""
    from benchctl.matrix import read_matrix, run_matrix
    from benchctl.matrix.render import print_cells, print_outcome, progress_printer

    spec = read_matrix(file)
    _warn_inert(spec)
    if dry_run:
        print_cells(spec, results)
        return

    def run(wave):  # one wave's cells (the whole file without --until-decided)
        printer = progress_printer(len(wave.cells), retries)
        return run_matrix(
            wave, results, executor, on_event=printer, address=address, report_to=report_to, retries=retries
        )

    outcome = (
        _until_decided(file, results, until_decided, max_seeds, (wave_seeds, seed_shape), run)
        if until_decided is not None or max_seeds is not None
        else run(spec)
    )
    print_outcome(outcome)
    if outcome.interrupted or outcome.failed:
        raise typer.Exit(130 if outcome.interrupted else 1)


def _until_decided(file: str, results: str, claims: str | None, max_seeds: int | None, waves: tuple, run):
    """The group-sequential run (`benchctl.matrix.waves`), printing each look; the last wave's outcome."""
    from benchctl.errors import BenchctlError
    from benchctl.matrix.render import print_look
    from benchctl.matrix.waves import run_until_decided

    if not claims or max_seeds is None:
        given, missing = (
            ("--max-seeds", "--until-decided CLAIMS") if not claims else ("--until-decided", "--max-seeds N")
        )
        raise BenchctlError(f"{given} needs {missing} (a group-sequential run names its claims file and its max seeds)")
    wave, shape = waves  # --wave-seeds, --seed-shape
    return run_until_decided(file, results, claims, max_seeds, wave, run=run, on_look=print_look, shape=shape).last


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
