"""A matrix with a failed cell: every comparison short of a seed the matrix asked for says so in the verdict and
claims tables (`3 of 4 seeds: s3 failed (baseline grpo)`), and comparisons.parquet / claims.parquet carry the
seeds expected and the lost ones; the same matrix without the failure carries no mark."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.report.lost_seeds import lost_seeds, seeds_mark
from benchctl.results.index import index_row, write_index
from tests.report.fixtures import train_config, write_train_run

N = 4
CORRECT = {"grpo": [1, 2, 1, 0], "ha_dw": [3, 3, 2, 2]}  # correct samples of n = 4 per problem, every seed
CLAIMS = (
    "claims:\n  - {paper: '2601.08521', claim: HA-DW improves GRPO, arm: ha_dw, baseline: grpo, k: 1, "
    "direction: greater, paper_effect: '+2 points'}\n"
)


def _results(tmp_path, failed: tuple[str, int] | None):
    """grpo and ha_dw x seeds 0-3 through the storage layer; the `failed` cell is in the index as the matrix
    records a failed cell (status failed, a reason, a run folder holding only error.txt)."""
    results, rows = tmp_path / "results", []
    for arm in CORRECT:
        for seed in range(4):
            config, run = train_config(arm, seed), results / "runs" / f"{arm}-s{seed}"
            if (arm, seed) == failed:
                run.mkdir(parents=True)
                (run / "error.txt").write_text("ray task failed: Task was killed due to the node running low on memory")
                reason = "out of memory, 3 runs: ray task failed: Task was killed due to the node running low on memory"
                rows.append(index_row(results, run, config, "failed", reason))
                continue
            correct = {f"q{i}": [j < c for j in range(N)] for i, c in enumerate(CORRECT[arm])}
            write_train_run(run, config, correct, rng_seed=seed)
            rows.append(index_row(results, run, config, "done"))
    write_index(results, rows)
    return results


def _report(tmp_path, failed):
    results, claims, out = _results(tmp_path, failed), tmp_path / "claims.yaml", tmp_path / "report"
    claims.write_text(CLAIMS)
    args = ["report", str(results), "--baseline", "grpo", "--claims", str(claims), "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    comparisons = pd.read_parquet(out / "comparisons.parquet")
    return comparisons, pd.read_parquet(out / "claims.parquet"), (out / "report.md").read_text()


MARK = "3 of 4 seeds: s3 failed (baseline grpo)"


@pytest.mark.slow  # two report builds of 8 runs: 10-25 s on the 2-core machine
def test_a_failed_baseline_cell_marks_every_comparison_and_claim_in_the_tables_and_parquet(tmp_path):
    comparisons, claims, page = _report(tmp_path, failed=("grpo", 3))
    assert set(comparisons["seeds"]) == {3} and set(comparisons["seeds_expected"]) == {4}
    assert set(comparisons["seeds_lost"]) == {"s3 failed (baseline grpo)"}
    assert claims[["seeds", "seeds_expected", "seeds_lost"]].iloc[0].tolist() == [3, 4, "s3 failed (baseline grpo)"]
    verdict = page[page.index("## verdict") : page.index("\n## ", page.index("## verdict") + 1)]
    assert f"| ha_dw | \u26a0 {MARK} |" in verdict  # the arm's row of the verdict table, seeds column
    assert "| grpo (baseline) | \u26a0 3 of 4 seeds: s3 failed |" in verdict  # the baseline's own row
    claims_section = page[page.index("claims of the papers") :]
    assert f"\u26a0 {MARK}" in claims_section.split("\n## ")[0]


@pytest.mark.slow  # two report builds of 8 runs: 10-25 s on the 2-core machine
def test_the_same_matrix_without_a_failure_carries_no_mark(tmp_path):
    comparisons, claims, page = _report(tmp_path, failed=None)
    assert set(comparisons["seeds"]) == set(comparisons["seeds_expected"]) == {4}
    assert set(comparisons["seeds_lost"]) == {""} and claims["seeds_lost"].iloc[0] == ""
    assert "| ha_dw | 4 |" in page and "\u26a0 3 of 4 seeds" not in page


@pytest.mark.parametrize(
    "arm_status,base_status,text",
    [
        ("failed", "done", "s4 failed"),
        ("done", "running", "s4 running (baseline grpo)"),
        ("failed", "failed", "s4 failed (both)"),
        ("done", "done", "s4 not evaluated"),
    ],
)
def test_each_lost_seed_says_which_side_lost_it(arm_status, base_status, text):
    def runs(status):
        return pd.DataFrame({"seed": [1, 2, 3, 4], "status": ["done"] * 3 + [status]})

    assert lost_seeds(runs(arm_status), runs(base_status), used=[1, 2, 3], baseline="grpo") == (4, text)
    own = lost_seeds(runs(arm_status), None, used=[1, 2, 3], baseline="grpo")  # an arm's own pass@k
    assert own == (4, "s4 not evaluated" if arm_status == "done" else f"s4 {arm_status}")
    assert seeds_mark(3, 4, text) == f"3 of 4 seeds: {text}"
    assert seeds_mark(4, 4, "") == ""
