"""Per-problem and summary tables built by streaming sample parts (shared by eval and grade)."""

import numpy as np
import pyarrow as pa
import pytest

from benchctl.grading.verdict import Verdict
from benchctl.metrics import bootstrap_ci, pass_at_k
from benchctl.results.tables import (
    SAMPLE_SCHEMA,
    SampleRow,
    collect_problem_stats,
    problem_table,
    sample_table,
    summary_table,
)


def _part(rows):
    """rows: (problem_id, sample_index, extracted, correct)."""
    samples = [SampleRow(pid, j, f"completion {extracted}") for pid, j, extracted, _ in rows]
    verdicts = [
        Verdict.of("correct" if ok else ("wrong" if extracted else "no_answer"), extracted)
        for _, _, extracted, ok in rows
    ]
    return sample_table(samples, verdicts)


def test_stats_follow_sample_index_order_not_row_order():
    part = _part([("a", 2, "9", False), ("a", 0, "7", True), ("a", 1, "9", False), ("b", 0, None, False)])
    stats = collect_problem_stats([part], keep=2)
    assert (stats["a"].n, stats["a"].c, stats["a"].answers, stats["a"].correct) == (3, 1, ("7", "9"), (True, False))
    assert (stats["b"].n, stats["b"].c, stats["b"].answers) == (1, 0, (None,))


def test_a_problem_rewritten_in_a_later_part_takes_the_later_samples():
    first = _part([("a", 0, "1", False), ("a", 1, "1", False)])
    second = _part([("a", 0, "2", True), ("a", 1, "2", True)])
    assert collect_problem_stats([first, second], keep=2)["a"].c == 2


def test_problem_and_summary_tables_match_the_metrics_directly():
    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(40)]
    rows = []
    for pid in ids:
        p = rng.random()
        rows += [(pid, j, str(rng.integers(0, 3)), bool(rng.random() < p)) for j in range(8)]
    stats = collect_problem_stats([_part(rows[:160]), _part(rows[160:])], keep=8)
    ks = (1, 2, 4, 8)
    problems = problem_table(ids, stats, ks)
    n, c = np.asarray(problems.column("n")), np.asarray(problems.column("c"))
    assert problems.column_names == [
        "problem_id",
        "n",
        "c",
        "mean",
        "pass@1",
        "pass@2",
        "pass@4",
        "pass@8",
        "maj@1",
        "maj@2",
        "maj@4",
        "maj@8",
    ]
    np.testing.assert_allclose(np.asarray(problems.column("pass@4")), pass_at_k(n, c, 4))
    summary = summary_table(problems, ks, task="t", model="m", resamples=300, confidence=0.9, seed=1).to_pylist()
    assert [r["k"] for r in summary] == list(ks) and summary[0]["problems"] == 40
    assert summary[2]["pass_at_k"] == pytest.approx(pass_at_k(n, c, 4).mean())
    assert summary[0]["mean_at_n"] == pytest.approx((c / n).mean()) == pytest.approx(summary[0]["pass_at_k"])
    low, high = bootstrap_ci(pass_at_k(n, c, 8), resamples=300, confidence=0.9, seed=1)
    # every column is resampled with the same problem sets, so one column alone gives the same interval
    assert (summary[3]["pass_at_k_low"], summary[3]["pass_at_k_high"]) == (pytest.approx(low), pytest.approx(high))
    assert summary[3]["pass_at_k_low"] <= summary[3]["pass_at_k"] <= summary[3]["pass_at_k_high"]
    assert all(r["maj_at_k_low"] <= r["maj_at_k"] <= r["maj_at_k_high"] for r in summary)


def test_sample_table_rejects_nothing_and_keeps_nulls():
    table = sample_table([SampleRow("a", 0, "x", None, None)], [Verdict.of("no_answer", None)])
    assert table.schema.equals(SAMPLE_SCHEMA)
    assert table.to_pylist()[0]["extracted"] is None and table.to_pylist()[0]["num_tokens"] is None
    assert isinstance(table, pa.Table)
