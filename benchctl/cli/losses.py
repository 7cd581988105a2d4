"""`benchctl losses` (list, `--json`, `--markdown`) and `benchctl losses show NAME`: formatting only, no torch here."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchctl.cli.markdown import cell, code, format_value

HELP = (
    "List the registered policy losses (the objective an advantage is trained with), or show one with "
    "[bold]benchctl losses show NAME[/bold]."
)

ESTIMATORS = "the estimator's"  # a loss without its own aggregation uses the estimator's / recipe's


def _params(info) -> str:
    return ", ".join(f"{hp.name}={format_value(hp.default)}" for hp in info.hyperparameters)


def _listing_table(infos) -> Table:
    table = Table(title="policy losses", show_lines=False)
    for column in ("name", "aggregation", "hyperparameters (defaults)", "reference"):
        table.add_column(
            column, no_wrap=column != "hyperparameters (defaults)", style="bold" if column == "name" else None
        )
    for info in infos:
        table.add_row(info.name, info.loss_agg or ESTIMATORS, escape(_params(info) or "-"), info.reference)
    return table


def _show(info, loss) -> None:
    console = Console()
    console.print(f"[bold]{info.name}[/bold] ({info.reference}): {escape(info.description)}")
    console.print(f"formula: {escape(info.formula)}")
    console.print(f"source: {escape(info.source)}")
    console.print(f"default loss aggregation: {info.loss_agg or ESTIMATORS}")
    console.print(
        f"acts with one update per batch: {'no (gradient = gpg on-policy)' if info.inert_on_policy else 'yes'}"
    )
    table = Table(show_lines=False)
    for column in ("hyperparameter", "default", "value", "help"):
        table.add_column(column, no_wrap=column != "help")
    for hp in info.hyperparameters:
        table.add_row(hp.name, format_value(hp.default), format_value(getattr(loss.params, hp.name)), escape(hp.help))
    console.print(table)
    for note in info.notes:
        console.print(f"- {escape(note)}")


def as_json(infos) -> str:
    """Every loss as a JSON list (name, description, reference, hyperparameters, loss_agg, formula, notes)."""
    return json.dumps([dataclasses.asdict(info) for info in infos], indent=2) + "\n"


MARKDOWN_HEADER = """# Policy losses

Generated from the loss registry (docstrings and parameter dataclasses) by
`benchctl losses --markdown > docs/losses.md`; do not edit by hand: `tests/losses/test_losses_docs.py` fails when
this file differs from what the command prints. A loss is the objective the advantages are trained with: a pure
function `(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params) -> (loss, metrics)` over
(N, T) tensors, aggregated by a loss aggregation of the estimator specification (§6: token-mean,
seq-mean-token-mean, seq-mean-token-sum-norm, token-mean-nondegenerate). "Aggregation" below is the one the
loss's paper uses; "the estimator's" means the loss leaves it to the estimator or recipe. Every loss whose
"acts with one update per batch" is no has, at pi = pi_old, the gradient of plain policy gradient (`gpg`): its
clip, gate or mask acts only when a rollout batch is used for several optimizer steps. Each loss equals veRL
0.9.1's or TRL 1.16's implementation, imported in tests (`tests/integrations/verl/test_losses_vs_verl.py`,
`tests/losses/test_losses_vs_trl.py`), except where "Deviations" says otherwise.

## Names that mean something else elsewhere

