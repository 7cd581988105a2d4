"""`benchctl report`: who beats the baseline, on which task, at which k, by how much, at what cost.

Library entry point: `build_report(ReportConfig) -> ReportResult` (nothing printed).  Reads run folders
through the storage layer (`benchctl.results`), computes the numbers (`stats`, `rl`), draws (`plots`) and, with
`out`, writes (`render`):

    OUT/report.md, OUT/report.html (self-contained, plots inline; section order: `sections`), OUT/plots/<name>.png
    OUT/runs.parquet, passk.parquet, comparisons.parquet, aggregates.parquet, improvement.parquet,
    OUT/cost.parquet, training.parquet, eval_curve.parquet      (schemas: docs/schemas.md)
    OUT/compute_fits.parquet, compute_comparisons.parquet      (ScaleRL fits, `compute`), claims.parquet (--claims)
    OUT/estimator_loss.parquet      (the estimator x loss table, `crossed`; only when the runs' losses differ)
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
TITLE = "benchctl report"
VIEWS = ("verdict", "main", "rliable")  # formatted tables: on the page and the terminal, not written as parquet


@dataclass
class ReportResult:
    """What `build_report` returns: every table, the figures (name -> PNG), notes, and the written files."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, bytes]
    notes: list[str]
    out: Path | None = None
    files: list[Path] = field(default_factory=list)
    legend: str = ""  # how to read the verdict table (its title in the terminal, its caption on the page)

    def rich_tables(self) -> list:
        """The terminal view, in the page's order: the verdict (arm x k differences to the baseline), the estimator x
        loss table (when the losses differ), the claims,
        the compute fits, the cost, then the full per-k table, the rliable aggregates and the runs that are not ok."""
        from benchctl.report import crossed, render
        from benchctl.report.render import cost_view, rich_table

        t = self.tables
        out = []
        verdict = t.get("verdict")
        if verdict is not None and not verdict.empty:
            out.append(rich_table(verdict, self.legend, wrap=("health",)))
        if "estimator_loss" in t and len(t["estimator_loss"]):
            view = crossed.estimator_loss_view(t["estimator_loss"])
            out.append(rich_table(view, crossed.TITLE, wrap=tuple(view.columns[2:])))
        if "claims" in t:
            title = "claims of the papers, tested (each paper's own effect: the page)"
            out.append(rich_table(render.claims_terminal_view(t["claims"]), title, wrap=("claim", "verdict")))
        fits = t.get("compute_fits")
        if fits is not None and len(fits):
            view = render.compute_view(fits, t["compute_comparisons"])
            out.append(rich_table(view, "compute curves: ScaleRL fit per arm [CI over seeds]"))
        if not t["cost"].empty:
            out.append(rich_table(cost_view(t["cost"]), "cost (means over runs; every phase in cost.parquet)"))
        if not t["main"].empty:
            title = (
                "details: pass@k (percent) [CI over seeds and problems]; diff vs baseline, paired by seed and "
                "problem; * = significant after Holm at the primary k (only with >= 3 seeds); mde: detectable with "
                "80% power"
            )
            out.append(rich_table(render.main_view(t["main"]), title, wrap=("health",)))
        if not t["rliable"].empty:
            title = "rliable over runs x tasks (percent) [stratified bootstrap CI]; P(improvement) over the baseline"
            out.append(rich_table(t["rliable"], title))
        unhealthy = render.health_view(t["runs"]) if "runs" in t else pd.DataFrame()
        if not unhealthy.empty:
            title = "runs that are not ok, or noted (docs/report.md, run health)"
            out.append(rich_table(unhealthy.drop(columns="path"), title, wrap=("evidence",)))
        return out


def _training_table(data: ReportData) -> pd.DataFrame:
    if data.metrics.empty:
        return pd.DataFrame()
    m = data.metrics.merge(data.runs[["run_id", "arm"]], on="run_id").drop(columns="run_id")
    long = m.melt(id_vars=["arm", "step"], var_name="metric", value_name="value").dropna(subset=["value"])
    return long.groupby(["arm", "metric", "step"])["value"].agg(["mean", "min", "max", "count"]).reset_index()


