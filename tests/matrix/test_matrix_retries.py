"""A matrix survives a cell's failure: a failure from outside the cell (its worker killed, memory, node, engine
start-up) runs the cell again from its checkpoint, at most `--retries` times; a failure in the cell (an invalid
setting, a traceback) is not run again; `matrix run` ends with the cells left failed and exits 1."""

import signal
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError, EngineStartError, KilledError
from benchctl.matrix import parse_matrix, run_matrix
from benchctl.matrix.failure import exit_status_cause, outside_cause
from benchctl.matrix.outcome import CellOutcome
from benchctl.matrix.render import failure_text
from benchctl.matrix.runner import DEFAULT_RETRIES, Retries, index_reason
from benchctl.results.index import read_index


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:  # noqa: BLE001 - the chained exception itself is the test's input
        return exc


def test_outside_failures_are_told_from_failures_in_the_cell_by_their_cause():
    ray_exceptions = pytest.importorskip("ray.exceptions")
    assert outside_cause(ray_exceptions.WorkerCrashedError()) == "worker died"
    assert outside_cause(ray_exceptions.OutOfMemoryError("Task was killed due to the node running low on memory")) == (
        "out of memory"
    )
    assert outside_cause(ray_exceptions.NodeDiedError("node lost")) == "node lost"
    assert outside_cause(MemoryError()) == "out of memory"
    assert outside_cause(BrokenProcessPool("a worker died")) == "worker died"
    assert outside_cause(EngineStartError("could not start vLLM on model 'tiny': RuntimeError: ...")) == (
        "engine start-up"
    )
    assert outside_cause(KilledError("veRL exited with status -9 (killed by SIGKILL)")) == "killed by a signal"
    # the cause anywhere in the chain: a benchctl error raised while memory ran out is still memory
    assert outside_cause(_raised_from(BenchctlError("step 3 failed"), MemoryError())) == "out of memory"
    # in the cell: a bad setting, a traceback in benchctl, a file that is not there
    assert outside_cause(BenchctlError("lr=-1 is out of range; valid: (0, inf)")) is None
    assert outside_cause(KeyError("reward")) is None
    assert outside_cause(OSError("config.json is not a valid JSON file")) is None
    assert outside_cause(_raised_from(ValueError("bad shape"), KeyError("x"))) is None


def test_a_child_ended_by_sigkill_is_an_outside_failure_and_a_plain_error_exit_is_not():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child.send_signal(signal.SIGKILL)
    assert exit_status_cause(child.wait(timeout=30)) == "killed by SIGKILL"
    assert exit_status_cause(137) == "killed by SIGKILL"  # as a shell reports it
    assert exit_status_cause(143) == "killed by SIGTERM"
    failed = subprocess.run([sys.executable, "-c", "raise SystemExit(1)"], check=False)
    assert exit_status_cause(failed.returncode) is None
    assert exit_status_cause(2) is None


def test_a_cell_failing_from_outside_runs_again_at_most_retries_times_and_one_failing_in_itself_never(tmp_path):
    cell, other = parse_matrix({"estimators": {"grpo": {}, "dr_grpo": {}}, "group_sizes": [4]}).cells
    events = []
    book = Retries(tmp_path, lambda kind, c, o: events.append((kind, c.name, o and o.attempts)), retries=2)
    died = CellOutcome(cell.name, "failed", "ray task failed: The worker died unexpectedly", outside="worker died")
    for _ in range(3):
        book.on_start(cell)
        book.on_done(cell, died)
    book.on_start(other)
    book.on_done(other, CellOutcome(other.name, "failed", "KeyError: 'reward'"))
    assert events == [
        ("start", cell.name, None),
        ("again", cell.name, 1),
        ("retry", cell.name, 1),
        ("again", cell.name, 2),
        ("retry", cell.name, 2),
        ("done", cell.name, 3),  # two retries used: left failed
        ("start", other.name, None),
        ("done", other.name, 1),  # in the cell: not run again
    ]
    rows = {r["run"].split("/")[-1]: r for r in read_index(tmp_path).to_pylist()}
    assert rows[cell.name]["status"] == "failed"
    assert rows[cell.name]["reason"] == "worker died, 3 runs: ray task failed: The worker died unexpectedly"
    assert index_reason(book.outcomes[other.name]) == "KeyError: 'reward'"
    assert failure_text(book.outcomes[cell.name], 2).startswith("outside the cell (worker died), left failed after 3")
    assert failure_text(CellOutcome("c", "failed", "x", outside="out of memory"), 2) == (
        "outside the cell (out of memory), retry 1 of 2 follows from its checkpoint: x"
    )


INVALID_MODEL = {
    "estimators": {"grpo": {}},
    "group_sizes": [4],
    "seeds": [0],
    "train": {"steps": 2, "prompts_per_step": 4},
    "eval": {"tasks": ["arith"], "n": 2, "k": [1], "limit": 4},
}


def _matrix_with_an_invalid_model(tmp_path):
    """A matrix file whose model folder holds a config.json that is not JSON: it passes the file's checks (the
    folder exists) and fails when the cell loads the model, the same way every time."""
    model = tmp_path / "broken-model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama", "hidden_size": ')
    import yaml

    spec = tmp_path / "m.yaml"
    spec.write_text(yaml.safe_dump({**INVALID_MODEL, "models": [str(model)]}))
    return spec


def test_a_cell_whose_model_config_is_invalid_is_not_retried_and_matrix_run_exits_1_naming_it(tmp_path):
    spec = _matrix_with_an_invalid_model(tmp_path)
    results = tmp_path / "results"
    result = CliRunner().invoke(app, ["--no-progress", "matrix", "run", str(spec), "--results", str(results)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert sum("training + evaluation ..." in line for line in lines) == 1 and "retry" not in result.output
    assert any("broken-model-grpo-G4-s0: failed in" in ln and "in the cell, not retried: OSError" in ln for ln in lines)
    summary = lines[lines.index(next(ln for ln in lines if "cells left failed" in ln)) :]
    assert summary[0].startswith("1 of 1 cells left failed; the same command runs only these again")
    assert summary[1].startswith("  broken-model-grpo-G4-s0: in the cell, not retried: OSError")
    assert "error.txt" in summary[1]
    assert read_index(results).column("status").to_pylist() == ["failed"]


def test_retries_default_is_the_runners_and_a_negative_count_is_a_one_line_error(tmp_path):
    spec = _matrix_with_an_invalid_model(tmp_path)
    result = CliRunner().invoke(app, ["matrix", "run", str(spec), "--results", str(tmp_path), "--retries", "-1"])
    assert result.exit_code == 2 and "retries=-1 is out of range" in result.output
    assert "Traceback" not in result.output
    import inspect

    from benchctl.cli.matrix import run_command

    assert inspect.signature(run_command).parameters["retries"].default == DEFAULT_RETRIES
    assert inspect.signature(run_matrix).parameters["retries"].default == DEFAULT_RETRIES
