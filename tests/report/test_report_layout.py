"""The report read at a glance, on a realistic results folder (tests/report/showcase.py: four
estimators x two group sizes x 3 seeds, cadence evaluations on two tasks, a collapsed and a stalled run, a claims
file): the page opens on the verdict table (one row per arm and task, one column per k), the claims follow, then
the figures, cost and the details; every figure has one legend for the whole figure, outside every panel; the
estimators' diagnostics hold only the arms that log them; the terminal starts with the same verdict."""

import io
import re

import numpy as np
import pandas as pd
import pytest

from benchctl.report import ReportConfig, build_report, compute, plots, training_plots
from benchctl.report.figstyle import arm_styles, plt
from benchctl.report.load import load_report_data
from tests.report.showcase import write_showcase

CELL = re.compile(r"^[+-]\d+\.\d \[-?\d+\.\d, -?\d+\.\d\]\*? \(mde (\d+\.\d|> 100)\)$")  # "+2.6 [1.2, 4.2]* (mde 2.1)"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("showcase")
    results, claims = write_showcase(root, seeds=3, steps=12, every=4, problems=12)
    config = ReportConfig(inputs=(str(results),), out=str(root / "report"), claims=str(claims), rliable_reps=100)
    return config, build_report(config)


def test_the_verdict_has_one_row_per_arm_and_task_and_one_column_per_k(report):
    _, result = report
    verdict, passk = result.tables["verdict"], result.tables["passk"]
    ks = sorted(passk["k"].unique())
    columns = [f"pass@{k}" + (" (primary)" if k == 1 else "") for k in ks]
    assert list(verdict.columns) == ["task", "arm", "seeds", *columns, "health"]
    assert len(verdict) == passk[["eval_task", "arm"]].drop_duplicates().shape[0] == 16
    arms = verdict[~verdict["arm"].str.endswith("(baseline)")]
    assert all(CELL.match(cell) for col in columns for cell in arms[col]), arms
    cmp = result.tables["comparisons"].set_index(["arm", "eval_task", "k"])
    for row in arms.to_dict("records"):
        c, cell = cmp.loc[(row["arm"], row["task"], 1)], row["pass@1 (primary)"]
        assert cell.startswith(f"{100 * c['diff']:+.1f} [") and ("*" in cell) == bool(c["significant"])
        assert cell.endswith(f"(mde {100 * c['mde']:.1f})" if c["mde"] < 1 else "(mde > 100)")
    base = verdict[verdict["arm"] == "grpo G=4 (baseline)"].iloc[0]
    assert re.match(r"^\d+\.\d \[\d+\.\d, \d+\.\d\]$", base["pass@1 (primary)"])  # the baseline's own pass@k
    health = verdict.set_index(["task", "arm"])["health"]
    assert health[("arith", "avspo G=8")] == "\u26a0 collapsed: seed 2"
    assert health[("arith", "oar G=4")] == "\u26a0 stalled: seed 1"
    assert health[("arith", "ha_dw G=4")] == "ok"


def test_the_verdict_marks_too_few_seeds():
    from benchctl.report.verdict import verdict_table

    passk = pd.DataFrame(
        {"arm": ["b", "a"], "eval_task": "t", "k": 1, "pass_at_k": 0.5, "low": 0.4, "high": 0.6, "seeds": 2}
    ).assign(too_few_seeds=True)
    cmp = pd.DataFrame(
        [
            {"arm": "a", "baseline": "b", "eval_task": "t", "k": 1, "diff": 0.031, "low": -0.1, "high": 0.16}
            | {"significant": False, "seeds": 2, "too_few_seeds": True, "baseline_health": "ok"}
        ]
    )
    table = verdict_table(passk, cmp).set_index("arm")
    cell = table.loc["a", "pass@1 (primary)"]
    assert table.loc["a", "seeds"] == "2 (too few seeds)" and cell == "+3.1 [-10.0, 16.0]"  # no test, no mde
    assert table.loc["b (baseline)", "pass@1 (primary)"] == "50.0 [40.0, 60.0]"


def test_an_arm_with_no_baseline_in_its_context_shows_its_own_pass_at_k_and_says_so():
    passk = pd.DataFrame(
        {"arm": ["b", "c"], "eval_task": "t", "k": 1, "pass_at_k": [0.5, 0.3], "low": 0.2, "high": 0.6, "seeds": 3}
    ).assign(too_few_seeds=False)
    from benchctl.report.verdict import verdict_table

    none = pd.DataFrame(columns=["arm", "baseline", "eval_task", "k", "baseline_health"])
    table = verdict_table(passk, none).set_index("arm")
    assert table.loc["c (own pass@k: no baseline in its context)", "pass@1"] == "30.0 [20.0, 60.0]"


