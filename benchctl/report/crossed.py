"""The estimator x loss table: shown when the runs differ in their policy loss (`loss_resolved` of RUN/config.json,
e.g. a matrix with `losses: [ppo_clip, cispo, sapo]`).  Rows: estimators (an arm without its `+<loss>`, with its
context, e.g. `ha_dw(lambda_scale=1.5) G=8`); columns: losses (`loss_resolved`, `ppo_clip` for the trainer's
default); each cell the primary-k verdict of that arm against its baseline, read from the comparisons (no new
statistics): the difference in points [CI], `*` when significant after Holm, the mde; the baseline's own pass@k
marked `(baseline)`; an arm without a baseline in its context its own pass@k.  The baseline is the report's
(`--baseline`, same context), so a cell compares estimator and loss together against it.

Table (OUT/estimator_loss.parquet, one row per task and arm at the primary k; docs/schemas.md):
    eval_task, estimator, loss, arm, role (compared | baseline | own), baseline, k, pass_at_k, pass_at_k_low,
    pass_at_k_high, diff, low, high, significant, too_few_seeds, mde, unhealthy
"""

from __future__ import annotations

import math

import pandas as pd

from benchctl.report.render import WARN, Kind, TableCell, percent
from benchctl.report.verdict import BASELINE_MARK, _diff_cell

TITLE = "estimator x loss: the primary k's difference to the baseline [CI], * significant (Holm), mde"
LOSS_COLUMNS = ("loss", "loss_resolved")  # run columns naming the loss: left out of the estimator's name
COLUMNS = [
    *("eval_task", "estimator", "loss", "arm", "role", "baseline", "k", "pass_at_k", "pass_at_k_low"),
    *("pass_at_k_high", "diff", "low", "high", "significant", "too_few_seeds", "mde", "unhealthy"),
]


def varies(runs: pd.DataFrame) -> bool:
    """Whether the runs cross estimators with policy losses: some run chose its loss (`loss`, a matrix's `losses:`
    axis or `--loss`) and the losses used (`loss_resolved`) differ. A recipe's own clip range (DAPO's clip-higher)
    under the default loss is part of that arm, not a loss axis."""
    if "loss_resolved" not in runs or "loss" not in runs or runs["loss"].dropna().empty:
        return False
    return runs["loss_resolved"].dropna().astype(str).nunique() > 1


def arm_axes(runs: pd.DataFrame, group_by: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """arm -> (estimator, loss) in the runs' order: the estimator is the arm's label without the loss columns and
    without `+<loss>` (how a matrix names a crossed cell, `matrix.Cell.arm`); the loss its `loss_resolved`."""
    from benchctl.report.load import arm_label

    keep = tuple(c for c in group_by if c not in LOSS_COLUMNS)
    out = {}
    for row in runs.drop_duplicates("arm").to_dict("records"):
        name = arm_label(row, keep) if keep else "-"
        loss = row.get("loss")
        if isinstance(loss, str) and loss:
            name = name.replace(f"+{loss}", "", 1)
        resolved = row.get("loss_resolved")
        out[row["arm"]] = (name, resolved if isinstance(resolved, str) else "-")
    return out


def _row(task: str, arm: str, axes: tuple[str, str], k: int, own, cmp, bases: set[str]) -> dict:
    nan = math.nan
    row = dict(zip(COLUMNS, (task, *axes, arm, "own", None, k, own.pass_at_k, own.low, own.high)))
    row.update(diff=nan, low=nan, high=nan, significant=False, too_few_seeds=bool(own.too_few_seeds))
    row.update(mde=nan, unhealthy=False)
    if cmp is not None:
        row.update(role="compared", baseline=cmp["baseline"], diff=cmp["diff"], low=cmp["low"], high=cmp["high"])
        row.update(significant=bool(cmp["significant"]), too_few_seeds=bool(cmp["too_few_seeds"]))
        row.update(mde=cmp["mde"], unhealthy=bool(cmp["unhealthy"]))
    elif arm in bases:
        row["role"] = "baseline"
    return row


def estimator_loss_table(
    passk: pd.DataFrame, comparisons: pd.DataFrame, runs: pd.DataFrame, group_by: tuple[str, ...], primary_k: int
) -> pd.DataFrame:
    """The table of the module docstring; empty (its columns) when the runs share one loss or nothing was
    evaluated.  k: the primary k (the smallest k evaluated when the primary one was not)."""
    if passk.empty or not varies(runs):
        return pd.DataFrame(columns=COLUMNS)
    axes = arm_axes(runs, group_by)
    ks = sorted(int(k) for k in passk["k"].unique())
    k = primary_k if primary_k in ks else ks[0]
    cmp = comparisons[comparisons["k"] == k] if not comparisons.empty else comparisons
    by_arm = {(r["arm"], r["eval_task"]): r for r in cmp.to_dict("records")}
    bases = set(cmp["baseline"]) if not cmp.empty else set()
    order = {arm: i for i, arm in enumerate(axes)}
    own = passk[(passk["k"] == k) & passk["arm"].isin(order)]
    own = own.assign(order=own["arm"].map(order)).sort_values(["eval_task", "order"])
    rows = [
        _row(r.eval_task, r.arm, axes[r.arm], k, r, by_arm.get((r.arm, r.eval_task)), bases) for r in own.itertuples()
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(r: dict) -> TableCell:
    if r["role"] == "compared":
        cell = _diff_cell(r)
        return TableCell(WARN + cell, cell.kind) if r["unhealthy"] else cell
    text = f"{percent(r['pass_at_k'])} [{percent(r['pass_at_k_low'])}, {percent(r['pass_at_k_high'])}]"
    if r["role"] == "baseline":
        return TableCell(text + BASELINE_MARK, Kind.BASELINE)
    return TableCell(text + " (no baseline)", Kind.NUMBER)


def estimator_loss_view(table: pd.DataFrame) -> pd.DataFrame:
    """task, estimator, then one column per loss (in the runs' order): each cell as the module docstring says;
    '-' where the matrix has no such arm.  Empty for an empty table."""
    if table.empty:
        return pd.DataFrame()
    losses = list(dict.fromkeys(table["loss"]))
    rows: dict[tuple, dict] = {}
    for r in table.to_dict("records"):
        key = (r["eval_task"], r["estimator"])
        blank = {loss: TableCell("-", Kind.NUMBER) for loss in losses}
        rows.setdefault(key, {"task": key[0], "estimator": key[1], **blank})[r["loss"]] = _cell(r)
    return pd.DataFrame(list(rows.values()), columns=["task", "estimator", *losses])


def legend(table: pd.DataFrame, baseline: str | None) -> str:
    """The line under the table's heading."""
    k = int(table["k"].iloc[0]) if len(table) else 1
    return (
        f"pass@{k} (the primary k) of each estimator (rows) trained with each policy loss (columns), against the "
        f"baseline ({baseline}, same context): the difference in points [CI], * significant after Holm, mde; "
        f"'{BASELINE_MARK.strip()}': the baseline's own pass@{k} [CI]; '(no baseline)': an arm's own pass@{k}. "
        f"From comparisons.parquet (the verdict's numbers); {WARN}marks a comparison with runs that are not ok."
    )
