"""`benchctl eval`, `benchctl grade`, `benchctl augment mqr`: parse options, build a config, call the library.

Library entry points: `benchctl.evaluation.run_eval` / `run_grade`, `benchctl.augment.run_mqr`.  Heavy imports
(pyarrow, the engine) happen inside the commands.  Each config records where every value came from
(`flag` / `env` / `default`, style.md item 11), read from click's parameter sources.
"""

from __future__ import annotations

from typing import Annotated

import click
import typer

_SOURCE = {
    "COMMANDLINE": "flag",
    "ENVIRONMENT": "env",
    "DEFAULT": "default",
    "DEFAULT_MAP": "default",
    "PROMPT": "flag",
}
_DATA_DIR_HELP = "Folder of local benchmark files (shared/benchmarks schema); else $BENCHCTL_DATA_DIR, else the hub."

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        help="Model name (tiny, tiny-warm, smollm2-135m), HF model folder, hub id (org/name), or benchctl run "
        "folder (uses RUN/model/, else RUN/checkpoints/latest).",
    ),
]
DataDirOpt = Annotated[str | None, typer.Option("--data-dir", envvar="BENCHCTL_DATA_DIR", help=_DATA_DIR_HELP)]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Discard what --out holds from a different config.")]
ResamplesOpt = Annotated[int, typer.Option("--resamples", min=1, help="Bootstrap resamples for the 95% CIs.")]
WorkersOpt = Annotated[int | None, typer.Option("--grade-workers", min=1, help="Grader processes.")]
TimeoutOpt = Annotated[float, typer.Option("--grade-timeout", min=0.1, help="Seconds per graded item.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Sampling seed (and bootstrap seed).")]
TempOpt = Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature.")]
TopPOpt = Annotated[float, typer.Option("--top-p", min=0.0, max=1.0, help="Nucleus sampling top-p.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N problems.")]
MaxLenOpt = Annotated[int | None, typer.Option("--max-model-len", min=1, help="Engine context length.")]


def _config(cls, ctx: click.Context, renames: dict | None = None, **converted):
    """cls(**params) with CLI names mapped to field names, converted values, and a source per field."""
    renames = renames or {}
    values = {renames.get(k, k): v for k, v in ctx.params.items()}
    values.update(converted)
    sources = {renames.get(k, k): _SOURCE.get(ctx.get_parameter_source(k).name, "flag") for k in ctx.params}
    return cls(**values, sources=sources)


def _split(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _print(renderable) -> None:
    import sys

    from rich.console import Console

    # Files and pipes get the whole table (rich would assume 80 columns and cut cells) [our choice].
    Console(width=None if sys.stdout.isatty() else 160).print(renderable)


def eval_command(
    ctx: typer.Context,
    model: ModelOpt,
    tasks: Annotated[str, typer.Option("--tasks", help="Comma-separated task names, e.g. math500,aime24.")],
    k: Annotated[str, typer.Option("--k", help="k values: 1..256 (powers of two), 1,5,10, or a mix.")] = "1",
    n: Annotated[int | None, typer.Option("--n", min=1, help="Samples per problem (default: largest k).")] = None,
    temperature: TempOpt = 0.6,
    top_p: TopPOpt = 0.95,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Max new tokens per sample.")] = 4096,
    seed: SeedOpt = 0,
    limit: LimitOpt = None,
    data_dir: DataDirOpt = None,
    out: Annotated[str | None, typer.Option("--out", help="Run folder (default: results/eval/<model-name>).")] = None,
    overwrite: OverwriteOpt = False,
    max_model_len: MaxLenOpt = None,
    resamples: ResamplesOpt = 1000,
    grade_workers: WorkersOpt = None,
    grade_timeout: TimeoutOpt = 5.0,
):
    """Sample n completions per problem, grade them, and report unbiased pass@k, maj@k and mean@n.

    Defaults follow A-GRAE's evaluation (temperature 0.6, top-p 0.95, 4096 new tokens); reruns resume.
    """
    from benchctl.evaluation import EvalConfig, parse_ks, run_eval

    config = _config(EvalConfig, ctx, {"k": "ks"}, ks=parse_ks(k), tasks=_split(tasks))
    _print(run_eval(config).rich_table())


def grade_command(
    ctx: typer.Context,
    task: Annotated[str, typer.Option("--task", help="Task whose problems and grader to use.")],
    samples: Annotated[str, typer.Option("--samples", help="JSON Lines: {problem_id, completion} per line.")],
    out: Annotated[str, typer.Option("--out", help="Output folder (same tables as benchctl eval).")],
    k: Annotated[str | None, typer.Option("--k", help="k values (default: powers of two <= min n).")] = None,
    data_dir: DataDirOpt = None,
    overwrite: OverwriteOpt = False,
    resamples: ResamplesOpt = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    grade_workers: WorkersOpt = None,
    grade_timeout: TimeoutOpt = 5.0,
):
    """Grade completions produced elsewhere with benchctl's graders; pass@k only for k <= min samples/problem."""
    from benchctl.evaluation import GradeConfig, parse_ks, run_grade

    config = _config(GradeConfig, ctx, {"k": "ks"}, ks=parse_ks(k) if k is not None else None)
    _print(run_grade(config).rich_table())


def mqr_command(
    ctx: typer.Context,
    model: ModelOpt,
    out: Annotated[
        str,
        typer.Option(
            "--out",
            help="Output task file (.jsonl); name it math_train.jsonl in a folder to train on it with --data-dir.",
        ),
    ],
    task: Annotated[str, typer.Option("--task", help="Math task to reformulate.")] = "math_train",
    aspects: Annotated[
        str, typer.Option("--aspects", help="Comma list of background,term,subproblem.")
    ] = "background,term,subproblem",
    limit: LimitOpt = None,
    data_dir: DataDirOpt = None,
    keep_original: Annotated[bool, typer.Option(help="Also write the original rows (MathForge's 4x set).")] = True,
    temperature: TempOpt = 0.7,
    top_p: TopPOpt = 0.95,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Max new tokens per rewrite.")] = 1024,
    seed: SeedOpt = 0,
    max_model_len: MaxLenOpt = None,
):
    """MathForge MQR: rewrite each question (background / new term / sub-problem), keeping its gold answer."""
    from benchctl.augment import MQRConfig, run_mqr

    config = _config(MQRConfig, ctx, aspects=_split(aspects))
    _print(run_mqr(config).rich_table())


def register(app: typer.Typer) -> None:
    """Add `eval`, `grade` and the `augment` group (`augment mqr`) to the root app."""
    app.command("eval")(eval_command)
    app.command("grade")(grade_command)
    augment = typer.Typer(help="Training-data augmentation (MathForge MQR).", no_args_is_help=True)
    augment.command("mqr")(mqr_command)
    app.add_typer(augment, name="augment")
