"""`benchctl tasks` (list the benchmarks), `benchctl tasks show NAME` and `benchctl tasks difficulty NAME` (per-prompt
pass rates of a model, by level): formatting only."""

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


def _difficulty_table(result) -> Table:
    cfg = result.config
    title = f"{cfg.task} ({cfg.split}): pass rate per prompt, {cfg.n} samples at T={cfg.temperature:g}"
    caption = f"model {result.model}; {result.mean_tokens:.1f} generated tokens per completion (EOS included)"
    table = Table(title=title, caption=escape(caption))
    for column in ("level", "prompts", "mean pass", f"under {cfg.low:g}", f"over {cfg.high:g}"):
        table.add_column(column, justify="left" if column == "level" else "right", no_wrap=True)
    for row in result.rows:
        cells = (f"{row['mean_pass']:.3f}", f"{row['under_low']:.1%}", f"{row['over_high']:.1%}")
        table.add_row(row["level"], str(row["prompts"]), *cells)
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

    @sub.command("difficulty")
    def difficulty(
        name: Annotated[str, typer.Argument(help="task name, e.g. arith_mix (see `benchctl tasks`)")],
        model: Annotated[str, typer.Option(help="tiny-warm, tiny, smollm2-135m, or a model/run folder")] = "tiny-warm",
        n: Annotated[int, typer.Option("--n", min=1, help="samples per prompt")] = 64,
        prompts: Annotated[int, typer.Option(min=1, help="first N problems of the split")] = 256,
        split: Annotated[
            str, typer.Option(help="split measured: train (what RL trains on), test, validation")
        ] = "train",
        temperature: Annotated[float, typer.Option(help="sampling temperature (the trainer's rollouts: 1)")] = 1.0,
        max_tokens: Annotated[int | None, typer.Option(help="new tokens per sample; default: the task's")] = None,
        seed: Annotated[int, typer.Option(help="task seed and sampling seed")] = 0,
    ) -> None:
        """Per-prompt pass rates of a model on a task (n samples each, plain torch sampling), by level: mean,
        the fraction of prompts under 0.1 (hard) and over 0.9 (easy)."""
        from benchctl.lab.difficulty import DifficultyConfig, run_difficulty

        cfg = DifficultyConfig(name, model, split, prompts, n, temperature, max_tokens, seed)
        _console().print(_difficulty_table(run_difficulty(cfg)))

    app.add_typer(sub, name="tasks")