def test_the_page_opens_on_the_verdict_then_the_claims_then_the_figures_and_details_last(report):
    config, result = report
    page = (result.out / "report.html").read_text()
    headings = re.findall(r"<h([23])[^>]*>([^<]+)</h[23]>", page)
    top = [text for level, text in headings if level == "2"]
    assert top == [
        "verdict: each arm against grpo",
        "claims of the papers, tested",
        "compute curves (ScaleRL fit)",
        "pass@k curves",
        "training curves",
        "estimator diagnostics",
        "cost",
        "details",
    ]
    details = [text for level, text in headings[top.index("details") + 1 :] if level == "3"]
    assert "pass@k and the paired difference to the baseline, every k" in details and "run health" in details
    assert page.index("<table") == page.index("<table class='verdict'>")  # the first table is the verdict
    markdown = (result.out / "report.md").read_text()
    assert re.findall(r"^## (.+)$", markdown, re.M)[:2] == top[:2]
    assert markdown.index("![training_curves]") < markdown.index("## details")


def test_the_terminal_starts_with_the_verdict(report):
    _, result = report
    first = result.rich_tables()[0]
    assert [c.header for c in first.columns] == list(result.tables["verdict"].columns)
    assert "Holm" in str(first.title)


def _figures(config, result):
    data = load_report_data(config)
    styles = arm_styles(data.runs, data.group_by, data.arm_column, {"grpo G=4", "grpo G=8"})
    points = compute.curve_points(data.eval_curve, data.runs)
    return (
        data,
        styles,
        {
            "compute_curves": plots.compute_curves(points, result.tables["compute_fits"], styles),
            "passk_curves": plots.passk_curves(result.tables["passk"], styles),
            "training_curves": training_plots.training_curves(data, styles),
            "diagnostics": training_plots.diagnostics(data, styles),
            "pass1_vs_rollout_tokens": plots.pass1_vs_tokens(data, styles),
        },
    )


@pytest.fixture(scope="module")
def figures(report):
    yield _figures(*report)
    plt().close("all")


def test_every_figure_has_one_legend_outside_every_panel(figures):
    _, _, figs = figures
    for name, fig in figs.items():
        assert len(fig.legends) == 1, name
        assert all(ax.get_legend() is None for ax in fig.axes), name
        fig.canvas.draw()
        legend = fig.legends[0].get_window_extent()
        for ax in fig.axes:
            if ax.get_visible():
                assert not legend.overlaps(ax.get_window_extent()), (name, ax.get_title())


def test_small_multiples_hold_one_context_and_one_colour_per_method(figures):
    data, styles, figs = figures
    training = figs["training_curves"]
    axes = [ax for ax in training.axes if ax.get_visible()]
    assert len(axes) == 2 * len(training_plots.TRAIN_METRICS)  # a column per group size
    for ax in axes:
        context = "G=4" if ax.get_title().endswith("(G=4)") else "G=8"
        lines = ax.get_lines()
        assert len(lines) == 4 and {line.get_linestyle() for line in lines} == {styles.dashes[context]}
        assert len({line.get_color() for line in lines}) == 4  # grpo, ha_dw, avspo, oar
        assert ax.bbox.height >= 180  # pixels at 100 dpi: lines can be told apart
    assert training.legends[0].get_title().get_text().endswith("not smoothed")  # 12 steps: no rolling mean


def test_estimator_diagnostics_show_only_the_arms_that_log_them(figures):
    _, styles, figs = figures
    panels = {ax.get_title(): ax for ax in figs["diagnostics"].axes if ax.get_visible()}
    assert set(panels) == {
        "est/anchor (ha_dw)",
        "est/anchor_sigma (ha_dw)",
        "est/tau (avspo)",
        "est/virtual_k (avspo)",
        "oar/reshaped_frac (oar)",
        "oar/no_span_frac (oar)",
    }
    anchor = panels["est/anchor (ha_dw)"].get_lines()
    assert len(anchor) == 2 and {line.get_color() for line in anchor} == {styles.colors["ha_dw"]}
    labels = [t.get_text() for t in figs["diagnostics"].legends[0].get_texts()]
    assert "grpo" not in labels and {"ha_dw", "avspo", "oar"} <= set(labels)


def test_the_smoothing_window_is_stated_and_grows_with_the_run():
    assert [training_plots.smoothing_window(n) for n in (12, 60, 400)] == [1, 3, 20]
    assert training_plots.caption(3).endswith("trailing rolling mean over 3 steps")


def test_more_than_ten_methods_get_distinct_colours():
    runs = pd.DataFrame({"arm": [f"m{i}" for i in range(14)], "estimator_label": [f"m{i}" for i in range(14)]})
    styles = arm_styles(runs, ("estimator_label",), "estimator_label", {"m0"})
    colors = [tuple(np.round(c, 4)) for c in styles.colors.values()]
    assert len(set(colors)) == 14


