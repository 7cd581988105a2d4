"""`benchctl plan` wiring: the config the command hands the library, --json, and bad input -> one line, exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import benchctl.report.design_plan as design_plan
from benchctl.cli import app


def test_plan_passes_inputs_target_budget_and_grid_with_sources(monkeypatch):
    calls = {}

    def fake(config):
        calls["config"] = config
        raise design_plan.PlanInputError("stop here")

    monkeypatch.setattr(design_plan, "build_plan", fake)
    args = ["plan", "r1", "--target-mde", "6", "--budget", "2.5", "--seeds", "3,5", "--samples", "4", "--json"]
    result = CliRunner().invoke(app, args)
    config = calls["config"]
    assert (config.inputs, config.target_mde, config.budget) == (("r1",), 6.0, 2.5)
    assert (config.seeds, config.samples, config.questions) == ((3, 5), (4,), design_plan.PlanConfig().questions)
    assert config.as_json and config.sources["target_mde"] == "flag" and config.sources["alpha"] == "default"
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (["--target-mde", "0"], "positive"),
        (["--target-mde", "-3"], "positive"),
        (["--seeds", "3,x"], "whole numbers"),
        (["--seeds", "2,5"], "at least 3"),
        (["--budget", "0"], "positive core-hours"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, needs):
    result = CliRunner().invoke(app, ["plan", str(tmp_path), *args])
    assert result.exit_code == 2
    assert needs in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_one_seed_pilot_is_one_line_naming_the_seeds_needed(tmp_path):
    from tests.report.test_design import _pilot

    result = CliRunner().invoke(app, ["plan", str(_pilot(tmp_path, seeds=(1,)))])
    assert result.exit_code == 2 and "at least 2 seeds" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_plan_json_names_the_recommended_design(tmp_path):
    from tests.report.test_design import _pilot

    result = CliRunner().invoke(app, ["plan", str(_pilot(tmp_path, wall=60)), "--target-mde", "10", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["kind"] == "benchctl-plan" and plan["choice"]["mde"] <= 10
    assert {"seed_sd", "problem_sd", "interaction_sd", "sampling_sd", "printed_mde"} <= set(plan["components"][0])
