"""The `benchctl` command line.  Parsing only: every command builds a config and calls one library function.

No torch / vLLM import happens here; heavy modules are imported inside the command that needs them.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from benchctl.errors import BenchctlError


class _OneLineErrors(TyperGroup):
    """Bad input of any kind -> one line on stderr naming the problem, exit code 2, no traceback."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        except typer.Abort:
            _fail("aborted", code=130)
        except BenchctlError as exc:
            _fail(str(exc))
        except OSError as exc:  # unwritable --out, full disk, ...: the path and the reason, one line
            _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        except typer.TyperException as exc:  # typer's (vendored click) usage errors
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()
                sys.exit(0)
            _fail(exc.format_message())
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        # CliRunner calls `main` too, but library errors raised inside a command land here first.
        try:
            return super().invoke(ctx)
        except BenchctlError as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))


def _fail(message: str, code: int = 2):
    typer.echo(f"Error: {' '.join(message.split())}", err=True)
    sys.exit(code)


app = typer.Typer(
    cls=_OneLineErrors,
    name="benchctl",
    help="Benchmark group-relative advantage estimators (GRPO, Dr.GRPO, DAPO, HA-DW, A-GRAE, AVSPO, DGPO, OAR, ...).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"benchctl {version('benchctl')}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Also show third-party logs and warnings (vLLM, torch, transformers, Triton)."
        ),
    ] = False,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="No progress bars (they are drawn on a terminal only).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Benchmark group-relative advantage estimators (GRPO, Dr.GRPO, DAPO, HA-DW, A-GRAE, AVSPO, DGPO, OAR, ...)."""
    from benchctl.quiet import cli_session

    ctx.with_resource(cli_session(verbose=verbose, progress=not no_progress))


# Each command module registers its commands on `app`; see register() in each.
from benchctl.cli import data as _data  # noqa: E402
from benchctl.cli import estimators as _estimators  # noqa: E402
from benchctl.cli import evaluate as _evaluate  # noqa: E402
from benchctl.cli import ingest as _ingest  # noqa: E402
from benchctl.cli import losses as _losses  # noqa: E402
from benchctl.cli import matrix as _matrix  # noqa: E402
from benchctl.cli import models as _models  # noqa: E402
from benchctl.cli import plan as _plan  # noqa: E402
from benchctl.cli import report as _report  # noqa: E402
from benchctl.cli import simulate as _simulate  # noqa: E402
from benchctl.cli import tasks as _tasks  # noqa: E402
from benchctl.cli import train as _train  # noqa: E402

for _module in (_estimators, _losses, _simulate, _tasks, _evaluate, _models, _train, _report, _data, _matrix, _ingest):
    _module.register(app)
_plan.register(app)  # `benchctl plan`, the design advisor


def main() -> None:
    app()
