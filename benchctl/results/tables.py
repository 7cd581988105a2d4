"""Result tables shared by `benchctl eval` and `benchctl grade`: per-sample rows, per-problem (n, c), summary.

Per-sample schema (`SAMPLE_SCHEMA`): problem_id, sample_index, completion, extracted, correct, reason,
detail, num_tokens, finish_reason (the last two are null for `grade`: the completions came from elsewhere).
Per-problem: problem_id, n, c, mean (= c/n), then `pass@{k}` and `maj@{k}` float columns for every k.
Summary (one row per k): task, model, k, problems, n_min, n_max, pass_at_k (+ _low/_high), maj_at_k
(+ _low/_high), mean_at_n (+ _low/_high, repeated on each row), resamples, confidence.  CIs: percentile
bootstrap over problems, the same resampled problem sets for all columns (`benchctl.metrics.bootstrap_ci`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from benchctl import metrics

SAMPLE_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("sample_index", pa.int32()),
        ("completion", pa.string()),
        ("extracted", pa.string()),
        ("correct", pa.bool_()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("num_tokens", pa.int32()),
        ("finish_reason", pa.string()),
    ]
)
STAT_COLUMNS = ["problem_id", "sample_index", "extracted", "correct"]  # what per-problem stats read back


@dataclass(frozen=True)
class SampleRow:
    """One completion to grade: which problem, which sample, the text, and engine facts (None for `grade`)."""

    problem_id: str
    sample_index: int
    completion: str
    num_tokens: int | None = None
    finish_reason: str | None = None


def sample_table(rows: Sequence[SampleRow], verdicts: Sequence) -> pa.Table:
    """Rows + their verdicts (objects with extracted, correct, reason, detail: `benchctl.grading.verdict.Verdict`)
    -> a per-sample table in `SAMPLE_SCHEMA`."""
    cols = {
        "problem_id": [r.problem_id for r in rows],
        "sample_index": [r.sample_index for r in rows],
        "completion": [r.completion for r in rows],
        "extracted": [v.extracted for v in verdicts],
        "correct": [v.correct for v in verdicts],
        "reason": [v.reason for v in verdicts],
        "detail": [v.detail for v in verdicts],
        "num_tokens": [r.num_tokens for r in rows],
        "finish_reason": [r.finish_reason for r in rows],
    }
    return pa.table(cols, schema=SAMPLE_SCHEMA)


@dataclass(frozen=True)
class ProblemStats:
    """Per-problem facts kept while streaming over sample parts (never the completions)."""

    n: int
    c: int
    answers: tuple  # extracted answers of the first max-k samples, in sample order
    correct: tuple  # their verdicts


def collect_problem_stats(parts: Iterable[pa.Table], keep: int) -> dict[str, ProblemStats]:
    """Stream over parts (STAT_COLUMNS), keeping n, c and the first `keep` answers per problem.

    A problem found in several parts keeps the latest part's samples (parts hold whole problems).
    """
    stats: dict[str, ProblemStats] = {}
    for table in parts:
        order = np.lexsort((np.asarray(table.column("sample_index")), np.asarray(table.column("problem_id"))))
        table = table.take(pa.array(order))
        ids = table.column("problem_id").to_pylist()
        answers, correct = table.column("extracted").to_pylist(), table.column("correct").to_pylist()
        start = 0
        for end in range(1, len(ids) + 1):
            if end == len(ids) or ids[end] != ids[start]:
                block_ok = correct[start:end]
                stats[ids[start]] = ProblemStats(
                    end - start, int(sum(block_ok)), tuple(answers[start:end][:keep]), tuple(block_ok[:keep])
                )
                start = end
    return stats


def problem_table(ids: Sequence[str], stats: dict[str, ProblemStats], ks: Sequence[int]) -> pa.Table:
    """Per-problem table for `ids` (in that order): n, c, mean, pass@k and maj@k per k."""
    n = np.array([stats[i].n for i in ids], dtype=np.int64)  # (P,)
    c = np.array([stats[i].c for i in ids], dtype=np.int64)  # (P,)
    ks_arr = np.asarray(ks, dtype=np.int64)  # (K,)
    passk = metrics.pass_at_k(n, c, ks_arr) if len(ids) else np.zeros((0, len(ks)))  # (P, K)
    majk = (
        metrics.maj_at_k([stats[i].answers for i in ids], [stats[i].correct for i in ids], ks_arr)
        if len(ids)
        else np.zeros((0, len(ks)))
    )  # (P, K)
    cols = {
        "problem_id": pa.array(list(ids), pa.string()),
        "n": n,
        "c": c,
        "mean": metrics.mean_at_n(n, c) if len(ids) else np.zeros(0),
    }
    cols.update({f"pass@{k}": passk[:, j] for j, k in enumerate(ks)})
    cols.update({f"maj@{k}": majk[:, j] for j, k in enumerate(ks)})
    return pa.table(cols)


def summary_table(
    problems: pa.Table, ks: Sequence[int], *, task: str, model: str, resamples: int, confidence: float, seed: int
) -> pa.Table:
    """One row per k: means over problems and percentile-bootstrap CIs (same resamples for every column)."""
    n = np.asarray(problems.column("n"))
    names = ["mean"] + [f"pass@{k}" for k in ks] + [f"maj@{k}" for k in ks]
    values = np.stack([np.asarray(problems.column(c), dtype=np.float64) for c in names], axis=1)  # (P, 1+2K)
    mean = values.mean(axis=0)  # (1+2K,)
    low, high = metrics.bootstrap_ci(values, resamples=resamples, confidence=confidence, seed=seed)
    nk = len(ks)
    rows = {
        "task": [task] * nk,
        "model": [model] * nk,
        "k": list(ks),
        "problems": [len(n)] * nk,
        "n_min": [int(n.min())] * nk,
        "n_max": [int(n.max())] * nk,
    }
    for label, sl in (("pass_at_k", slice(1, 1 + nk)), ("maj_at_k", slice(1 + nk, 1 + 2 * nk))):
        rows[label], rows[f"{label}_low"], rows[f"{label}_high"] = mean[sl], low[sl], high[sl]
    for suffix, arr in (("", mean), ("_low", low), ("_high", high)):
        rows[f"mean_at_n{suffix}"] = [float(arr[0])] * nk
    rows["resamples"], rows["confidence"] = [resamples] * nk, [confidence] * nk
    return pa.table(rows)
