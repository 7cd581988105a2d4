"""Arms of a matrix and the estimator x loss table, on hand-made run folders: the report's arm is the index's `arm`
(the matrix cell's), estimator_label stays the estimator's; an old index (no `arm`) reads the same; when the runs'
losses differ the report shows estimator x loss, each cell the comparison the verdict already holds."""

import pandas as pd
import pytest

from benchctl.report import ReportConfig, build_report, crossed
from benchctl.report.claims import _select
from benchctl.report.render import Kind

from .fixtures import train_config, write_matrix

N, SEEDS = 4, (1, 2, 3)
# (arm, estimator, estimator_label, recipe, loss, loss_resolved, correct samples added to the base counts)
ARMS = [
    ("grpo", "grpo", "grpo", None, None, "ppo_clip", 0),
    ("grpo+cispo", "grpo", "grpo", None, "cispo", "cispo", 1),
    ("ha_dw(lambda_scale=1.5)", "ha_dw", "ha_dw(base=grpo)", None, None, "ppo_clip", 2),
    ("ha_dw(lambda_scale=1.5)+cispo", "ha_dw", "ha_dw(base=grpo)", None, "cispo", "cispo", 0),
    ("dapo", "grpo", "grpo", "dapo", None, "ppo_clip(clip_high=0.28)", 1),
]
BASE = {1: [0, 1, 2, 1, 0, 2], 2: [1, 1, 2, 0, 1, 2], 3: [0, 2, 1, 1, 1, 1]}


def _cells(arms=ARMS):
    cells = []
    for arm, est, label, recipe, loss, resolved, extra in arms:
        for seed in SEEDS:
            config = train_config(est, seed, params={"lambda_scale": 1.5} if est == "ha_dw" else {}, label=label)
            config.update(recipe=recipe, loss=loss, loss_resolved=resolved, arm=arm)
            counts = [min(N, c + extra) for c in BASE[seed]]
            cells.append((f"{arm}-s{seed}", config, {f"q{i}": [j < c for j in range(N)] for i, c in enumerate(counts)}))
    return cells


@pytest.fixture(params=[False, True], ids=["index", "old_index"])
def matrix(request, tmp_path):
    write_matrix(tmp_path / "results", _cells(), old_index=request.param)
    return tmp_path / "results"


def _config(*inputs, **kw):
    kw.setdefault("rliable_reps", 100)
    kw.setdefault("group_by", ("arm",))
    return ReportConfig(inputs=tuple(str(i) for i in inputs), **kw)


def test_arms_are_the_matrix_arms_and_estimator_label_stays_the_estimators(matrix):
    result = build_report(_config(matrix))
    runs = result.tables["runs"].drop_duplicates("arm").set_index("arm")
    assert list(runs.index) == [a[0] for a in ARMS]
    assert runs.loc["dapo", ["cell_arm", "estimator", "estimator_label"]].tolist() == ["dapo", "grpo", "grpo"]
    assert runs.loc["ha_dw(lambda_scale=1.5)+cispo", "estimator_label"] == "ha_dw(base=grpo)"
    cmp = result.tables["comparisons"]
    assert set(cmp["baseline"]) == {"grpo"} and set(cmp["arm"]) == {a[0] for a in ARMS[1:]}
    only = build_report(_config(matrix, where=("arm=dapo,grpo",))).tables["passk"]
    assert set(only["arm"]) == {"dapo", "grpo"}
    assert set(_select(result.tables["runs"], "dapo", {})["seed"]) == set(SEEDS)  # a claim's `arm: dapo`


def test_group_by_arm_and_a_context_column_compares_within_the_context(tmp_path):
    cells = _cells(ARMS[:2])
    cells += [(n + "-g8", {**c, "group_size": 8}, v) for n, c, v in _cells(ARMS[:2])]
    write_matrix(tmp_path, cells)
    cmp = build_report(_config(tmp_path, group_by=("arm", "group_size"))).tables["comparisons"]
    assert set(zip(cmp["arm"], cmp["baseline"])) == {("grpo+cispo G=4", "grpo G=4"), ("grpo+cispo G=8", "grpo G=8")}


