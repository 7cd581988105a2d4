"""`benchctl estimators` (list) and `benchctl estimators show NAME`: formatting only, no numerical code."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchctl.cli.markdown import cell, code, format_value

HELP = (
    "List the registered advantage estimators (bases and modifiers), or show one with "
    "[bold]benchctl estimators show NAME[/bold]."
)


def _listing_table(infos) -> Table:
    table = Table(title="advantage estimators", show_lines=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("kind", no_wrap=True)
    table.add_column("hyperparameters (defaults)")
    table.add_column("reference", no_wrap=True)
    for info in infos:
        params = ", ".join(f"{hp.name}={format_value(hp.default)}" for hp in info.hyperparameters)
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
    if info.mechanism:
        console.print(f"acted (mechanism/{info.name}/acted, per step): {escape(info.mechanism)}")
    table = Table(show_lines=False)
    for column in ("hyperparameter", "default", "value", "help"):
        table.add_column(column, no_wrap=column != "help")
    for hp in info.hyperparameters:
        value = est.base.label if hp.name == "base" else getattr(est.params, hp.name)
        table.add_row(hp.name, format_value(hp.default), format_value(value), escape(hp.help))
    console.print(table)
    for note in info.notes:
        console.print(f"- {escape(note)}")


MARKDOWN_HEADER = """# Advantage estimators

Generated from the estimator registry (docstrings and parameter dataclasses) by
`benchctl estimators --markdown > docs/estimators.md`; do not edit by hand: `tests/cli/test_estimators_docs.py`
fails when this file differs from what the command prints. Every formula cites the paper and equation it
implements; "[our choice]" marks a decision the papers left open, and "Deviations" where we differ from a paper or
its released code. Modifiers (`kind` modifier) reshape the advantage of any base estimator (`base=NAME`, default
grpo) and use the base's loss aggregation. "contract.md §N" names a section of [contract.md](contract.md), the
estimator contract and its mathematics; "estimators-sources §N" names the project's source notes, which these
docstrings restate. "Acted" is the per-step evidence that an estimator's mechanism did something
(`mechanism/<name>/acted` in the run's metrics; the report marks an arm under 5% of steps inert).

## Names that collide

- **BNPO.** TRL 1.16's `loss_type="bnpo"` is a batch token normaliser of the clipped loss (see
  [losses.md](losses.md)); `bnpo` here is the BNPO paper's estimator (arXiv:2506.02864: a Beta-distribution
  normalisation of the advantage).
- **Pass@k.** veRL 0.9.1's `grpo_passk` advantage gives only the best rollout of a group a non-zero advantage
  (r_max - r_second_max, after arXiv:2503.19595); it is not the Pass@k Training paper (arXiv:2508.10751), which
  `passk` here implements (the analytic advantage of the pass@k reward over k-subsets).
- **DGPO.** `dgpo` here is MathForge's difficulty-aware group policy optimisation (arXiv:2601.20614); arXiv
  2603.14389 also calls its method DGPO and is a different algorithm, not registered here.
"""


def _markdown_section(info) -> list[str]:
    lines = [
        f"## {info.name}",
        "",
        f"{info.description}",
        "",
        f"- **Kind:** {info.kind}",
        f"- **Formula:** {code(info.formula)}",
        f"- **Reference:** {' '.join(info.source.split())}",
        f"- **Default loss aggregation:** {info.loss_agg or 'same as the base estimator'}",
    ]
    if info.token_scores:
        lines.append(f"- **Token-level:** needs '{info.token_scores}' importance scores (`Estimator.token_advantages`)")
    if info.mechanism:
        lines.append(f"- **Acted** (`mechanism/{info.name}/acted`, logged every step): {info.mechanism}")
    lines += ["", "| hyperparameter | default | help |", "|---|---|---|"]
    lines += [f"| `{hp.name}` | `{format_value(hp.default)}` | {cell(hp.help)} |" for hp in info.hyperparameters]
    if info.notes:
        lines += ["", "Choices and deviations:", ""] + [f"- {' '.join(note.split())}" for note in info.notes]
    return lines + [""]


def markdown(infos) -> str:
    """docs/estimators.md: an index table, then one section per estimator."""
    lines = [MARKDOWN_HEADER, "| name | kind | reference | hyperparameters (defaults) |", "|---|---|---|---|"]
    for info in infos:
        params = ", ".join(f"{hp.name}={format_value(hp.default)}" for hp in info.hyperparameters)
        lines.append(f"| [`{info.name}`](#{info.name}) | {info.kind} | {info.reference} | {cell(params or '-')} |")
    lines.append("")
    for info in infos:
        lines += _markdown_section(info)
    return "\n".join(lines).rstrip() + "\n"


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
    def listing(
        ctx: typer.Context,
        as_markdown: Annotated[
            bool,
            typer.Option(
                "--markdown",
                help="Print every estimator as Markdown (formula, defaults, reference, choices): docs/estimators.md.",
            ),
        ] = False,
    ) -> None:
        """List every registered estimator: name, kind, hyperparameter defaults, reference."""
        if ctx.invoked_subcommand is None:
            from benchctl.estimators import list_estimators

            if as_markdown:
                typer.echo(markdown(list_estimators()), nl=False)
            else:
                Console().print(_listing_table(list_estimators()))

    @sub.command("show")
    def show(
        name: Annotated[str, typer.Argument(help="estimator name, e.g. ha_dw (see `benchctl estimators`)")],
        base: Annotated[str | None, typer.Option(help="base estimator of a modifier (default grpo)")] = None,
        set_: Annotated[list[str] | None, typer.Option("--set", help="override a hyperparameter, KEY=VALUE")] = None,
    ) -> None:
        """Print an estimator's formula, defaults, hyperparameter help, loss aggregation and 'our choice' notes."""
        from benchctl.estimators import estimator_info
        from benchctl.estimators.settings import build_estimator

        _show(estimator_info(name), build_estimator(name, set_ or (), base=base))

    app.add_typer(sub, name="estimators")
