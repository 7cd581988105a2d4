"""`benchctl eval / grade / augment mqr` wiring: the exact config each command hands the library (style.md 14),
and bad input -> one stderr line, exit 2."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchctl.augment
import benchctl.evaluation
from benchctl.augment import MQRConfig, MQRResult
from benchctl.cli import app
from benchctl.evaluation import EvalConfig, EvalResult, GradeConfig


@pytest.fixture()
def captured(monkeypatch):
    calls = {}

    def fake(name, result):
        def record(config):
            calls[name] = config
            return result

        return record

    monkeypatch.setattr(benchctl.evaluation, "run_eval", fake("eval", EvalResult(Path("o"), "m", ())))
    monkeypatch.setattr(benchctl.evaluation, "run_grade", fake("grade", EvalResult(Path("o"), "m", ())))
    monkeypatch.setattr(benchctl.augment, "run_mqr", fake("mqr", MQRResult(Path("o"), 0, 0, {})))
    monkeypatch.delenv("BENCHCTL_DATA_DIR", raising=False)
    return calls


def _invoke(args, env=None):
    return CliRunner().invoke(app, args, env=env)


def test_eval_passes_parsed_ks_tasks_defaults_and_sources(captured):
    result = _invoke(["eval", "--model", "org/m", "--tasks", "math500, aime24", "--k", "1..8", "--seed", "3"])
    assert result.exit_code == 0, result.output
    sources = {
        name: "default"
        for name in EvalConfig.__dataclass_fields__
        if name not in ("sources", "chunk_samples", "confidence", "progress")
    }
    sources.update(model="flag", tasks="flag", ks="flag", seed="flag")
    expected = EvalConfig(model="org/m", tasks=("math500", "aime24"), ks=(1, 2, 4, 8), seed=3, sources=sources)
    assert captured["eval"] == expected
    assert (expected.temperature, expected.top_p, expected.max_tokens) == (0.6, 0.95, 4096)


def test_eval_data_dir_from_environment_is_recorded_as_env(captured, tmp_path):
    result = _invoke(
        ["eval", "--model", "m/x", "--tasks", "arith", "--k", "1,5,10", "--n", "16"],
        env={"BENCHCTL_DATA_DIR": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    config = captured["eval"]
    assert (config.data_dir, config.sources["data_dir"]) == (str(tmp_path), "env")
    assert (config.ks, config.n, config.sources["n"]) == ((1, 5, 10), 16, "flag")


@pytest.mark.parametrize("bad", ["1..100", "0", "x", "1,,2", "4..2"])
def test_bad_k_is_one_line_exit_2(captured, bad):
    result = _invoke(["eval", "--model", "m/x", "--tasks", "arith", "--k", bad])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "--k" in result.stderr
    assert "Traceback" not in result.output and "eval" not in captured


def test_grade_passes_its_config(captured, tmp_path):
    samples = tmp_path / "s.jsonl"
    result = _invoke(
        [
            "grade",
            "--task",
            "math500",
            "--samples",
            str(samples),
            "--out",
            str(tmp_path / "o"),
            "--k",
            "1,4",
            "--resamples",
            "200",
        ]
    )
    assert result.exit_code == 0, result.output
    config = captured["grade"]
    assert isinstance(config, GradeConfig)
    assert (config.task, config.samples, config.ks, config.resamples) == ("math500", str(samples), (1, 4), 200)
    assert config.sources["resamples"] == "flag" and config.sources["seed"] == "default"
    assert _invoke(["grade", "--task", "math500", "--samples", "x", "--out", "y"]).exit_code == 0
    assert captured["grade"].ks is None


def test_augment_mqr_passes_its_config(captured):
    result = _invoke(
        [
            "augment",
            "mqr",
            "--model",
            "org/instruct",
            "--out",
            "aug/math_train.jsonl",
            "--aspects",
            "term,subproblem",
            "--limit",
            "5",
            "--no-keep-original",
        ]
    )
    assert result.exit_code == 0, result.output
    config = captured["mqr"]
    assert config == MQRConfig(
        model="org/instruct",
        out="aug/math_train.jsonl",
        aspects=("term", "subproblem"),
        limit=5,
        keep_original=False,
        sources=config.sources,
    )
    assert config.sources["aspects"] == "flag" and config.sources["task"] == "default"


def test_unknown_mqr_aspect_is_one_line_exit_2(captured):
    result = _invoke(["augment", "mqr", "--model", "m/x", "--out", "o.jsonl", "--aspects", "story"])
    assert result.exit_code == 2 and "unknown MQR aspect" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_k_above_n_is_one_line_exit_2_before_any_work(tmp_path):
    result = _invoke(
        ["eval", "--model", "m/x", "--tasks", "arith", "--k", "1..8", "--n", "4", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "k=8 > n=4" in result.stderr and not (tmp_path / "o").exists()


def test_cli_module_imports_no_heavy_backend():
    import subprocess
    import sys

    code = (
        "import sys, benchctl.cli; print(sorted(m for m in ('torch', 'vllm', 'math_verify', 'pyarrow') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "torch" not in out and "vllm" not in out
