"""The root CLI turns every kind of bad input into one stderr line and exit code 2."""

import subprocess
import sys

import typer
from typer.testing import CliRunner

from benchctl.cli import _OneLineErrors
from benchctl.errors import BenchctlError, UnknownNameError, check_range


def _app() -> typer.Typer:
    app = typer.Typer(cls=_OneLineErrors, pretty_exceptions_enable=False)

    @app.command()
    def pick(name: str, size: int = typer.Option(1, min=1)):
        if name != "ok":
            raise UnknownNameError("thing", name, ["ok", "fine"])
        check_range("size", size, 1, 10)

    @app.command()
    def other():
        pass

    return app


def _run(args):
    return CliRunner().invoke(_app(), args)


def test_library_error_is_one_line_exit_2_without_traceback():
    result = _run(["pick", "nope"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines == ["Error: unknown thing 'nope'; choose one of: fine, ok"]
    assert "Traceback" not in result.output


def test_out_of_range_value_names_the_valid_range():
    result = _run(["pick", "ok", "--size", "11"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: size=11 is out of range; valid: [1, 10]"


def test_click_usage_error_is_one_line_exit_2():
    result = _run(["pick", "ok", "--size", "zero"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--size" in result.stderr


def test_unknown_command_lists_nothing_but_one_line():
    result = _run(["nosuch"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_benchctl_error_is_a_value_error():
    assert issubclass(BenchctlError, ValueError)


def test_cli_import_pulls_in_no_torch_or_vllm():
    code = "import sys, benchctl.cli; print(sorted(m for m in ('torch','vllm','math_verify') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
