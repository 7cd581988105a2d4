"""The order of the report's page, read at a glance first: the verdict (arm x k differences to the baseline), the
estimator x loss table (when the runs' losses differ), the papers' claims, compute curves, pass@k curves, training
curves, the estimators' diagnostics, cost; then the details (the full per-k table with p-values and mde and the
method, run health, rliable, notes)."""

from __future__ import annotations

import pandas as pd

from benchctl.report import crossed, render
from benchctl.report.config import ReportConfig
from benchctl.report.health import is_ok
from benchctl.report.page import Section
from benchctl.report.training_plots import DIAGNOSTIC_PREFIXES, SKIPPED, smoothing_text, smoothing_window
from benchctl.report.verdict import verdict_legend

COMPUTE_TEXT = (
    "R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) fitted to every seed's held-out pass@1 against rollout tokens C "
    "(Khatri et al. 2025, arXiv 2510.13786); A: asymptote (dotted; off the panel when above it), B: efficiency, "
    "C_mid: tokens to half the gain; R0 the step-0 score. Dots: every evaluation of every seed. Estimates: one fit "
    "of all the arm's seeds' points, with delete-one-seed jackknife t intervals. An asymptote is identified only "
    "when C_mid and its interval lie within the largest compute evaluated, A's interval stays off the clip [0, 1] "
    "and B's inside its range 0.2-10; otherwise A is printed as '>= its lower limit' and not compared ('asymptote "
    "not resolved at this budget'). Arms are compared on A (Welch's t over the seeds' jackknife pseudo-values), "
    "then at equal A on C_mid."
)
NO_FIT = "No run was evaluated at 3 or more compute points (train with --eval-every-tokens): nothing to fit."


def lead(tables: dict, config: ReportConfig) -> str:
    """One line under the title: what was read."""
    runs, passk = tables["runs"], tables["passk"]
    tasks = ", ".join(sorted(passk["eval_task"].unique())) if not passk.empty else "none"
    ks = ", ".join(str(k) for k in sorted(passk["k"].unique())) if not passk.empty else "none"
    bad = int((~runs["health"].map(is_ok)).sum()) if "health" in runs else 0
    return (
        f"{len(runs)} runs, {runs['arm'].nunique()} arms; tasks: {tasks}; k: {ks}; baseline: {config.baseline}; "
        f"{bad} run{'s' if bad != 1 else ''} not ok."
    )


def _diagnostics_text(training: pd.DataFrame) -> str:
    if training.empty:
        return ""
    diag = training[
        training["metric"].str.startswith(DIAGNOSTIC_PREFIXES) & ~training["metric"].str.startswith(SKIPPED)
    ]
    groups: dict[tuple, list[str]] = {}
    for metric, part in diag.groupby("metric", sort=False):
        groups.setdefault(tuple(sorted(part["arm"].unique())), []).append(metric)
    logged = "; ".join(f"{', '.join(arms)}: {', '.join(metrics)}" for arms, metrics in groups.items())
    return (
        "Each estimator's own numbers (est/*; OAR's token reshaping under oar/), one panel each with only the arms "
        f"that log them ({logged}). Mean over seeds, min-max band"
    )


def _window_text(training: pd.DataFrame) -> str:
    return smoothing_text(smoothing_window(int(training["step"].max()))) if not training.empty else ""


def _figure_sections(tables: dict, figures: dict) -> list[Section]:
    fits = tables["compute_fits"]
    out = []
    if len(fits):
        table = render.compute_view(fits, tables["compute_comparisons"])
        out.append(Section("compute curves (ScaleRL fit)", COMPUTE_TEXT, table, ("compute_curves",), anchor="compute"))
    elif "compute_curves" in figures or "pass1_vs_rollout_tokens" in figures:
        text = (
            f"{NO_FIT} Each dot: one evaluation of one run; line: the arm's mean over its runs' first, second, ..."
            " evaluations (a diamond where each run has one)."
        )
        figs = ("compute_curves", "pass1_vs_rollout_tokens")
        out.append(Section("pass@1 against rollout tokens", text, figures=figs, anchor="compute"))
    out.append(
        Section(
            "pass@k curves",
            "pass@k against k (log2 axis) per arm, band: CI over seeds and problems.",
            figures=("passk_curves",),
            anchor="passk",
        )
    )
    window = _window_text(tables["training"])
    out.append(
        Section(
            "training curves",
            f"Mean over an arm's seeds (line), min-max over seeds (band); {window}.",
            figures=("training_curves",),
            anchor="training",
        )
    )
    if "diagnostics" in figures:
        text = f"{_diagnostics_text(tables['training'])}; {window}."
        out.append(Section("estimator diagnostics", text, figures=("diagnostics",), anchor="diagnostics"))
    return out


