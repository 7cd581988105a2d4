"""`benchctl ingest verl RUN_OR_LOG_DIR --out RUN`: parse options, call `benchctl.integrations.verl_ingest`."""

from __future__ import annotations

from typing import Annotated

import typer

ingest_app = typer.Typer(help="Turn another trainer's run into a benchctl run folder (eval, report, replay).")


@ingest_app.command("verl")
def verl_command(
    source: Annotated[str, typer.Argument(help="veRL output folder, or a RUN from `benchctl train --engine verl`.")],
    out: Annotated[
        str | None, typer.Option("--out", help="Run folder to write (default: the RUN the launch folder is in).")
    ] = None,
):
    """A veRL run (file-logger JSONL, rollout dumps, global_step_N/actor/huggingface) as a benchctl run folder:
    config.json, train_metrics.parquet, rollouts/, model/ (last HF checkpoint)."""
    from benchctl.integrations.verl_ingest import ingest

    done = ingest(source, out)
    model = f", model/ from {done.checkpoint}" if done.model else ", no HF checkpoint (model/ not written)"
    typer.echo(f"ingested {done.steps} steps, {done.rollout_steps} rollout dumps{model} -> {done.run}")


def register(app: typer.Typer) -> None:
    """Add the `ingest` group (verl) to the root app."""
    app.add_typer(ingest_app, name="ingest")
