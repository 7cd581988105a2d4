"""`benchctl report`: who beats the baseline, on which task, at which k, by how much, at what cost.

Library entry point: `build_report(ReportConfig) -> ReportResult` (nothing printed).  Reads run folders
through the storage layer (`benchctl.results`), computes the numbers (`stats`, `rl`), draws (`plots`) and, with
`out`, writes (`render`):

    OUT/report.md, OUT/report.html (self-contained, plots inline), OUT/plots/<name>.png
    OUT/runs.parquet, passk.parquet, comparisons.parquet, aggregates.parquet, improvement.parquet,
    OUT/cost.parquet, training.parquet, eval_curve.parquet      (schemas: docs/report.md)
    OUT/compute_fits.parquet, compute_comparisons.parquet      (ScaleRL fits, `compute`), claims.parquet (--claims)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from benchctl.report.config import ReportConfig
from benchctl.report.load import ReportData, load_report_data
from benchctl.report.tuning import select_settings

__all__ = ["ReportConfig", "ReportResult", "build_report"]

REPORT_KIND = "benchctl-report"


@dataclass
class ReportResult:
    """What `build_report` returns: every table, the figures (name -> PNG), notes, and the written files."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, bytes]
    notes: list[str]
    out: Path | None = None
    files: list[Path] = field(default_factory=list)

    def rich_tables(self) -> list:
        """The terminal view: the main table, the rliable aggregates and the cost table."""
        from benchctl.report import render
        from benchctl.report.render import cost_view, rich_table

        out = [
            rich_table(
                render.main_view(self.tables["main"]) if not self.tables["main"].empty else self.tables["main"],
                "pass@k (percent) [CI over seeds and problems]; diff vs baseline, paired by seed and problem; "
                "* = significant after Holm (only with >= 3 seeds); seeds@80%: seeds for 80% power; run health",
                wrap=("health",),
            )
        ]
        if not self.tables["rliable"].empty:
            out.append(
                rich_table(
                    self.tables["rliable"],
                    "rliable over runs x tasks (percent) [stratified bootstrap CI]; P(improvement) over the baseline",
                )
            )
        runs = self.tables.get("runs")
        unhealthy = render.health_view(runs) if runs is not None else pd.DataFrame()
        if not unhealthy.empty:
            title = "runs that are not ok (docs/report.md, run health)"
            out.append(rich_table(unhealthy.drop(columns="path"), title, wrap=("evidence",)))
        cost = self.tables["cost"]
        if not cost.empty:
            out.append(rich_table(cost_view(cost), "cost (means over runs; every phase in cost.parquet)"))
        return out


def _training_table(data: ReportData) -> pd.DataFrame:
    if data.metrics.empty:
        return pd.DataFrame()
    m = data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id").drop(columns="run_id")
    long = m.melt(id_vars=["arm", "step"], var_name="metric", value_name="value").dropna(subset=["value"])
    return long.groupby(["arm", "metric", "step"])["value"].agg(["mean", "min", "max", "count"]).reset_index()


def _compute(data: ReportData, config: ReportConfig, claim_list=None) -> tuple[dict, dict[str, bytes]]:
    from benchctl.report import claims, compute, plots, render, rl, stats

    passk = stats.passk_table(data, config)
    comparisons = stats.comparisons_table(data, config)
    pairs = stats.baseline_pairs(data, config.baseline)
    summary = rl.rliable_summary(data, pairs, config)
    points = compute.curve_points(data.eval_curve, data.runs)
    fits, replicates = compute.compute_fits(points, config.resamples, config.seed, config.confidence)
    fit_comparisons = compute.compare_fits(fits, replicates, pairs, config.confidence, config.seed)
    tables = {
        "main": render.main_table(passk, comparisons, data.runs),
        "rliable": render.rliable_table(summary.aggregates, summary.improvement),
        "runs": data.runs,
        "passk": passk,
        "comparisons": comparisons,
        "aggregates": summary.aggregates,
        "improvement": summary.improvement,
        "cost": stats.cost_table(data),
        "training": _training_table(data),
        "eval_curve": data.eval_curve,
        "settings": data.settings,
        "compute_fits": fits,
        "compute_comparisons": fit_comparisons,
    }
    if claim_list:
        tables["claims"] = claims.evaluate_claims(data, claim_list, config.confidence, config.seed)
    figures = {
        "compute_curves": plots.compute_curves(points, fits),
        "passk_curves": plots.passk_curves(passk),
        "training_curves": plots.training_curves(data),
        "pass1_vs_rollout_tokens": plots.pass1_vs_tokens(data) if points.empty else None,
        "rliable": plots.rliable_figure(summary),
    }
    return tables, {k: v for k, v in figures.items() if v is not None}


