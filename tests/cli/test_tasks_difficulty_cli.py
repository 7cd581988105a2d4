"""`benchctl tasks difficulty` refuses bad input in one line, exit 2, before loading any model."""

import pytest
from typer.testing import CliRunner

from benchctl.cli import app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "unknown task 'nope'; choose one of:"),
        (["arith_mix", "--split", "dev"], "choose one of: train, test, validation"),
        (["math500", "--split", "train"], "has no split option"),
        (["arith_mix", "--n", "0"], "--n"),
    ],
)
def test_bad_difficulty_input_is_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(app, ["tasks", "difficulty", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
