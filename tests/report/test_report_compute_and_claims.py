"""`benchctl report` end to end on hand-made runs evaluated on a token cadence: compute_fits.parquet holds each
arm's ScaleRL fit, the better arm's asymptote is found higher, and `--claims` writes claims.parquet with verdicts."""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.report.compute import scalerl_curve
from benchctl.results.index import index_row, write_index
from benchctl.results.train_run import eval_dir
from tests.report.fixtures import train_config, write_eval, write_train_run

PROBLEMS, SAMPLES, STEPS, TOKENS = 100, 8, 8, 2_000


def _verdicts(rng, p: float) -> dict[str, list[bool]]:
    return {f"q{i}": list(rng.random(SAMPLES) < p) for i in range(PROBLEMS)}


def _results(tmp_path: Path) -> Path:
    results, rows = tmp_path / "results", []
    for arm, asymptote in (("grpo", 0.45), ("ha_dw", 0.8)):
        for seed in range(4):
            rng = np.random.default_rng([seed, len(arm)])
            config = train_config(arm, seed)
            run = results / "runs" / f"{arm}-s{seed}"
            final = scalerl_curve(np.array([STEPS * TOKENS]), 0.1, asymptote, 1.5, 5_000)[0]
            write_train_run(run, config, _verdicts(rng, final), steps=STEPS, tokens_per_step=TOKENS, rng_seed=seed)
            for step in range(STEPS):
                p = scalerl_curve(np.array([step * TOKENS]), 0.1, asymptote, 1.5, 5_000)[0]
                write_eval(eval_dir(run, step), "arith", _verdicts(rng, p), model=run.name, seed=seed)
            rows.append(index_row(results, run, config, "done"))
    write_index(results, rows)
    return results


def test_report_fits_compute_curves_and_tests_claims(tmp_path):
    results = _results(tmp_path)
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - {paper: '2601.08521', claim: HA-DW improves GRPO, arm: ha_dw, baseline: grpo, k: 1,"
        " direction: greater, paper_effect: '+2 points'}\n"
        "  - {paper: '2601.08521', claim: at 7B, arm: ha_dw, baseline: grpo, testbed: needs a 7B model}\n"
        "  - {paper: x, claim: GRPO beats HA-DW, id: grpo_wins, arm: grpo, baseline: ha_dw}\n"
        "  - {paper: x, claim: HA-DW matches GRPO, arm: ha_dw, baseline: grpo, direction: at_least, margin: 0.02,"
        " requires: grpo_wins}\n"
        "  - {paper: x, claim: HA-DW gains 60 points, arm: ha_dw, baseline: grpo, stated_effect: 0.6}\n"
    )
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(results), "--out", str(out), "--claims", str(claims)])
    assert result.exit_code == 0, result.output
    fits = pq.read_table(out / "compute_fits.parquet").to_pandas().set_index("arm")
    assert set(fits.index) == {"grpo", "ha_dw"} and (fits["seeds"] == 4).all()
    assert fits.loc["ha_dw", "asymptote"] > fits.loc["grpo", "asymptote_high"]
    assert abs(fits.loc["grpo", "asymptote"] - 0.45) < 0.1 and abs(fits.loc["ha_dw", "asymptote"] - 0.8) < 0.1
    verdict = pq.read_table(out / "compute_comparisons.parquet").to_pandas().iloc[0]
    assert (verdict["arm"], verdict["verdict"]) == ("ha_dw", "higher asymptote")
    table = pq.read_table(out / "claims.parquet").to_pandas()
    assert list(table["verdict"]) == [
        "holds",
        "inconclusive",
        "does not hold",
        "inconclusive",
        "paper's effect excluded",
    ]
    assert "7B" in table["reason"].iloc[1] and table["reason"].iloc[3].startswith("premise not established")
    assert list(table["margin"]) == [0.0, 0.0, 0.0, 0.02, 0.0] and table["stated_effect"].iloc[4] == 0.6
    assert "| 2.0 pts |" in (out / "report.md").read_text()  # the parity claim's margin in the claims view
    assert (out / "plots" / "compute_curves.png").stat().st_size > 10_000
    page = (out / "report.html").read_text()
    verdict, claimed, curves = (
        page.index(h) for h in ("verdict: each arm", "claims of the papers", "compute curves (")
    )
    assert verdict < claimed < curves  # the claims right after the verdict


def test_a_bad_claims_file_is_one_line_and_writes_nothing(tmp_path):
    results = _results(tmp_path)
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims:\n  - {paper: 1, claim: x, arm: ha_dw, baseline: grpo, direction: up}\n")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(results), "--out", str(out), "--claims", str(bad)])
    assert result.exit_code == 2 and "direction 'up'; choose one of" in result.output
    assert not out.exists()
    bad.write_text("claims:\n  - {paper: 1, claim: x, arm: ha_dw, baseline: grpo, requires: nowhere}\n")
    result = CliRunner().invoke(app, ["report", str(results), "--out", str(out), "--claims", str(bad)])
    assert result.exit_code == 2 and "requires 'nowhere', no claim has that id" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output and not out.exists()