def _figures(data: ReportData, passk, points, fits, summary, pairs) -> dict[str, bytes]:
    from benchctl.report import plots, training_plots
    from benchctl.report.figstyle import arm_styles, png

    styles = arm_styles(data.runs, data.group_by, data.arm_column, {base for _, base in pairs})
    figures = {
        "compute_curves": plots.compute_curves(points, fits, styles),
        "pass1_vs_rollout_tokens": plots.pass1_vs_tokens(data, styles) if points.empty else None,
        "passk_curves": plots.passk_curves(passk, styles),
        "training_curves": training_plots.training_curves(data, styles),
        "diagnostics": training_plots.diagnostics(data, styles),
        "rliable": plots.rliable_figure(summary, styles),
    }
    return {name: png(fig) for name, fig in figures.items() if fig is not None}


def _compute(data: ReportData, config: ReportConfig, claim_list=None) -> tuple[dict, dict[str, bytes]]:
    from benchctl.report import compute, crossed, render, rl, sequential, stats, verdict

    passk = stats.passk_table(data, config)
    comparisons = stats.comparisons_table(data, config)
    pairs = stats.baseline_pairs(data, config.baseline)
    summary = rl.rliable_summary(data, pairs, config)
    points = compute.curve_points(data.eval_curve, data.runs)
    fits, replicates = compute.compute_fits(points, config.confidence)
    fit_comparisons = compute.compare_fits(fits, replicates, pairs, config.confidence)
    tables = {
        "verdict": verdict.verdict_table(passk, comparisons, data.runs, config.primary_k),
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
    if crossed.varies(data.runs):
        tables["estimator_loss"] = crossed.estimator_loss_table(
            passk, comparisons, data.runs, data.group_by, config.primary_k
        )
    if claim_list:  # group-sequential when the matrix run recorded its looks (report.sequential)
        tables["claims"], note = sequential.claims_table(data, claim_list, config)
        data.notes += [note] if note else []
    return tables, _figures(data, passk, points, fits, summary, pairs)


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """A frame as an arrow table; object columns of mixed types become nullable strings."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in frame[col]]
    return pa.Table.from_pandas(frame, preserve_index=False)


def _write(result: ReportResult, config: ReportConfig) -> None:
    from benchctl.report.page import html_page, markdown_page
    from benchctl.report.sections import lead as sections_lead
    from benchctl.report.sections import report_sections
    from benchctl.results.store import write_atomic, write_json, write_table

    out = Path(config.out)
    record = {
        f.name: {"value": getattr(config, f.name), "source": config.sources.get(f.name, "default")}
        for f in dataclasses.fields(config)
        if f.name != "sources"
    }
    write_json(out / "config.json", {"kind": REPORT_KIND, "config": record})
    for name, frame in result.tables.items():
        if name not in VIEWS:
            path = out / f"{name}.parquet"
            write_table(path, _arrow(frame))
            result.files.append(path)
    for name, png in result.figures.items():
        path = out / "plots" / f"{name}.png"
        write_atomic(path, lambda tmp, png=png: tmp.write_bytes(png))
        result.files.append(path)
    sections = report_sections(result.tables, result.figures, config, result.notes)
    lead = sections_lead(result.tables, config)
    for name, text in (
        ("report.md", markdown_page(TITLE, lead, sections, result.figures)),
        ("report.html", html_page(TITLE, lead, sections, result.figures)),
    ):
        write_atomic(out / name, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))
        result.files.append(out / name)


def build_report(config: ReportConfig) -> ReportResult:
    """Read, compute, draw and (with `config.out`) write the report; BenchctlError on bad input."""
    from benchctl.report.claims import read_claims
    from benchctl.report.verdict import verdict_legend

    claim_list = read_claims(config.claims) if config.claims else None  # a bad file fails before any reading
    data = load_report_data(config)
    # each arm at its best swept setting, chosen per seed without that seed's runs (tuning.py)
    data.settings = select_settings(data, config.select_on, config.baseline, config.tuning_seeds)
    tables, figures = _compute(data, config, claim_list)
    result = ReportResult(tables, figures, list(data.notes), Path(config.out) if config.out else None)
    compared = not tables["comparisons"].empty
    result.legend = verdict_legend(
        config.baseline, config.confidence, config.alpha, compared, config.primary_k, config.population
    )
    if config.out:
        _write(result, config)
    return result
