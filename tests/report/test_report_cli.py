"""`benchctl report` wiring: the exact config the command hands the library, and bad input -> one line, exit 2."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchctl.report
from benchctl.cli import app
from benchctl.report import ReportConfig, ReportResult


@pytest.fixture()
def captured(monkeypatch):
    calls = {}

    def fake(config):
        calls["report"] = config
        return ReportResult(
            {
                "main": __import__("pandas").DataFrame(),
                "rliable": __import__("pandas").DataFrame(),
                "cost": __import__("pandas").DataFrame(),
            },
            {},
            ["a note"],
            Path("out"),
        )

    monkeypatch.setattr(benchctl.report, "build_report", fake)
    return calls


def test_report_passes_inputs_filters_group_by_and_ks_with_sources(captured):
    result = CliRunner().invoke(
        app,
        [
            "report",
            "r1",
            "r2",
            "--where",
            "estimator=ha_dw",
            "--where",
            "seed!=3",
            "--group-by",
            "arm,group_size",
            "--k",
            "1,4",
            "--out",
            "o",
            "--baseline",
            "none",
        ],
    )
    assert result.exit_code == 0, result.output
    config = captured["report"]
    sources = {name: "default" for name in ReportConfig.__dataclass_fields__ if name != "sources"}
    sources.update(inputs="flag", where="flag", group_by="flag", ks="flag", out="flag", baseline="flag")
    assert config == ReportConfig(
        inputs=("r1", "r2"),
        out="o",
        baseline=None,
        where=("estimator=ha_dw", "seed!=3"),
        group_by=("arm", "group_size"),
        ks=(1, 4),
        sources=sources,
    )
    assert "note: a note" in result.output and "report: out/report.html" in result.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["report", "r", "--where", "estimator"], "expected key=value"),
        (["report", "r", "--confidence", "1.5"], "confidence=1.5 is out of range"),
        (["report", "r", "--k", "0"], "k must be >= 1"),
    ],
)
def test_bad_report_input_is_one_line_exit_2(captured, args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_report_on_a_missing_folder_is_one_line_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "no such run or results folder" in result.output
