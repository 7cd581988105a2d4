"""docs/estimators.md is exactly what `benchctl estimators --markdown` prints, and that covers every estimator."""

from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.estimators import list_estimators, register_estimator, unregister_estimator

DOCS = Path(__file__).resolve().parents[2] / "docs" / "estimators.md"


def _markdown() -> str:
    result = CliRunner().invoke(app, ["estimators", "--markdown"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_docs_file_is_what_the_registry_generates():
    assert DOCS.read_text(encoding="utf-8") == _markdown(), (
        "docs/estimators.md is out of date: run `benchctl estimators --markdown > docs/estimators.md`"
    )


def test_markdown_has_each_estimators_formula_defaults_reference_and_choices():
    text = _markdown()
    for info in list_estimators():
        section = text.split(f"\n## {info.name}\n", 1)[1].split("\n## ", 1)[0]
        assert " ".join(info.formula.split()) in section and info.reference in section
        for hp in info.hyperparameters:
            assert f"| `{hp.name}` |" in section
        for note in info.notes:
            assert " ".join(note.split()) in section
    assert "[our choice]" in text and "| `lambda_scale` | `1.3` |" in text


def test_a_registered_plugin_appears_in_the_markdown():
    @dataclass(frozen=True)
    class Params:
        scale: float = 2.0

    def doubled(rewards, params, state):
        """Doubled: twice the reward, a plug-in for this test.

        Reference: arXiv:2402.03300 Eq. 1 (test only).
        Formula: A_i = scale * r_i
        Shapes: rewards (P, G) -> advantages (P, G).
        Deviations: none.
        """
        return rewards * params.scale, state, {}

    register_estimator("doubled_for_docs", kind="base", params=Params)(doubled)
    try:
        assert "\n## doubled_for_docs\n" in _markdown() and "`A_i = scale * r_i`" in _markdown()
    finally:
        unregister_estimator("doubled_for_docs")
