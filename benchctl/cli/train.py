"""`benchctl train`: parse options, build a `TrainConfig` (defaults < recipe < --config file < flags), call
`benchctl.trainers.train`. Only options given on the command line count as flags (source `flag`).

Every option is generated from `TrainConfig`'s field metadata (help, default, section), so a setting is described
once, in `benchctl.trainers.config`, and every setting can be given as a flag (docs/training.md, "Settings")."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Annotated

import typer

from benchctl.trainers.config import TrainConfig

Opt = typer.Option
NO_FLAG = ("sources",)
EXTRA = {"config": (str | None, Opt("--config", help="YAML file of these settings; flags override it."))}


def _option(f: dataclasses.Field, kind: typing.Any) -> tuple[typing.Any, typing.Any]:
    """(annotation, typer.Option) of one setting: its own help plus its default, in its section's help panel."""
    meta = f.metadata
    names = meta["flags"] or (f"--{f.name.replace('_', '-')}",)
    default = "" if f.default in (None, dataclasses.MISSING) else f" (default {f.default})"
    extra = {"envvar": "BENCHCTL_DATA_DIR"} if f.name == "data_dir" else {}
    if f.name == "estimator_params":
        return list[str] | None, Opt(*names, help=f"{meta['help']}; repeatable", rich_help_panel=meta["section"])
    base = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
    if base is bool:
        names = (f"{names[0]}/--no-{names[0][2:]}",)
    text = f"{meta['help']}{default}"
    return base | None, Opt(*names, help=text, show_default=False, rich_help_panel=meta["section"], **extra)


def _parameter(name: str, annotation: typing.Any, option: typing.Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[annotation, option]
    )


def _signature() -> inspect.Signature:
    """`train_command`'s keyword options: one per `TrainConfig` field, then `--config`."""
    hints = typing.get_type_hints(TrainConfig)
    fields = [f for f in dataclasses.fields(TrainConfig) if f.name not in NO_FLAG]
    params = [_parameter(f.name, *_option(f, hints[f.name])) for f in fields]
    return inspect.Signature(params + [_parameter(k, a, o) for k, (a, o) in EXTRA.items()])


def train_command(**options: typing.Any) -> None:
    """Train a policy with an advantage estimator on a task: rollouts from vLLM, clipped policy-gradient updates,
    live diagnostics, checkpoints and exact resume. Writes a run folder that `benchctl eval --model RUN` reads."""
    config, sets = options.pop("config", None), options.pop("estimator_params", None)
    given = {k: v for k, v in options.items() if v is not None}
    _run(given, sets, config)


train_command.__signature__ = _signature()  # type: ignore[attr-defined]
train_command.__annotations__ = {p.name: p.annotation for p in train_command.__signature__.parameters.values()}


def _run(given: dict, sets: list[str] | None, config: str | None) -> None:
    """Build the config (defaults < recipe < file < flags) and train natively, or launch it with veRL."""
    from benchctl.trainers import build_config, train
    from benchctl.trainers.config import parse_set, read_config_file
    from benchctl.trainers.display import make_display
    from benchctl.trainers.plan import config_warnings, resolve

    if sets:
        given["estimator_params"] = parse_set(sets)
    cfg = build_config(read_config_file(config) if config else None, given)
    for line in config_warnings(resolve(cfg)):  # settings that cannot act in this run (also in RUN/config.json)
        typer.echo(f"warning: {line}", err=True)
    if cfg.engine == "verl":
        from benchctl.integrations.verl_launch import launch

        return _launched(launch(cfg), cfg.eval_task or cfg.task)
    result = train(cfg, display=make_display(cfg.progress, f"train {cfg.estimator} on {cfg.task}", cfg.steps))
    _summary(result, cfg.eval_task or cfg.task)
    if result.interrupted:
        raise typer.Exit(130)


def _launched(launch, task: str) -> None:
    if launch.ran:
        typer.echo(f"veRL done: {launch.steps} steps ingested -> {launch.run}")
        typer.echo(f"evaluate it: benchctl eval --model {launch.run} --tasks {task} --k 1..16")
        return
    typer.echo(f"veRL data, config and launch command written to {launch.folder}; not run here: {launch.reason}")
    typer.echo("on the cluster (veRL 0.9.1 + benchctl, from this folder or a copy of it), run:")
    typer.echo(f"  {launch.command}")
    typer.echo(f"then: benchctl ingest verl {launch.folder} --out {launch.run}")


def _summary(result, task: str) -> None:
    last = result.metrics[-1] if result.metrics else {}
    evals = {k: v for k, v in last.items() if k.startswith("eval/pass@") and not k.endswith(("_low", "_high"))}
    parts = [f"{result.steps} steps", f"reward {last.get('reward/mean', float('nan')):.3f}"]
    parts += [f"{k[5:]} {v:.3f}" for k, v in evals.items()]
    state = "stopped (checkpoint written)" if result.interrupted else "done"
    typer.echo(f"{state}: {', '.join(parts)} -> {result.run}")
    import pandas as pd

    from benchctl.report.health import INERT_FRACTION, mechanism_activity  # the report's rule, so both agree

    for name, frac in mechanism_activity(pd.DataFrame(list(result.metrics))).fractions:
        if frac < INERT_FRACTION:
            typer.echo(
                f"warning: {name} acted on {frac:.0%} of the steps (under {INERT_FRACTION:.0%}): this run trained as"
                " its base; see mechanism/*/acted in train_metrics.parquet",
                err=True,
            )
    typer.echo(f"evaluate it: benchctl eval --model {result.run} --tasks {task} --k 1..16")


def register(app: typer.Typer) -> None:
    """Add `train` to the root app."""
    app.command("train")(train_command)