def _sections(tables: dict, config: ReportConfig) -> list:
    from benchctl.report import render
    from benchctl.report.stats import __doc__ as stats_doc

    method = stats_doc.split("Statistics [our choices, stated in every output]:")[1].split("Why this test")[0]
    bullets = "".join(f"\n* {' '.join(item.split())}" for item in method.split("\n* ") if item.strip())
    sections = []
    if "claims" in tables:
        sections.append(
            (
                "claims of the papers, tested",
                "Each claim's effect (arm minus baseline; relative claims as a fraction), its seed-level interval and "
                "verdict: holds when the interval lies on the claimed side, does not hold when it lies on the other, "
                "inconclusive otherwise or with fewer than 3 seeds (benchctl/report/claims.py).",
                render.claims_view(tables["claims"]),
            )
        )
    sections += [
        (
            "pass@k and the paired difference to the baseline",
            f"Baseline: {config.baseline}. Method (docs/report.md):{bullets}",
            tables["main"],
        ),
        ("run health", render.health_text(tables["runs"], tables["comparisons"]), render.health_view(tables["runs"])),
        (
            "compute curves (ScaleRL fit)",
            "R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) fitted to every seed's held-out pass@1 against rollout tokens "
            "C (Khatri et al. 2025, arXiv 2510.13786); A: asymptote, B: efficiency, C_mid: tokens to half the gain; "
            "R0 the step-0 score. Intervals: bootstrap over seeds. Arms are compared on A, then at equal A on C_mid. "
            + (
                ""
                if len(tables["compute_fits"])
                else "No run was evaluated at 3 or more compute points "
                "(train with --eval-every-tokens): nothing to fit."
            ),
            render.compute_view(tables["compute_fits"], tables["compute_comparisons"]),
        ),
        (
            "rliable summary (Agarwal et al. 2021)",
            "IQM, mean, median and optimality gap of pass@k over runs x "
            "tasks (percent), stratified-bootstrap intervals; P(> baseline): probability that a run of the arm beats "
            "a run of the baseline on a task, averaged over tasks (smallest k).",
            tables["rliable"],
        ),
        (
            "cost",
            "Rollout tokens and samples, steps, seconds per phase (means over runs), final pass@1.",
            tables["cost"],
        ),
    ]
    if len(tables["settings"]):
        sections.append(
            (
                "settings swept within an arm (sensitivity)",
                "Each arm's swept training settings: mean pass@k (smallest k, percent scale 0-1) on the validation "
                "task, where the chosen one was picked, and on the test tasks (benchctl/report/tuning.py).",
                tables["settings"],
            )
        )
    return sections


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """A frame as an arrow table; object columns of mixed types become nullable strings."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in frame[col]]
    return pa.Table.from_pandas(frame, preserve_index=False)


def _write(result: ReportResult, config: ReportConfig) -> None:
    from benchctl.report import render
    from benchctl.results.store import write_atomic, write_json, write_table

    out = Path(config.out)
    record = {
        f.name: {"value": getattr(config, f.name), "source": config.sources.get(f.name, "default")}
        for f in dataclasses.fields(config)
        if f.name != "sources"
    }
    write_json(out / "config.json", {"kind": REPORT_KIND, "config": record})
    for name, frame in result.tables.items():
        if name not in ("main", "rliable"):
            path = out / f"{name}.parquet"
            write_table(path, _arrow(frame))
            result.files.append(path)
    for name, png in result.figures.items():
        path = out / "plots" / f"{name}.png"
        write_atomic(path, lambda tmp, png=png: tmp.write_bytes(png))
        result.files.append(path)
    sections, title = _sections(result.tables, config), "benchctl report"
    for name, text in (
        ("report.md", render.markdown_page(title, sections, result.figures, result.notes)),
        ("report.html", render.html_page(title, sections, result.figures, result.notes)),
    ):
        write_atomic(out / name, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))
        result.files.append(out / name)


def build_report(config: ReportConfig) -> ReportResult:
    """Read, compute, draw and (with `config.out`) write the report; BenchctlError on bad input."""
    from benchctl.report.claims import read_claims

    claim_list = read_claims(config.claims) if config.claims else None  # a bad file fails before any reading
    data = load_report_data(config)
    data.settings = select_settings(data, config.select_on)  # each arm at its best swept setting (validation)
    tables, figures = _compute(data, config, claim_list)
    result = ReportResult(tables, figures, list(data.notes), Path(config.out) if config.out else None)
    if config.out:
        _write(result, config)
    return result