- **TRL's `loss_type` values `grpo`, `bnpo`, `dr_grpo`, `dapo`** are one loss, the PPO clip (`ppo_clip` here),
  with four normalisers: `grpo` = seq-mean-token-mean, `bnpo` = token-mean over the local batch, `dr_grpo` =
  seq-mean-token-sum-norm with `max_completion_length`, `dapo` = token-mean over the accumulated batch. TRL's
  `bnpo` is a batch token normaliser, **not the BNPO paper** (arXiv:2506.02864, Beta Normalization Policy
  Optimization, an advantage normalisation: benchctl's `bnpo` estimator).
- **veRL's `grpo_passk`** advantage estimator gives only the best response of a group a non-zero advantage
  (r_max - r_second, arXiv:2503.19595); it is **not the Pass@k Training paper** (arXiv:2508.10751), whose
  analytical pass@k advantage is benchctl's `passk` estimator.
- **GSPO and GSPO-token.** veRL 0.9.1's `gspo` loss is the GSPO paper's GSPO-token: each token carries its own
  gradient scaled by the detached sequence ratio (`gspo_token` here). TRL's GSPO (`importance_sampling_level=
  "sequence"`) sends the whole sequence ratio's gradient to every token (`gspo` here). With advantages constant
  over a response (outcome rewards) the two are equal in value and gradient; with token-varying advantages (OAR)
  or token weights they differ, and the tests show both.
- **veRL's `vanilla`** is `ppo_clip` with dual-clip on by default (`clip_ratio_c` = 3.0; `c` here, off by
  default); **TRL's `delta`** (INTELLECT-2's two-sided clip) is the same dual-clip, `c = delta`.
- **veRL's `geo_mean`** is `gmpo`. **veRL's `bypass_mode`** is not a loss but the rollout correction applied
  inside one (`benchctl train --rollout-correction`). **TRL's CISPO `epsilon_high`** caps the ratio itself:
  TRL `epsilon_high = E` is `cispo(clip_high=E-1)` here.
"""


def _markdown_section(info) -> list[str]:
    lines = [
        f"## {info.name}",
        "",
        f"{info.description}",
        "",
        f"- **Formula:** {code(info.formula)}",
        f"- **Reference:** {' '.join(info.source.split())}",
        f"- **Aggregation:** {info.loss_agg or ESTIMATORS}",
        f"- **Acts with one update per batch:** {'no' if info.inert_on_policy else 'yes'}",
        "",
        "| hyperparameter | default | help |",
        "|---|---|---|",
    ]
    lines += [f"| `{hp.name}` | `{format_value(hp.default)}` | {cell(hp.help)} |" for hp in info.hyperparameters]
    if info.notes:
        lines += ["", "Choices and deviations:", ""] + [f"- {' '.join(note.split())}" for note in info.notes]
    return lines + [""]


def markdown(infos) -> str:
    """docs/losses.md: the header (with the name collisions), an index table, then one section per loss."""
    lines = [MARKDOWN_HEADER, "## Index", "", "| name | reference | aggregation | hyperparameters (defaults) |"]
    lines.append("|---|---|---|---|")
    for info in infos:
        agg = info.loss_agg or ESTIMATORS
        lines.append(f"| [`{info.name}`](#{info.name}) | {info.reference} | {agg} | {cell(_params(info) or '-')} |")
    lines.append("")
    for info in infos:
        lines += _markdown_section(info)
    return "\n".join(lines).rstrip() + "\n"


def register(app: typer.Typer) -> None:
    """Add `losses` (list) and `losses show NAME` to the root app."""
    sub = typer.Typer(help=HELP, rich_markup_mode="rich", invoke_without_command=True)

    @sub.callback(invoke_without_command=True)
    def listing(
        ctx: typer.Context,
        as_json_: Annotated[bool, typer.Option("--json", help="Print every loss as JSON.")] = False,
        as_markdown: Annotated[
            bool, typer.Option("--markdown", help="Print every loss as Markdown: docs/losses.md.")
        ] = False,
    ) -> None:
        """List every registered policy loss: name, aggregation, hyperparameter defaults, reference."""
        if ctx.invoked_subcommand is None:
            from benchctl.losses import list_losses

            infos = list_losses()
            if as_json_ or as_markdown:
                typer.echo(as_json(infos) if as_json_ else markdown(infos), nl=False)
            else:
                Console().print(_listing_table(infos))

    @sub.command("show")
    def show(name: Annotated[str, typer.Argument(help="loss name, e.g. ppo_clip, or NAME(key=value,...)")]) -> None:
        """Print a loss's formula, defaults, hyperparameter help, aggregation and 'our choice' notes."""
        from benchctl.losses import loss_info, parse_loss

        loss = parse_loss(name)
        _show(loss_info(loss.name), loss)

    app.add_typer(sub, name="losses")
