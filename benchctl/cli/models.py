"""`benchctl tiny-model`: build the embedded default model (a char-level Qwen2 SFT'ed on `arith`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchctl.models.tiny import TinyModelConfig

_DEFAULTS = TinyModelConfig()


def tiny_model(
    out: Annotated[Path, typer.Option(help="folder to write the HF-format model into")] = Path("results/models/tiny"),
    sft_steps: Annotated[
        int, typer.Option(min=0, help="SFT optimizer steps on arith (0 = random init)")
    ] = _DEFAULTS.sft_steps,
    seed: Annotated[int, typer.Option(help="seed for the initial weights and the SFT data order")] = _DEFAULTS.seed,
    overwrite: Annotated[bool, typer.Option(help="replace an existing folder")] = False,
) -> None:
    """Build the embedded default model: ~0.8M-parameter Qwen2, character tokenizer, SFT on `arith` (CPU, ~1 min)."""
    from benchctl.models.cache import export_tiny_model

    path = export_tiny_model(out, overwrite=overwrite, sft_steps=sft_steps, seed=seed)
    typer.echo(f"tiny model written to {path}")


def register(app: typer.Typer) -> None:
    """Add `tiny-model` to the root app."""
    app.command("tiny-model")(tiny_model)
