"""A quiet command line: `benchctl eval` shows only its own output (a progress bar on a terminal, nothing on a
redirected stderr), third-party output with -v, one line for a failed engine start; --version; NO_COLOR."""

import os
import pty
import re
import subprocess
import sys
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from benchctl import quiet
from benchctl.cli import app
from benchctl.models.testing import tiny_model_fixture

tiny_model = tiny_model_fixture()
BENCHCTL = [sys.executable, "-c", "from benchctl.cli import main; main()"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|38;5;\d+)m")
LOUD_ENV = (
    "VLLM_LOGGING_LEVEL",
    "TORCH_CPP_LOG_LEVEL",
    "TRANSFORMERS_VERBOSITY",
    "PYTHONWARNINGS",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TQDM_DISABLE",
)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LOUD_ENV}
    return {**env, "COLUMNS": "100", **extra}


def _run_on_terminal(args, **env) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) with stderr on a pseudo-terminal (stdout piped)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        BENCHCTL + args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=_env(**env)
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait(timeout=600)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


def _run_redirected(args, **env) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHCTL + args, capture_output=True, text=True, env=_env(**env), timeout=600)


def _eval_args(model, out) -> list[str]:
    return [
        "eval",
        "--model",
        str(model),
        "--tasks",
        "arith",
        "--k",
        "1..2",
        "--limit",
        "4",
        "--max-tokens",
        "8",
        "--out",
        str(out),
    ]


def _lines(terminal_text: str) -> list[str]:
    plain = ANSI.sub("", terminal_text).replace("\r", "\n")
    return [line.strip() for line in plain.splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.vllm
def test_eval_on_a_terminal_prints_only_the_progress_bar_on_stderr(tiny_model, tmp_path):
    code, out, err = _run_on_terminal(_eval_args(tiny_model, tmp_path / "run"))
    assert code == 0, err
    lines = _lines(err)
    assert lines and all(line.startswith("generate ") for line in lines), lines
    assert any("4/4" in line for line in lines) and "pass@k" in out


@pytest.mark.slow
@pytest.mark.vllm
def test_eval_redirected_prints_nothing_on_stderr(tiny_model, tmp_path):
    result = _run_redirected(_eval_args(tiny_model, tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "pass@k" in result.stdout


@pytest.mark.slow
@pytest.mark.vllm
def test_verbose_shows_third_party_warnings_and_no_progress_hides_the_bar(tiny_model, tmp_path):
    code, out, err = _run_on_terminal(["-v", "--no-progress"] + _eval_args(tiny_model, tmp_path / "run"))
    assert code == 0, err
    assert "WARNING" in err  # vLLM's start-up warnings (e.g. enforce eager, chunked prefill)
    assert not any(line.startswith("generate ") for line in _lines(err))


@pytest.mark.slow
@pytest.mark.vllm
def test_failed_engine_start_is_one_stderr_line_and_nothing_else(tiny_model, tmp_path):
    broken = tmp_path / "no-weights"
    broken.mkdir()
    for path in tiny_model.glob("*.json"):
        (broken / path.name).write_bytes(path.read_bytes())
    result = _run_redirected(_eval_args(broken, tmp_path / "run"))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: could not start vLLM")


def test_version_prints_the_installed_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"benchctl {version('benchctl')}\n"


def test_no_color_turns_colours_off_on_a_terminal():
    master, slave = pty.openpty()
    runs = {}
    for no_color in ("", "1"):
        env = _env(**({"NO_COLOR": no_color} if no_color else {}))
        proc = subprocess.run(
            BENCHCTL + ["estimators", "show", "grpo"], stdout=slave, stderr=subprocess.PIPE, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        runs[no_color] = os.read(master, 1 << 20).decode("utf-8", "replace")
    os.close(slave)
    os.close(master)
    assert COLOUR.search(runs[""]) and not COLOUR.search(runs["1"])
    assert "A_i = (r_i - mean)" in ANSI.sub("", runs["1"])


def test_a_command_leaves_environment_loggers_and_settings_as_they_were():
    import logging

    before = (dict(os.environ), logging.getLogger("vllm").level, quiet.settings())
    result = CliRunner().invoke(app, ["tasks"])
    assert result.exit_code == 0, result.output
    assert (dict(os.environ), logging.getLogger("vllm").level, quiet.settings()) == before


def test_a_quiet_session_hides_third_party_warnings_but_not_benchctls(monkeypatch):
    import warnings

    monkeypatch.delenv("TORCH_CPP_LOG_LEVEL", raising=False)
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "INFO")  # the user's choice wins
    with quiet.cli_session(verbose=False, progress=True), warnings.catch_warnings(record=True) as caught:
        warnings.warn_explicit("from a library", FutureWarning, "vllm/x.py", 1, module="vllm.x")
        warnings.warn_explicit("from benchctl", UserWarning, "benchctl/x.py", 1, module="benchctl.x")
        assert (os.environ["TORCH_CPP_LOG_LEVEL"], os.environ["VLLM_LOGGING_LEVEL"]) == ("ERROR", "INFO")
    assert [str(w.message) for w in caught] == ["from benchctl"]
    assert "TORCH_CPP_LOG_LEVEL" not in os.environ
