"""Rich tables for lab results (rendering only; the numbers come from the entry points)."""

from __future__ import annotations

import math
from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.table import Table

from benchctl.lab.result import LabResult

Column = tuple[str, Callable[[dict], str]]


def _f(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}f}"


def _small(value: float) -> str:
    """Fixed point for ordinary values, scientific for tiny ones (float-rounding residues), — for NaN."""
    if not math.isfinite(value):
        return "—"
    return _f(value, 3) if value > 1e-3 else f"{value:.1e}"


def _pm(row: dict, key: str, err: str, digits: int = 4) -> str:
    """value, with ±error when the error is a positive number."""
    e = row.get(err)
    text = _f(row[key], digits)
    return text if not e or not math.isfinite(e) else f"{text}±{_f(e, digits)}"


def _se(row: dict) -> str:
    """Largest Monte Carlo standard error of the row's three expectations ('exact' for the exact path)."""
    if row["method"] == "exact":
        return "exact"
    return f"{max(row['adv_correct_se'], row['adv_wrong_se'], row['adv_any_se']):.1e}"


def _bias_columns() -> list[Column]:
    return [
        ("estimator", lambda r: r["estimator"]),
        ("G", lambda r: str(r["G"])),
        ("p", lambda r: f"{r['p']:g}"),
        ("E[A|S,✓]\n(true 1−p)", lambda r: f"{_f(r['adv_correct'], 3)} ({_f(r['true_correct'], 2)})"),
        ("E[A|S,✗]\n(true −p)", lambda r: f"{_f(r['adv_wrong'], 3)} ({_f(r['true_wrong'], 2)})"),
        ("bias\nr−p−A", lambda r: _f(r["bias_any"])),
        ("Lemma 2", lambda r: _f(r["lemma2"])),
        ("SE", _se),
    ]


def _symmetry_columns() -> list[Column]:
    return [
        ("estimator", lambda r: r["estimator"]),
        ("G", lambda r: str(r["G"])),
        ("p̂", lambda r: f"{r['p_hat']:.3f}"),
        ("Σ|A| ✓ / ✗", lambda r: f"{_f(r['sum_abs_correct'], 3)} / {_f(r['sum_abs_wrong'], 3)}"),
        ("Σ|A|", lambda r: _f(r["total"], 3)),
        ("ΣA", lambda r: _f(r["net"] + 0.0, 3)),
        ("2G√(p̂(1−p̂))", lambda r: _f(r["theory_grpo_pop"], 3)),
    ]


def _collapse_columns(result: LabResult) -> list[Column]:
    cols = [
        ("prompts", lambda r: r["dist"]),
        ("G", lambda r: str(r["G"])),
        ("P(all ✗)\n(1−p)^G", lambda r: _f(r["p_all_wrong"])),
        ("P(all ✓)\np^G", lambda r: _f(r["p_all_correct"])),
        ("E[ACR]", lambda r: _f(r["expected_acr"])),
        ("sd(ACR)\nper batch", lambda r: _f(r["acr_sd"])),
        ("draws per\nkept group", lambda r: _f(r["oversample"], 2)),
    ]
    if result.config.get("method") == "mc":
        cols.append(("MC ACR\n(SE)", lambda r: f"{_f(r['mc_acr'])} ({_f(r['mc_acr_se'])})"))
    return cols


def _bandit_columns(result: LabResult) -> list[Column]:
    ks = result.config["k"]
    cols = [("estimator", lambda r: r["estimator"]), ("step", lambda r: str(r["step"]))]
    cols += [(f"pass@{k}", lambda r, k=k: _pm(r, f"pass@{k}_mean", f"pass@{k}_ci95", 3)) for k in ks]
    cols += [
        ("entropy", lambda r: _pm(r, "entropy_mean", "entropy_ci95", 3)),
        ("correct never\nsampled", lambda r: _f(r["undiscovered_frac_mean"], 3)),
        ("prompts never\ncorrect", lambda r: _f(r["never_correct_prompts_mean"], 3)),
        ("Σ|A| per\ngroup", lambda r: _f(r["abs_adv_sum_mean"], 2)),
        ("max|Δh|\nnever-sampled", lambda r: _small(r["never_logit_maxdev_mean"])),
    ]
    return cols


