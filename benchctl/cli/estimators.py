"""`benchctl estimators` (list) and `benchctl estimators show NAME`: formatting only, no numerical code."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

HELP = (
    "List the registered advantage estimators (bases and modifiers), or show one with "
    "[bold]benchctl estimators show NAME[/bold]."
)


def _format_value(value) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _listing_table(infos) -> Table:
    table = Table(title="advantage estimators", show_lines=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("kind", no_wrap=True)
    table.add_column("hyperparameters (defaults)")
    table.add_column("reference", no_wrap=True)
    for info in infos:
        params = ", ".join(f"{hp.name}={_format_value(hp.default)}" for hp in info.hyperparameters)
        table.add_row(info.name, info.kind, escape(params or "-"), info.reference)
    return table


def _show(info, est) -> None:
    console = Console()
    console.print(f"[bold]{info.name}[/bold] ({info.kind}, {info.reference}): {escape(info.description)}")
    console.print(f"formula: {escape(info.formula)}")
    console.print(f"source: {escape(info.source)}")
    agg = info.loss_agg or f"same as the base ({est.loss_agg} with base={est.base.name})"
    console.print(f"default loss aggregation: {agg}")
    if info.token_scores:
        console.print(f"token-level: needs '{info.token_scores}' importance scores (Estimator.token_advantages)")
    table = Table(show_lines=False)
    for column in ("hyperparameter", "default", "value", "help"):
        table.add_column(column, no_wrap=column != "help")
    for hp in info.hyperparameters:
        value = est.base.label if hp.name == "base" else getattr(est.params, hp.name)
        table.add_row(hp.name, _format_value(hp.default), _format_value(value), escape(hp.help))
    console.print(table)
    for note in info.notes:
        console.print(f"- {escape(note)}")


def _our_choices() -> str:
    from benchctl.estimators import list_estimators

    lines = [f"{info.name}: {' | '.join(info.choices)}" for info in list_estimators() if info.choices]
    return "\n\n".join(escape(line) for line in lines)


def register(app: typer.Typer) -> None:
    """Add `estimators` (list) and `estimators show NAME` to the root app."""
    sub = typer.Typer(
        help=f"{HELP}\n\n[bold]Decisions the papers leave open:[/bold]\n\n{_our_choices()}",
        rich_markup_mode="rich",
        invoke_without_command=True,
    )

    @sub.callback(invoke_without_command=True)
    def listing(ctx: typer.Context) -> None:
        """List every registered estimator: name, kind, hyperparameter defaults, reference."""
        if ctx.invoked_subcommand is None:
            from benchctl.estimators import list_estimators

            Console().print(_listing_table(list_estimators()))

    @sub.command("show")
    def show(
        name: Annotated[str, typer.Argument(help="estimator name, e.g. ha_dw (see `benchctl estimators`)")],
        base: Annotated[Optional[str], typer.Option(help="base estimator of a modifier (default grpo)")] = None,
        set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a hyperparameter, KEY=VALUE")] = None,
    ) -> None:
        """Print an estimator's formula, defaults, hyperparameter help, loss aggregation and 'our choice' notes."""
        from benchctl.estimators import estimator_info
        from benchctl.estimators.settings import build_estimator

        _show(estimator_info(name), build_estimator(name, set_ or (), base=base))

    app.add_typer(sub, name="estimators")
