"""`benchctl tasks` through the real root app (typer CliRunner)."""

from typer.testing import CliRunner

from benchctl.cli import app

runner = CliRunner()


def test_listing_counts_sizes_from_the_local_files(benchmarks_dir):
    result = runner.invoke(app, ["tasks", "--data-dir", str(benchmarks_dir)])
    assert result.exit_code == 0, result.output
    for name, size, hub in [
        ("math500", "500", "HuggingFaceH4/MATH-500"),
        ("math_train", "7500", "EleutherAI/hendrycks_math"),
        ("olympiadbench", "675", "Hothan/OlympiadBench:OE_TO_maths_en_COMP"),
        ("mbpp", "500", "google-research-datasets/mbpp:full"),
        ("gsm8k", "1319", "openai/gsm8k:main"),
    ]:
        row = next(line for line in result.output.splitlines() if f" {name} " in line)
        assert size in row and hub in row and "(known)" not in row
    assert "(missing)" not in result.output


def test_listing_counts_the_rows_of_the_files_a_data_dir_holds(fixture_data_dir):
    result = runner.invoke(app, ["tasks", "--data-dir", str(fixture_data_dir)])
    assert result.exit_code == 0, result.output
    rows = {
        name: next(line for line in result.output.splitlines() if f" {name} " in line)
        for name in ("math500", "gsm8k", "mbpp", "aime25")
    }
    assert " 50 " in rows["math500"] and " 10 " in rows["gsm8k"] and " 31 " in rows["mbpp"]
    assert "30 (known)" in rows["aime25"] and "(missing)" in rows["aime25"]


def test_listing_without_data_falls_back_to_known_sizes(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHCTL_DATA_DIR", raising=False)
    result = runner.invoke(app, ["tasks", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if " aime25 " in line)
    assert "30 (known)" in row and "aime25.jsonl (missing)" in row and "yentinglin/aime_2025" in row
    assert "1000 (generated)" in result.output


def test_show_prints_the_chat_prompt_and_gold(benchmarks_dir):
    result = runner.invoke(app, ["tasks", "show", "aime25", "--data-dir", str(benchmarks_dir)])
    assert result.exit_code == 0, result.output
    assert "Please reason step by step" in result.output and "gold 70" in result.output


def test_unknown_task_exits_2_with_one_line():
    result = runner.invoke(app, ["tasks", "show", "nope"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown task 'nope'" in lines[0] and "math500" in lines[0]
    assert "Traceback" not in result.output