def test_a_context_with_more_than_eight_arms_is_split_over_panels_each_with_the_baseline():
    names = ["grpo", *(f"m{i:02d}" for i in range(11))]
    runs = pd.DataFrame({"arm": names, "estimator_label": names})
    styles = arm_styles(runs, ("estimator_label",), "estimator_label", {"grpo"})
    columns = training_plots.panel_columns(names, styles)
    assert [label for label, _ in columns] == ["arms 1/2", "arms 2/2"]
    assert all(arms[0] == "grpo" and len(arms) <= training_plots.MAX_LINES for _, arms in columns)
    assert sorted(a for _, arms in columns for a in arms[1:]) == names[1:]
    assert training_plots.panel_columns(names[:8], styles) == [("", names[:8])]


def test_pass_at_k_panels_split_past_eight_arms_each_with_the_baseline_on_one_y_range():
    names = ["grpo", *(f"m{i:02d}" for i in range(18))]  # the 2026 claims matrix: 18 arms beside GRPO
    runs = pd.DataFrame({"arm": names, "estimator_label": names})
    styles = arm_styles(runs, ("estimator_label",), "estimator_label", {"grpo"})
    rows = [
        {"eval_task": "arith_mix", "arm": a, "k": k, "pass_at_k": p, "low": p - 0.02, "high": p + 0.02}
        for i, a in enumerate(names)
        for k in (1, 2, 4, 8)
        for p in [0.2 + 0.02 * i + 0.05 * k]
    ]
    fig = plots.passk_curves(pd.DataFrame(rows), styles)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == [f"arith_mix: pass@k (arms {i}/3)" for i in (1, 2, 3)]
    drawn = [[line.get_color() for line in ax.get_lines()] for ax in axes]
    base = styles.colors["grpo"]
    assert all(base in colors and len(colors) <= training_plots.MAX_LINES for colors in drawn)
    assert sum(len(colors) - 1 for colors in drawn) == 18  # every other arm once
    assert len({ax.get_ylim() for ax in axes}) == 1  # heights compare across the split panels
    plt().close(fig)


def test_a_terminal_table_too_wide_for_the_console_wraps_its_prose_and_keeps_every_short_column():
    """The claims table of a sequential run (verdicts with their look and bias-adjusted effects, each paper's
    effect in prose) once shrank every short column to nothing on a 160-column console."""
    from rich.console import Console

    from benchctl.report.render import rich_table

    prose = "inconclusive (not decided by max seeds (10): verdict of look 5 of 5 (10 seeds, 96.8% interval))"
    frame = pd.DataFrame(
        {
            "claim": ["Dr.GRPO at least matches GRPO at pass@1 (within 2 points)"] * 2,
            "arm vs baseline": ["noisy_verifier vs grpo", "dr_grpo vs grpo"],
            "effect [CI]": ["-9.7 pts [-18.7, -0.8]", "-0.9 pts [-3.7, +1.8]"],
            "verdict": [prose, "holds"],
            **{f"short {i}": ["+1.0 pts", "-"] for i in range(4)},
            "paper's effect": ["pass@1, Qwen2.5-Math-7B trained on MATH " * 8, "-"],  # prose: wraps
        }
    )
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(rich_table(frame, "claims", wrap=("claim", "verdict")))
    text = console.export_text()
    for cell in ("noisy_verifier vs grpo", "-9.7 pts [-18.7, -0.8]", "-0.9 pts [-3.7, +1.8]", "short 3", "+1.0 pts"):
        assert cell in text  # a short column keeps its width
    assert "inconclusive" in text and "(within 2" in text and "96.8%" in text  # the prose wraps, read in full


def test_pass1_against_tokens_averages_each_runs_nth_evaluation_when_a_budget_ends_runs_at_different_steps():
    """Cells stopped by a token budget end at the step their answers' lengths allow (5-10 on the real model):
    averaging by step number drew a zigzag through one run per step; by order, the final evaluations meet."""
    from types import SimpleNamespace

    runs = pd.DataFrame({"run_id": ["a1", "a2", "a3", "b1"], "arm": ["grpo", "grpo", "grpo", "x"]})
    runs["estimator_label"] = runs["arm"]
    curve = pd.DataFrame(
        {
            "run_id": ["a1", "a1", "a2", "a2", "a3", "a3", "b1"],
            "step": [0, 5, 0, 7, 0, 9, 6],
            "tokens": [0, 16_100, 0, 16_900, 0, 17_300, 16_500],
            "pass@1": [0.25, 0.30, 0.25, 0.40, 0.25, 0.35, 0.20],
        }
    )
    curve["eval_task"] = "arith_words"
    styles = arm_styles(runs, ("estimator_label",), "estimator_label", {"grpo"})
    fig = plots.pass1_vs_tokens(SimpleNamespace(eval_curve=curve, runs=runs), styles)
    grpo, x = fig.axes[0].get_lines()  # the arms in order: a line for grpo, a marker for x
    np.testing.assert_allclose(grpo.get_xdata(), [0, (16_100 + 16_900 + 17_300) / 3])
    np.testing.assert_allclose(grpo.get_ydata(), [0.25, 0.35])
    assert list(x.get_xdata()) == [16_500] and x.get_marker() == "D" and x.get_linestyle() == "None"
    plt().close(fig)
