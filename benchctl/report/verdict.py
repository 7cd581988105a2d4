"""The report's first table, read at a glance: one row per arm and task, one column per k, each cell the arm's
difference to its baseline in percentage points with its CI and Holm mark ("+2.6 [1.2, 4.2]*"); the baseline's
own row holds its pass@k.  Seeds and run health as in the full table (`render.main_table`), which keeps the
p-values, seed sd and power.  Formatting only: the numbers come from `stats`.
"""

from __future__ import annotations

import math

import pandas as pd

from benchctl.report.render import TOO_FEW, WARN, _arm_health, _num

BASELINE_MARK = " (baseline)"
UNCOMPARED_MARK = " (own pass@k: no baseline in its context)"


def _diff_cell(c) -> str:
    text = f"{100 * c['diff']:+.1f}"
    if not math.isnan(c["low"]):
        text += f" [{_num(c['low'])}, {_num(c['high'])}]"
    return text + ("*" if bool(c["significant"]) else "")


def _own_cell(r) -> str:
    return f"{_num(r['pass_at_k'])} [{_num(r['low'])}, {_num(r['high'])}]"


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


def _seeds(frame: pd.DataFrame) -> str:
    n = int(frame["seeds"].min()) if len(frame) else 0
    return f"{n} ({TOO_FEW})" if frame["too_few_seeds"].astype(bool).any() else str(n)


def _row(task, arm, kind, ks, passk, comparisons, health) -> dict:
    own = passk[(passk["arm"] == arm) & (passk["eval_task"] == task)].set_index("k")
    cmp = comparisons[(comparisons["arm"] == arm) & (comparisons["eval_task"] == task)].set_index("k")
    source = cmp if kind == "cmp" else own
    mark = {"base": BASELINE_MARK, "own": UNCOMPARED_MARK}.get(kind, "")
    row = {"task": task, "arm": arm + mark, "seeds": _seeds(source)}
    for k in ks:
        if k not in source.index:
            row[f"pass@{k}"] = "-"
        else:
            row[f"pass@{k}"] = _diff_cell(source.loc[k]) if kind == "cmp" else _own_cell(source.loc[k])
    state = health.get(arm, "ok")
    if kind == "cmp" and len(cmp) and cmp["baseline_health"].iloc[0] != "ok":
        state = f"{state}; baseline {cmp['baseline'].iloc[0]}: {cmp['baseline_health'].iloc[0]}"
    row["health"] = state if state == "ok" else WARN + state
    return row


def verdict_table(passk: pd.DataFrame, comparisons: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """task, arm, seeds, one column per k ('pass@k'), health: see the module docstring."""
    if passk.empty:
        return pd.DataFrame()
    ks = sorted(int(k) for k in passk["k"].unique())
    health = _arm_health(runs)
    rows = [
        _row(task, arm, kind, ks, passk, comparisons, health)
        for task in sorted(passk["eval_task"].unique())
        for arm, kind in _order(task, passk, comparisons)
    ]
    return pd.DataFrame(rows)


def verdict_legend(baseline: str | None, confidence: float, alpha: float, compared: bool) -> str:
    """The line under the verdict table's heading that says how to read a cell."""
    ci = f"{100 * confidence:g}% CI over seeds and problems"
    if not compared:
        return f"pass@k of each arm in percent [{ci}]; no baseline to compare with (--baseline {baseline})."
    return (
        f"Each cell: the arm minus its baseline ({baseline}, same context) in percentage points at that k, [{ci}], "
        f"paired by seed and problem; * significant after Holm's correction over every comparison at alpha "
        f"{alpha:g}. Baseline rows: the baseline's own pass@k in percent [CI]. seeds: seeds of the comparison; "
        f"'{TOO_FEW}' (under 3): an estimate, no test. health: {WARN.strip()} names the runs that are not ok "
        "(run health, under details). p-values, seed sd and seeds for 80% power: the full table under details."
    )
