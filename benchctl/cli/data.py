"""`benchctl data pull`: download the benchmark datasets once, then work offline with `--data-dir`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def pull_command(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder to write the task files into; pass it as --data-dir (or BENCHCTL_DATA_DIR) afterwards.",
        ),
    ],
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks", help="Comma-separated tasks (default: every task with a hub dataset; see benchctl tasks)."
        ),
    ] = None,
    mirror: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Read the hub datasets from local snapshots DIR/<org>/<name> (hub layout) instead of the network.",
        ),
    ] = None,
) -> None:
    """Download each task's canonical hub dataset with `datasets` and write it as the local JSON Lines file that
    --data-dir reads (same problems and golds as loading from the hub)."""
    from benchctl.tasks.pull import pull

    names = [t.strip() for t in (tasks or "").split(",") if t.strip()]
    for pulled in pull(names, out, mirror):
        typer.echo(f"{pulled.task}: {pulled.rows} rows -> {pulled.path}")
    typer.echo(f"work offline with: --data-dir {out}")


def register(app: typer.Typer) -> None:
    """Add the `data` group (`data pull`) to the root app."""
    data = typer.Typer(help="Benchmark data: download the hub datasets into local files.", no_args_is_help=True)
    data.command("pull")(pull_command)
    app.add_typer(data, name="data")
