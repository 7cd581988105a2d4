"""`benchctl estimators` and `benchctl estimators show NAME` through the real root app."""

from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.estimators import register_estimator, registered_names, unregister_estimator


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def assert_one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    assert "Traceback" not in result.output + result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_listing_shows_every_registered_estimator_with_kind_defaults_and_reference():
    result = invoke("estimators")
    assert result.exit_code == 0, result.output
    for name in registered_names():
        assert name in result.stdout
    assert "modifier" in result.stdout and "lambda_scale=1.3" in result.stdout and "arXiv:2601.08521" in result.stdout


def test_show_prints_formula_defaults_help_loss_aggregation_and_our_choice_notes():
    result = invoke("estimators", "show", "ha_dw")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    for fragment in ("lambda_scale", "1.3", "exp(D M)", "seq-mean-token-mean", "[our choice]", "anchor learning rate"):
        assert fragment in out


def test_show_reports_the_base_loss_aggregation_and_overridden_values():
    result = invoke("estimators", "show", "a_grae", "--base", "dr_grpo", "--set", "alpha=0.5", "--set", "shift=false")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "seq-mean-token-sum-norm" in out and "0.5" in out and "false" in out


def test_show_of_a_base_estimator_prints_its_own_loss_aggregation():
    result = invoke("estimators", "show", "dgpo")
    assert result.exit_code == 0 and "token-mean-nondegenerate" in result.stdout


def test_help_lists_the_decisions_the_papers_leave_open():
    result = invoke("estimators", "--help")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "[our choice]" in out and "ha_dw" in out and "avspo" in out


def test_unknown_estimator_is_one_line_naming_the_choices_exit_2():
    assert_one_line_error(invoke("estimators", "show", "grpo_leed"), "grpo_leed", "grpo_lead", "ha_dw")


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--set", "lambda_scale=-1"], "valid: (0.0, inf]"),
        (["--set", "m=ten"], "not a valid int"),
        (["--set", "lamda=1"], "unknown hyperparameter 'lamda'"),
        (["--set", "lambda_scale"], "KEY=VALUE"),
        (["--base", "nope"], "unknown estimator 'nope'"),
    ],
)
def test_bad_hyperparameters_are_one_line_exit_2(args, fragment):
    assert_one_line_error(invoke("estimators", "show", "ha_dw", *args), fragment)


def test_base_option_on_a_base_estimator_is_rejected():
    assert_one_line_error(invoke("estimators", "show", "grpo", "--base", "rloo"), "modifiers only")


@dataclass(frozen=True)
class NoParams:
    pass


def flip(rewards, base_adv, params, state):
    """Flip: negate the base advantage (CLI test plug-in).

    Reference: arXiv:2402.03300 (test fixture, contract.md §3).
    Formula: A' = -A
    Shapes: (P, G) -> (P, G).
    Deviations: none.
    """
    return -base_adv, None, {}


@pytest.fixture()
def plugin():
    register_estimator("test_flip", kind="modifier", params=NoParams)(flip)
    yield "test_flip"
    unregister_estimator("test_flip")


def test_plugin_estimator_appears_in_listing_and_show(plugin):
    assert plugin in invoke("estimators").stdout
    result = invoke("estimators", "show", plugin)
    assert result.exit_code == 0 and "A' = -A" in result.stdout


def test_show_parses_hyperparameter_types_from_the_dataclass():
    result = invoke("estimators", "show", "ha_dw", "--set", "c0=none", "--set", "m=4", "--set", "update=hard")
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") >= 4}
    assert "│ 4 " in rows["m"] and "hard" in rows["update"].split("│")[3] and "none" in rows["c0"]
