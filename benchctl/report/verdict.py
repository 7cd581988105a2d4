"""The report's first table, read at a glance: one row per arm and task, one column per k, each cell the arm's
difference to its baseline in percentage points with its CI, the Holm mark at the primary k, and the minimum
detectable effect ("+2.6 [1.2, 4.2]* (mde 2.1)"); the baseline's own row holds its pass@k.  The primary k's column
says so; the others are secondary (no mark).  Seeds and run health as in the full table (`render.main_table`),
which keeps the p-values and seed sd.  Formatting only: the numbers come from `stats`; each cell carries its
`render.Kind`.
"""

from __future__ import annotations

import math

import pandas as pd

from benchctl.report.lost_seeds import seeds_mark
from benchctl.report.render import (
    TOO_FEW,
    WARN,
    Kind,
    TableCell,
    diff_kind,
    health_by_arm,
    health_cell,
    mde_text,
    percent,
)

BASELINE_MARK = " (baseline)"
UNCOMPARED_MARK = " (own pass@k: no baseline in its context)"
PRIMARY_MARK = " (primary)"


def _diff_cell(c) -> TableCell:
    text = f"{100 * c['diff']:+.1f}"
    if not math.isnan(c["low"]):
        text += f" [{percent(c['low'])}, {percent(c['high'])}]"
    text += "*" if bool(c["significant"]) else ""
    mde = c.get("mde", math.nan)
    return TableCell(text + ("" if math.isnan(mde) else f" (mde {mde_text(mde)})"), diff_kind(c))


def _own_cell(r) -> TableCell:
    return TableCell(f"{percent(r['pass_at_k'])} [{percent(r['low'])}, {percent(r['high'])}]", Kind.BASELINE)


def _order(task: str, passk: pd.DataFrame, comparisons: pd.DataFrame) -> list[tuple[str, str]]:
    """(arm, kind) rows of one task: each baseline ('base') followed by its arms ('cmp'), then the others."""
    arms = sorted(passk.loc[passk["eval_task"] == task, "arm"].unique())
    cmp = comparisons[comparisons["eval_task"] == task] if not comparisons.empty else comparisons
    rows = []
    for base in sorted(set(cmp["baseline"])) if not cmp.empty else ():
        rows.append((base, "base"))
        rows += [(arm, "cmp") for arm in sorted(set(cmp.loc[cmp["baseline"] == base, "arm"]))]
    placed = {arm for arm, _ in rows}
    return rows + [(arm, "own") for arm in arms if arm not in placed]


def _seeds(frame: pd.DataFrame) -> TableCell:
    """The fewest seeds of the row's cells; a comparison short of the seeds expected says so, marked
    (`3 of 4 seeds: s4 failed`, `benchctl.report.lost_seeds`), also when that leaves too few."""
    n = int(frame["seeds"].min()) if len(frame) else 0
    few = f" ({TOO_FEW})" if frame["too_few_seeds"].astype(bool).any() else ""
    if len(frame) and "seeds_expected" in frame:
        short = frame.loc[frame["seeds"] == n].iloc[0]
        mark = seeds_mark(n, short["seeds_expected"], short["seeds_lost"])
        if mark:
            return TableCell(f"{WARN}{mark}{few}", Kind.WARN)
    return TableCell(f"{n}{few}", Kind.FEW) if few else TableCell(str(n), Kind.NUMBER)


def _column(k: int, primary_k: int | None) -> str:
    return f"pass@{k}" + (PRIMARY_MARK if k == primary_k else "")


def _row(task, arm, kind, ks, primary_k, passk, comparisons, health) -> dict:
    own = passk[(passk["arm"] == arm) & (passk["eval_task"] == task)].set_index("k")
    cmp = comparisons[(comparisons["arm"] == arm) & (comparisons["eval_task"] == task)].set_index("k")
    source = cmp if kind == "cmp" else own
    mark = {"base": BASELINE_MARK, "own": UNCOMPARED_MARK}.get(kind, "")
    row = {"task": task, "arm": arm + mark, "seeds": _seeds(source)}
    for k in ks:
        if k not in source.index:
            row[_column(k, primary_k)] = TableCell("-", Kind.NUMBER)
        else:
            cell = _diff_cell(source.loc[k]) if kind == "cmp" else _own_cell(source.loc[k])
            row[_column(k, primary_k)] = cell
    state = health.get(arm, "ok")
    if kind == "cmp" and len(cmp) and cmp["baseline_health"].iloc[0] != "ok":
        state = f"{state}; baseline {cmp['baseline'].iloc[0]}: {cmp['baseline_health'].iloc[0]}"
    row["health"] = health_cell(state)
    return row


def verdict_table(
    passk: pd.DataFrame, comparisons: pd.DataFrame, runs: pd.DataFrame | None = None, primary_k: int | None = 1
) -> pd.DataFrame:
    """task, arm, seeds, one column per k ('pass@k', the primary one 'pass@k (primary)'), health: see the module
    docstring."""
    if passk.empty:
        return pd.DataFrame()
    ks = sorted(int(k) for k in passk["k"].unique())
    primary_k = primary_k if not comparisons.empty else None
    health = health_by_arm(runs)
    rows = [
        _row(task, arm, kind, ks, primary_k, passk, comparisons, health)
        for task in sorted(passk["eval_task"].unique())
        for arm, kind in _order(task, passk, comparisons)
    ]
    return pd.DataFrame(rows)


def verdict_legend(
    baseline: str | None, confidence: float, alpha: float, compared: bool, primary_k: int = 1, population="problems"
) -> str:
    """The line under the verdict table's heading that says how to read a cell."""
    over = "seeds and problems" if population == "problems" else "seeds, this problem set fixed"
    ci = f"{100 * confidence:g}% CI over {over}"
    if not compared:
        return f"pass@k of each arm in percent [{ci}]; no baseline to compare with (--baseline {baseline})."
    return (
        f"Each cell: the arm minus its baseline ({baseline}, same context) in percentage points at that k, [{ci}], "
        f"paired by seed and problem. Primary: pass@{primary_k}; * significant after Holm's correction over the "
        f"primary family (every arm, task and context at k = {primary_k}) at alpha {alpha:g}; other k are "
        "secondary (CI only, no mark). mde: the smallest true difference this comparison detects with 80% power "
        "(at alpha / family size for the primary k): an unmarked cell does not rule out differences below it. "
        f"Baseline rows: the baseline's own pass@k in percent [CI]. seeds: seeds of the comparison; '{TOO_FEW}' "
        f"(under 3): an estimate, no test; {WARN}'3 of 4 seeds: s4 failed': fewer seeds than the inputs list for "
        f"the arm and its baseline, and why each is missing. health: {WARN}names the runs that are not ok (run "
        "health, under details). p-values and seed sd: the full table under details."
    )
