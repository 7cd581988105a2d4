"""`benchctl matrix run FILE --until-decided CLAIMS --max-seeds N`: bad input is one line and exit 2 before any
cell; later waves are the file's cells at the next seeds; live on the tiny model, an arm whose claims are decided
gets no more seeds, the baseline runs while an arm compared with it does, a rerun resumes, and the report says at
which look each verdict was reached."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.matrix.waves import wave_cells

MATRIX = """\
models: [tiny]
task: arith
estimators:
  grpo: {}
  dr_grpo: {}
  ha_dw: {}
group_sizes: [4]
seeds: [1, 2, 3]
train: {steps: 2, prompts_per_step: 4, save_every: 1}
eval: {tasks: [arith], n: 2, k: [1], limit: 8}
"""
CLAIMS = """\
claims:
  - paper: "tiny"
    claim: "HA-DW's collapse rate is within 10 of GRPO's"
    id: hadw_acr_within
    arm: ha_dw
    baseline: grpo
    metric: acr/all
    direction: at_least
    margin: 10.0
  - paper: "tiny"
    claim: "Dr.GRPO beats GRPO"
    id: drgrpo_beats_grpo
    arm: dr_grpo
    baseline: grpo
    metric: pass@k
    k: 1
    direction: greater
"""


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "m.yaml").write_text(MATRIX)
    (tmp_path / "c.yaml").write_text(CLAIMS)
    return tmp_path / "m.yaml", tmp_path / "c.yaml"


def _run(*args: str):
    return CliRunner().invoke(app, ["matrix", "run", *args])


@pytest.mark.parametrize(
    "extra, claims, message",
    [
        (["--max-seeds", "2"], CLAIMS, "--max-seeds 2 is below the matrix's 3 seeds"),
        (["--max-seeds", "5"], CLAIMS.replace("arm: dr_grpo", "arm: dapo"), "names arm 'dapo', not in the matrix"),
        ([], CLAIMS, "--until-decided needs --max-seeds N"),
        (["--max-seeds", "5", "--wave-seeds", "0"], CLAIMS, "--wave-seeds must be an integer >= 1"),
        (["--max-seeds", "5", "--seed-shape", "lognormal"], CLAIMS, "choose one of: normal, skewed"),
    ],
)
def test_bad_sequential_input_is_one_line_and_exit_2_before_any_cell(tmp_path, files, extra, claims, message):
    matrix, claims_file = files
    claims_file.write_text(claims)
    result = _run(str(matrix), "--results", str(tmp_path / "r"), "--until-decided", str(claims_file), *extra)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "r" / "runs").exists()


def test_max_seeds_without_claims_is_refused_in_one_line(tmp_path, files):
    result = _run(str(files[0]), "--results", str(tmp_path / "r"), "--max-seeds", "5")
    assert result.exit_code == 2 and "--max-seeds needs --until-decided CLAIMS" in result.stderr


def test_until_decided_hands_the_files_claims_seeds_and_wave_to_the_wave_loop(tmp_path, files, monkeypatch):
    import benchctl.matrix.waves as waves
    from benchctl.matrix.runner import MatrixOutcome

    seen = {}

    def fake(path, results, claims, max_seeds, wave, run=None, on_look=None, shape="normal"):
        seen.update(path=path, results=results, claims=claims, max_seeds=max_seeds, wave=wave, shape=shape)
        return waves.WavesOutcome((MatrixOutcome(Path(results) / "index.parquet", ()),), None, Path(results))

    monkeypatch.setattr(waves, "run_until_decided", fake)
    matrix, claims = files
    args = [str(matrix), "--results", str(tmp_path / "r"), "--until-decided", str(claims), "--max-seeds", "6"]
    result = _run(*args, "--wave-seeds", "3", "--seed-shape", "skewed")
    assert result.exit_code == 0, result.output
    assert seen == {
        "path": str(matrix),
        "results": str(tmp_path / "r"),
        "claims": str(claims),
        "max_seeds": 6,
        "wave": 3,
        "shape": "skewed",
    }


def test_a_later_wave_is_the_files_cells_at_the_next_seeds_of_the_open_arms(files):
    cells = wave_cells(str(files[0]), (4, 5), {"grpo", "dr_grpo"})
    assert [c.name for c in cells] == ["tiny-grpo-G4-s4", "tiny-grpo-G4-s5", "tiny-dr_grpo-G4-s4", "tiny-dr_grpo-G4-s5"]


def _benchctl(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("benchctl")  # the venv's console script
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout's benchctl
    return subprocess.run([str(exe), "--no-progress", *args], capture_output=True, text=True, env=env, check=False)


@pytest.mark.vllm
@pytest.mark.slow
def test_until_decided_stops_decided_arms_resumes_and_the_report_gives_the_look(tmp_path, files):
    matrix, claims = files
    results = tmp_path / "r"
    command = ("matrix", "run", str(matrix), "--results", str(results), "--until-decided", str(claims))
    first = _benchctl(*command, "--max-seeds", "4", "--wave-seeds", "1")
    assert first.returncode == 0, first.stderr[-2000:]
    record = json.loads((results / "sequential.json").read_text())
    look1 = {c["id"]: c for c in record["looks"][0]["claims"]}
    assert look1["hadw_acr_within"]["decided"] and look1["hadw_acr_within"]["seeds"] == 3  # decided at look 1
    runs = sorted(p.name for p in (results / "runs").iterdir())
    open_arms = {"dr_grpo", "grpo"} if not look1["drgrpo_beats_grpo"]["decided"] else set()
    assert [r for r in runs if r.endswith("-s4")] == sorted(f"tiny-{a}-G4-s4" for a in open_arms)
    assert len(record["looks"]) == (2 if open_arms else 1)

    again = _benchctl(*command, "--max-seeds", "4", "--wave-seeds", "1")  # resumes: every cell is finished
    assert again.returncode == 0 and "training + evaluation" not in again.stdout, again.stdout[-2000:]
    assert json.loads((results / "sequential.json").read_text())["looks"] == record["looks"]

    out = tmp_path / "report"
    report = _benchctl("report", str(results), "--baseline", "grpo", "--claims", str(claims), "--out", str(out))
    assert report.returncode == 0, report.stderr[-2000:]
    table = pd.read_parquet(out / "claims.parquet").set_index("id")
    assert table.loc["hadw_acr_within", "look"] == 1 and table.loc["hadw_acr_within", "seeds_at_decision"] == 3
    assert table.loc["hadw_acr_within", "verdict"] == "holds" and table.loc["hadw_acr_within", "alpha_spent"] < 0.05
    assert "decided at look 1 of 2" in table.loc["hadw_acr_within", "reason"]
    assert "group-sequential design" in (out / "report.md").read_text()
