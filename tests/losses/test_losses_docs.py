"""docs/losses.md is exactly what `benchctl losses --markdown` prints, and `benchctl losses` lists, shows and
exports (--json) every registered loss."""

import json
from pathlib import Path

from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.losses import list_losses

DOCS = Path(__file__).resolve().parents[2] / "docs" / "losses.md"


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["losses", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_docs_file_is_what_the_registry_generates():
    assert DOCS.read_text(encoding="utf-8") == _run("--markdown"), (
        "docs/losses.md is out of date: run `benchctl losses --markdown > docs/losses.md`"
    )


def test_markdown_has_each_losss_formula_defaults_reference_choices_and_the_name_collisions():
    text = _run("--markdown")
    for info in list_losses():
        section = text.split(f"\n## {info.name}\n", 1)[1].split("\n## ", 1)[0]
        assert " ".join(info.formula.split()) in section and info.reference in section
        assert all(f"| `{hp.name}` |" in section for hp in info.hyperparameters)
        assert all(" ".join(note.split()) in section for note in info.notes)
    for collision in ("TRL's `bnpo`", "veRL's `grpo_passk`", "GSPO and GSPO-token", "TRL's `delta`"):
        assert collision in " ".join(text.split())


def test_json_lists_every_loss_with_its_defaults():
    data = json.loads(_run("--json"))
    assert [d["name"] for d in data] == [info.name for info in list_losses()]
    ppo = next(d for d in data if d["name"] == "ppo_clip")
    assert {hp["name"]: hp["default"] for hp in ppo["hyperparameters"]} == {
        "clip_low": 0.2,
        "clip_high": 0.2,
        "c": None,
    }


def test_listing_and_show_name_every_loss_and_a_bad_name_is_one_line_exit_2():
    listing = _run()
    assert all(info.name in listing for info in list_losses())
    assert "3.0" in _run("show", "ppo_clip(c=3)")
    result = CliRunner().invoke(app, ["losses", "show", "ppo"])
    assert result.exit_code == 2 and "choose one of" in result.stderr and "Traceback" not in result.output
