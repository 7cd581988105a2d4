"""`benchctl tiny-model` never clobbers an existing folder and writes a loadable model."""

import json

from typer.testing import CliRunner

from benchctl.cli import app


def test_existing_output_folder_is_refused_and_left_untouched(tmp_path):
    out = tmp_path / "tiny"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = CliRunner().invoke(app, ["tiny-model", "--out", str(out), "--sft-steps", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"Error: {out} already exists; pass --overwrite to replace it"]
    assert (out / "keep.txt").read_text() == "mine"


def test_build_writes_an_hf_folder_and_no_scratch_leftovers(tmp_path):
    out = tmp_path / "tiny"
    result = CliRunner().invoke(app, ["tiny-model", "--out", str(out), "--sft-steps", "2"])
    assert result.exit_code == 0, result.output
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()
    assert json.loads((out / "benchctl_tiny.json").read_text())["config"]["sft_steps"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["tiny"]
