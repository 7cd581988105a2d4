"""`benchctl simulate ...` through the real root app: tables, parquet, JSON, PNGs, one-line errors."""

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchctl.cli import app

BANDIT_FAST = ["--steps", "20", "--prompts", "32", "--seeds", "2", "--estimators", "grpo,neg_dominant"]


def _run(args):
    return CliRunner().invoke(app, ["simulate", *args])


def test_bias_G8_prints_the_spec_check_values():
    result = _run(["bias", "--G", "8"])
    assert result.exit_code == 0, result.output
    for value in ("0.0986", "0.0756", "0.0278", "-0.0278"):
        assert value in result.stdout
    assert "dr_grpo" in result.stdout and "Lemma 2" in result.stdout


def test_bias_out_writes_parquet_with_the_documented_columns(tmp_path):
    target = tmp_path / "bias.parquet"
    result = _run(
        [
            "bias",
            "--G",
            "4,8",
            "--p",
            "0.1,0.5",
            "--estimators",
            "dr_grpo,dgpo",
            "--groups",
            "1000",
            "--out",
            str(target),
        ]
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(target)
    assert table.num_rows == 8
    assert set(table.column("method").to_pylist()) == {"exact", "mc"}
    for column in (
        "estimator",
        "G",
        "p",
        "adv_correct",
        "adv_wrong",
        "true_correct",
        "true_correct_norm",
        "bias_any",
        "lemma2",
        "method",
        "adv_correct_se",
    ):
        assert column in table.column_names
    assert json.loads(table.schema.metadata[b"benchctl.config"])["G"] == [4, 8]


def test_json_to_stdout_is_parseable_and_replaces_the_table():
    result = _run(["collapse", "--G", "8", "--p", "0.5", "--json", "-"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["command"] == "collapse"
    assert payload["rows"][0]["expected_acr"] == pytest.approx(2 * 0.5**8)


def test_json_file_and_plot_folder_are_written(tmp_path):
    out_json, plots = tmp_path / "sym.json", tmp_path / "plots"
    result = _run(["symmetry", "--G", "8", "--json", str(out_json), "--plot", str(plots)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out_json.read_text())["rows"]
    assert {"sum_abs_correct", "sum_abs_wrong", "total", "net"} <= set(rows[0])
    assert (plots / "symmetry_G8.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "command",
    [["bias", "--p", "0.1,0.5"], ["collapse", "--beta", "1,3"], ["bandit", *BANDIT_FAST], ["anchor", "--seeds", "5"]],
)
def test_each_command_plots_pngs(tmp_path, command):
    result = _run([*command, "--plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    pngs = list(tmp_path.glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_bandit_prints_pass_at_k_table_and_findings(tmp_path):
    target = tmp_path / "bandit.parquet"
    result = _run(["bandit", *BANDIT_FAST, "--k", "1,8", "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert "pass@8" in result.stdout and "Findings" in result.stdout and "holds" in result.stdout
    table = pq.read_table(target)
    assert {"estimator", "step", "pass@1_mean", "pass@1_ci95", "pass@8_mean", "entropy_mean"} <= set(table.column_names)


@pytest.mark.parametrize(
    "args",
    [
        ["bias", "--estimators", "grpo,nope"],
        ["bias", "--estimators", "grpo(std=bogus)"],
        ["bias", "--p", "1.5"],
        ["bias", "--G", "eight"],
        ["symmetry", "--estimators", "bogus_estimator"],
        ["bandit", "--mode", "expected", "--estimators", "ha_dw"],
        ["collapse", "--beta", "1"],
        ["anchor", "--steps", "3"],
        ["anchor", "--noise", "-1"],
    ],
)
def test_bad_input_is_one_stderr_line_exit_2_without_traceback(args):
    result = _run(args)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_unknown_estimator_message_lists_valid_names():
    result = _run(["bias", "--estimators", "nope"])
    assert "nope" in result.stderr and "grpo" in result.stderr
