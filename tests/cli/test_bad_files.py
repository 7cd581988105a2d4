"""Every file a user hands the CLI (samples, task files, configs), filled with random bytes, empty or cut short,
ends in one stderr line naming the file and exit code 2, never a traceback."""

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchctl.cli import app

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "benchmarks"
RANDOM = random.Random(0).randbytes(4096)
SAMPLES = "".join(f'{{"problem_id": "{i}", "completion": "```python\\nx = {i}\\n```"}}\n' for i in range(11, 41))


def _truncated(text: str) -> bytes:
    data = text.encode("utf-8")
    return data[: len(data) // 2 + 3]


def _grade_samples(tmp_path, data):
    (tmp_path / "samples.jsonl").write_bytes(data)
    return [
        "grade",
        "--task",
        "mbpp",
        "--samples",
        str(tmp_path / "samples.jsonl"),
        "--data-dir",
        str(FIXTURE),
        "--out",
        str(tmp_path / "out"),
    ], "samples.jsonl"


def _task_file(name):
    def command(tmp_path, data):
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / f"{name}.jsonl").write_bytes(data)
        (tmp_path / "samples.jsonl").write_text(SAMPLES)
        return [
            "grade",
            "--task",
            name,
            "--samples",
            str(tmp_path / "samples.jsonl"),
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "out"),
        ], f"{name}.jsonl"

    return command


def _tasks_show(tmp_path, data):
    (tmp_path / "gsm8k_test.jsonl").write_bytes(data)
    return ["tasks", "show", "gsm8k", "--data-dir", str(tmp_path)], "gsm8k_test.jsonl"


def _train_task_file(tmp_path, data):
    (tmp_path / "problems.jsonl").write_bytes(data)
    return ["train", "--task", str(tmp_path / "problems.jsonl"), "--out", str(tmp_path / "run")], "problems.jsonl"


def _model_config(tmp_path, data):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(data)
    return [
        "eval",
        "--model",
        str(tmp_path / "model"),
        "--tasks",
        "arith",
        "--out",
        str(tmp_path / "out"),
    ], "config.json"


def _train_config(tmp_path, data):
    (tmp_path / "train.yaml").write_bytes(data)
    return ["train", "--config", str(tmp_path / "train.yaml"), "--out", str(tmp_path / "run")], "train.yaml"


READERS = {  # reader -> (command builder, a valid file of its kind to cut short)
    "grade --samples": (_grade_samples, SAMPLES),
    "grade --data-dir math500.jsonl": (_task_file("math500"), (FIXTURE / "math500.jsonl").read_text()),
    "grade --data-dir mbpp.jsonl": (_task_file("mbpp"), (FIXTURE / "mbpp.jsonl").read_text()),
    "tasks show --data-dir": (_tasks_show, (FIXTURE / "gsm8k_test.jsonl").read_text().splitlines()[0]),  # reads 1 row
    "train --task FILE.jsonl": (_train_task_file, (FIXTURE / "math500.jsonl").read_text()),
    "eval --model DIR (config.json)": (_model_config, '{"model_type": "llama", "dtype": "float32", "vocab'),
    "train --config FILE.yaml": (_train_config, "estimator: grpo\nset: {lambda_scale: 1.3, base: grpo}\n"),
}
CASES = [(reader, kind) for reader in READERS for kind in ("random bytes", "empty", "truncated")]


@pytest.mark.parametrize("reader, kind", CASES)
def test_bad_user_file_is_one_line_naming_it_with_exit_2(tmp_path, reader, kind):
    build, valid = READERS[reader]
    data = {"random bytes": RANDOM, "empty": b"", "truncated": _truncated(valid)}[kind]
    args, name = build(tmp_path, data)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, repr(result.exception))
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and name in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_random_bytes_are_not_utf8():
    with pytest.raises(UnicodeDecodeError):
        RANDOM.decode("utf-8")