def test_estimator_x_loss_table_holds_each_arms_primary_comparison(matrix, tmp_path):
    out = tmp_path / "rep"
    result = build_report(_config(matrix, out=str(out)))
    table = pd.read_parquet(out / "estimator_loss.parquet")
    assert list(table.columns) == crossed.COLUMNS
    assert list(zip(table["estimator"], table["loss"], table["role"])) == [
        ("grpo", "ppo_clip", "baseline"),
        ("grpo", "cispo", "compared"),
        ("ha_dw(lambda_scale=1.5)", "ppo_clip", "compared"),
        ("ha_dw(lambda_scale=1.5)", "cispo", "compared"),
        ("dapo", "ppo_clip(clip_high=0.28)", "compared"),
    ]
    cmp = result.tables["comparisons"]
    primary = cmp[cmp["primary"]].set_index("arm")
    for r in table[table["role"] == "compared"].itertuples():
        assert (r.diff, r.low, r.high, r.significant) == tuple(
            primary.loc[r.arm, ["diff", "low", "high", "significant"]]
        )
    view = crossed.estimator_loss_view(table).set_index("estimator")
    assert list(view.columns) == ["task", "ppo_clip", "cispo", "ppo_clip(clip_high=0.28)"]
    assert view.loc["grpo", "ppo_clip"].kind == Kind.BASELINE and view.loc["grpo", "ppo_clip"].endswith("(baseline)")
    assert view.loc["dapo", "cispo"] == "-"
    ha = primary.loc["ha_dw(lambda_scale=1.5)"]
    assert view.loc["ha_dw(lambda_scale=1.5)", "ppo_clip"].startswith(f"{100 * ha['diff']:+.1f} [")
    assert "## estimator x loss" in (out / "report.md").read_text()
    assert "id='losses'" in (out / "report.html").read_text()
    assert crossed.TITLE in [t.title for t in result.rich_tables()]


def test_no_estimator_x_loss_table_when_the_runs_share_one_loss(tmp_path):
    write_matrix(tmp_path, _cells([a for a in ARMS if a[5] == "ppo_clip"]))
    result = build_report(_config(tmp_path, out=str(tmp_path / "rep")))
    assert "estimator_loss" not in result.tables and not (tmp_path / "rep" / "estimator_loss.parquet").exists()
    assert "estimator x loss" not in (tmp_path / "rep" / "report.md").read_text()


def test_grouping_by_estimator_label_never_compares_the_baseline_with_itself(tmp_path):
    write_matrix(tmp_path, _cells([a for a in ARMS if a[5] != "cispo"]))
    cmp = build_report(_config(tmp_path, group_by=("estimator_label",))).tables["comparisons"]
    # dapo's runs are labelled grpo (its estimator): part of the grpo arm, not an arm compared with it
    assert set(zip(cmp["arm"], cmp["baseline"])) == {("ha_dw(base=grpo)", "grpo")}


def test_figures_colour_by_estimator_and_draw_each_loss_in_its_own_style(matrix):
    from benchctl.report.figstyle import arm_styles

    result = build_report(_config(matrix))
    runs = result.tables["runs"]
    styles = arm_styles(runs, ("cell_arm",), "cell_arm", {"grpo"})
    assert styles.method["ha_dw(lambda_scale=1.5)+cispo"] == "ha_dw(lambda_scale=1.5)"
    assert styles.context["ha_dw(lambda_scale=1.5)+cispo"] == "cispo" and styles.context["grpo"] == "ppo_clip"
    assert styles.of("grpo+cispo")["color"] == styles.of("grpo")["color"]  # the baseline estimator, near-black
    assert styles.of("grpo+cispo")["ls"] != styles.of("grpo")["ls"]


def test_a_recipes_own_clip_range_under_the_default_loss_is_no_loss_axis():
    import pandas as pd

    from benchctl.report.crossed import varies

    demo = pd.DataFrame({"loss": [None, None], "loss_resolved": ["ppo_clip", "ppo_clip(clip_high=0.28)"]})
    crossed = pd.DataFrame({"loss": ["ppo_clip", "cispo"], "loss_resolved": ["ppo_clip", "cispo"]})
    assert not varies(demo) and varies(crossed)
    assert not varies(pd.DataFrame({"loss_resolved": ["ppo_clip", "cispo"]}))  # runs from before the loss axis