def _anchor_columns() -> list[Column]:
    return [
        ("trajectory", lambda r: r["trajectory"]),
        ("gain", lambda r: r["gain"]),
        ("anchor at\nthe end", lambda r: _f(r["anchor_end"])),
        ("accuracy,\nlast 10", lambda r: _f(r["acc_last10"])),
        ("gap", lambda r: _f(r["gap"])),
        ("runs within\n0.03", lambda r: f"{r['within_0.03']:.0%}"),
        ("moved", lambda r: _f(r["moved"])),
        ("eta_t at\nthe end", lambda r: _f(r["eta_end"])),
        ("frozen", lambda r: "frozen" if r["frozen"] else "tracks"),
    ]


def _table(title: str, columns: list[Column], rows: list[dict]) -> Table:
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for header, fmt in columns:
        if header in ("estimator", "prompts"):
            width = min(24, max([len(fmt(row)) for row in rows] + [8]))
            table.add_column(header, justify="left", overflow="fold", min_width=width)
        else:
            table.add_column(header, justify="right", no_wrap=True)
    sizes: dict = {}
    for row in rows:
        sizes[row.get("estimator")] = sizes.get(row.get("estimator"), 0) + 1
    for i, row in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1].get("estimator") != row.get("estimator")
        section = last and i + 1 < len(rows) and sizes[row.get("estimator")] > 1  # separate multi-row groups
        table.add_row(*(fmt(row) for _, fmt in columns), end_section=section)
    return table


def _bandit_rows(result: LabResult) -> list[dict]:
    """Initial policy (step 0, identical for every estimator) and each estimator's final step."""
    last = max(r["step"] for r in result.rows)
    first = dict(next(r for r in result.rows if r["step"] == 0), estimator="(initial policy)")
    return [first] + [r for r in result.rows if r["step"] == last]


def findings_table(findings: list[dict]) -> Table:
    """The bandit's findings: claim, measured value, verdict."""
    table = Table(title="Findings (A-GRAE arXiv:2602.05548 claims in this model)", header_style="bold")
    for name in ("id", "source", "claim", "measured", "verdict"):
        table.add_column(name)
    colour = {"holds": "green", "does not hold": "red", "inconclusive": "yellow"}
    for f in findings:
        style = next((c for v, c in colour.items() if f["verdict"].startswith(v)), "dim")
        table.add_row(f["id"], f["source"], f["claim"], f["measured"], f"[{style}]{f['verdict']}[/{style}]")
    return table


def render(result: LabResult, console: Console | None = None) -> None:
    """Print the result's table (and bandit findings) and its notes."""
    console = console or Console()
    title = f"benchctl simulate {result.command}"
    columns = {"bias": _bias_columns, "symmetry": _symmetry_columns, "anchor": _anchor_columns}.get(result.command)
    if result.command == "collapse":
        console.print(_table(title, _collapse_columns(result), result.rows))
    elif result.command == "bandit":
        console.print(_table(title, _bandit_columns(result), _bandit_rows(result)))
        console.print(findings_table(result.findings))
    else:
        console.print(_table(title, columns(), result.rows))
    for note in result.notes:
        console.print(f"note: {note}", style="dim", markup=False, highlight=False)


def emit(
    result: LabResult, *, out=None, json_target: str | None = None, plot_dir=None, console: Console | None = None
) -> None:
    """Render and write a result: table (unless JSON goes to stdout), parquet, JSON file or '-', PNGs."""
    import os
    import sys

    if console is None:
        console = Console()
        if not console.is_terminal and "COLUMNS" not in os.environ:
            console = Console(width=160)  # files and pipes get the whole table [our choice]
    if json_target == "-":
        sys.stdout.write(result.to_json() + "\n")
        console = Console(stderr=True)
    else:
        render(result, console)
    written = []
    if out is not None:
        written.append(result.write_parquet(out))
    if json_target not in (None, "-"):
        from pathlib import Path

        path = Path(json_target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(result.to_json() + "\n")
        written.append(path)
    if plot_dir is not None:
        from benchctl.lab.plots import plot

        written.extend(plot(result, plot_dir))
    for path in written:
        console.print(f"wrote {path}", markup=False, highlight=False)
