"""`benchctl tasks` (list the benchmarks) and `benchctl tasks show NAME`: formatting only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="folder with the benchmark JSON Lines files (default: $BENCHCTL_DATA_DIR)"),
]


MIN_WIDTH = 120  # [our choice] hub ids are up to 40 characters; below this rich would cut them


def _console() -> Console:
    return Console(width=max(Console().width, MIN_WIDTH))


def _table(summaries, data_dir: Path | None) -> Table:
    where = f"local files in {data_dir}" if data_dir else "local files in $BENCHCTL_DATA_DIR"
    table = Table(title="benchmark tasks", caption=f"size: counted from the {where} when found, else (known)")
    for column in ("name", "kind", "size", "hub id", "local file"):
        table.add_column(column, no_wrap=True, justify="right" if column == "size" else "left")
    for s in summaries:
        size = f"{s.size}" + ("" if s.size_source == "local" else f" ({s.size_source})")
        local = "-" if s.local_file == "-" else s.local_file + ("" if s.local_path else " (missing)")
        table.add_row(s.name, s.kind, size, s.hub_id, escape(local))
    return table


def register(app: typer.Typer) -> None:
    """Add `tasks` (list) and `tasks show NAME` to the root app."""
    sub = typer.Typer(
        help="List the benchmark tasks, or show one with [bold]benchctl tasks show NAME[/bold].",
        rich_markup_mode="rich",
        invoke_without_command=True,
    )

    @sub.callback(invoke_without_command=True)
    def listing(ctx: typer.Context, data_dir: DataDir = None) -> None:
        """List every task: kind, size (counted from the local file if found), hub id, local file."""
        if ctx.invoked_subcommand is None:
            from benchctl.tasks.catalog import describe_tasks

            _console().print(_table(describe_tasks(data_dir), data_dir))

    @sub.command("show")
    def show(
        name: Annotated[str, typer.Argument(help="task name, e.g. math500 (see `benchctl tasks`)")],
        data_dir: DataDir = None,
        index: Annotated[int, typer.Option(min=0, help="which problem to show as the example prompt")] = 0,
    ) -> None:
        """Print a task's summary and the chat prompt of one of its problems."""
        from benchctl.tasks.catalog import example_prompt

        s, prompt, gold = example_prompt(name, data_dir, index)
        console = _console()
        console.print(_table([s], data_dir))
        console.print(f"{escape(s.description)}\n{escape(s.local_path or 'hub: ' + s.hub_id)}")
        console.print(f"[bold]prompt[/bold]\n{escape(prompt)}\n[bold]gold[/bold] {escape(gold) or '-'}")

    app.add_typer(sub, name="tasks")
