"""`benchctl data pull`: hub datasets (here: local snapshots in the hub layout, built with `datasets` from the
fixture's real rows, no download) written as task files that `--data-dir` loads with the same problems and golds."""

import json
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.tasks import get_task
from benchctl.tasks.pull import pull


def _hub_rows(fixture, name: str) -> list[dict]:
    """The fixture's rows as the hub datasets store them (the inverse of benchctl.tasks.sources' mappers)."""
    rows = [json.loads(line) for line in (fixture / name).read_text(encoding="utf-8").splitlines()]
    if name == "math500.jsonl":
        return [
            {
                "problem": r["problem"],
                "solution": r["solution"],
                "answer": r["answer"],
                "subject": r["subject"],
                "level": r["level"],
                "unique_id": r["id"],
            }
            for r in rows
        ]
    if name == "gsm8k_test.jsonl":
        return [{"question": r["problem"], "answer": r["solution"]} for r in rows]
    return [
        {
            "task_id": int(r["id"]),
            "text": r["prompt"],
            "code": r["code"],
            "test_list": r["test_list"],
            "test_setup_code": r["test_setup_code"],
            "challenge_test_list": r["challenge_test_list"],
            "split": r["split"],
        }
        for r in rows
    ]


def _config_card(config: str, splits) -> str:
    files = "".join(f"  - split: {s}\n    path: {config}/{s}-*.parquet\n" for s in splits)
    return f"---\nconfigs:\n- config_name: {config}\n  data_files:\n{files}---\n"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """Snapshots of HuggingFaceH4/MATH-500, openai/gsm8k (config main) and google-research-datasets/mbpp (config
    full, four splits) in the hub's layout, made with `datasets` from the fixture rows."""
    import datasets

    from tests.conftest import FIXTURE_DATA

    root = tmp_path_factory.mktemp("hub")
    math500 = root / "HuggingFaceH4" / "MATH-500"
    datasets.Dataset.from_list(_hub_rows(FIXTURE_DATA, "math500.jsonl")).to_json(math500 / "test.jsonl")
    gsm8k = root / "openai" / "gsm8k"
    datasets.Dataset.from_list(_hub_rows(FIXTURE_DATA, "gsm8k_test.jsonl")).to_parquet(
        gsm8k / "main" / "test-00000-of-00001.parquet"
    )
    (gsm8k / "README.md").write_text(_config_card("main", ["test"]))
    mbpp = root / "google-research-datasets" / "mbpp"
    by_split = defaultdict(list)
    for row in _hub_rows(FIXTURE_DATA, "mbpp.jsonl"):
        by_split[row.pop("split")].append(row)
    strings = datasets.Sequence(datasets.Value("string"))
    features = datasets.Features(
        {
            "task_id": datasets.Value("int32"),
            "text": datasets.Value("string"),
            "code": datasets.Value("string"),
            "test_list": strings,
            "test_setup_code": datasets.Value("string"),
            "challenge_test_list": strings,
        }
    )
    for split, rows in by_split.items():  # the hub's features (one schema for the four splits)
        datasets.Dataset.from_list(rows, features=features).to_parquet(
            mbpp / "full" / f"{split}-00000-of-00001.parquet"
        )
    (mbpp / "README.md").write_text(_config_card("full", sorted(by_split)))
    return root


def _key(problems):
    return [(p.id, p.question, p.gold) for p in problems]


def test_pulled_files_load_with_the_fixtures_problems_and_golds(mirror, fixture_data_dir, tmp_path):
    pulled = pull(["math500", "gsm8k", "mbpp"], tmp_path / "data", mirror=mirror)
    assert [(p.task, p.rows, p.path.name) for p in pulled] == [
        ("math500", 50, "math500.jsonl"),
        ("gsm8k", 10, "gsm8k_test.jsonl"),
        ("mbpp", 34, "mbpp.jsonl"),
    ]
    out, fixture = tmp_path / "data", fixture_data_dir
    assert _key(get_task("math500").load(out)) == _key(get_task("math500").load(fixture))
    golds = [(p.question, p.gold) for p in get_task("gsm8k").load(out)]
    assert golds == [(p.question, p.gold) for p in get_task("gsm8k").load(fixture)]  # ids count from 0 on the hub
    for split in ("test", "all", "prompt"):  # every field and the split of each MBPP row, \r\n line ends included
        assert get_task("mbpp", split=split).load(out) == get_task("mbpp", split=split).load(fixture)


def test_pulled_file_is_utf8_json_lines_with_non_ascii_kept(mirror, tmp_path):
    (pulled,) = pull(["gsm8k"], tmp_path, mirror=mirror)
    text = pulled.path.read_bytes().decode("utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert all(isinstance(row, dict) and row["id"] and row["answer"] for row in rows)
    assert "’" in text and "÷" in text  # written as characters, not \\u escapes (gsm8k-test-144, ...)
    assert not list(tmp_path.glob("*.part"))


def test_data_pull_command_reports_each_file_and_the_data_dir_to_use(mirror, tmp_path):
    out = tmp_path / "data"
    result = CliRunner().invoke(
        app, ["data", "pull", "--tasks", "gsm8k,math500", "--from", str(mirror), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"gsm8k: 10 rows -> {out / 'gsm8k_test.jsonl'}",
        f"math500: 50 rows -> {out / 'math500.jsonl'}",
        f"work offline with: --data-dir {out}",
    ]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--tasks", "nope"], "unknown task 'nope'; choose one of:"),
        (["--tasks", "arith"], "task 'arith' has no hub dataset to pull; choose from: aime24"),
        (["--tasks", "aime24", "--from", "MIRROR"], "HuggingFaceH4/aime_2024 not found"),
    ],
)
def test_bad_pull_requests_are_one_line_errors_and_write_nothing(mirror, tmp_path, args, fragment):
    args = [str(mirror) if a == "MIRROR" else a for a in args]
    result = CliRunner().invoke(app, ["data", "pull", "--out", str(tmp_path / "data"), *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert not list(tmp_path.rglob("*.jsonl"))