def _detail_sections(tables: dict, config: ReportConfig, notes: list[str]) -> list[Section]:
    from benchctl.report.stats import __doc__ as stats_doc

    method = stats_doc.split("Statistics [our choices, stated in every output]:")[1].split("Why this test")[0]
    bullets = "".join(f"\n* {' '.join(item.split())}" for item in method.split("\n* ") if item.strip())
    out = [
        Section("details", "The numbers above in full, and how they were made.", anchor="details"),
        Section(
            "pass@k and the paired difference to the baseline, every k",
            f"Baseline: {config.baseline}. Method (docs/report.md):{bullets}",
            tables["main"],
            level=3,
        ),
        Section(
            "run health",
            render.health_text(tables["runs"], tables["comparisons"]),
            render.health_view(tables["runs"]),
            level=3,
        ),
        Section(
            "rliable summary (Agarwal et al. 2021)",
            "IQM, mean, median and optimality gap of pass@k over runs x tasks (percent), stratified-bootstrap "
            "intervals; P(> baseline): probability that a run of the arm beats a run of the baseline on a task, "
            "averaged over tasks (smallest k).",
            tables["rliable"],
            ("rliable",),
            level=3,
        ),
    ]
    settings = tables.get("settings")
    if settings is not None and len(settings):
        text = (
            "Each arm's swept training settings: mean pass@k (smallest k, percent scale 0-1) over all seeds on the "
            "validation task and on the test tasks; chosen_for_seeds: the seeds whose test value comes from the "
            "setting, each chosen without that seed's runs (method; benchctl/report/tuning.py)."
        )
        out.insert(2, Section("settings swept within an arm (sensitivity)", text, settings, level=3))
    if notes:
        out.append(Section("notes", "".join(f"\n* {n}" for n in notes), level=3))
    return out


def report_sections(tables: dict, figures: dict, config: ReportConfig, notes: list[str]) -> list[Section]:
    """Every section of the page, in reading order."""
    compared = not tables["comparisons"].empty
    heading = f"verdict: each arm against {config.baseline}" if compared else "pass@k by arm"
    out = [
        Section(
            heading,
            verdict_legend(
                config.baseline, config.confidence, config.alpha, compared, config.primary_k, config.population
            ),
            tables["verdict"],
            anchor="verdict",
        )
    ]
    if "estimator_loss" in tables and len(tables["estimator_loss"]):
        table = tables["estimator_loss"]
        view = crossed.estimator_loss_view(table)
        out.append(Section("estimator x loss", crossed.legend(table, config.baseline), view, anchor="losses"))
    if "claims" in tables:
        text = (
            "Each claim's effect (arm minus baseline; a relative claim's ratio minus 1: of the pass@k means over "
            "problems and seeds at --population problems, else the geometric mean of the per-seed ratios), its "
            "seed-level interval and verdict: holds when the interval lies on the claimed side (past -margin for a "
            "parity claim), does not hold when it lies on the other, paper's effect excluded when it ends short of the "
            "paper's stated effect, inconclusive otherwise, with fewer than 3 seeds, or when the claim's premise "
            "(requires) does not hold (benchctl/report/claims.py, docs/report.md)."
        )
        out.append(Section("claims of the papers, tested", text, render.claims_view(tables["claims"]), anchor="claims"))
    out += _figure_sections(tables, figures)
    cost = "Rollout tokens and samples, steps, seconds per phase (means over runs), final pass@1."
    out.append(Section("cost", cost, render.cost_page_view(tables["cost"]), anchor="cost"))
    return out + _detail_sections(tables, config, notes)
