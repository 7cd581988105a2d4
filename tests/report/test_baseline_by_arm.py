"""The baseline is found in the arm column first: a matrix arm `dapo` (estimator grpo, recipe dapo) is compared
to the arm `grpo`, not counted as a second baseline because its estimator is also grpo."""

import pandas as pd

from benchctl.report.load import ReportData
from benchctl.report.stats import baseline_pairs


def _data(rows):
    runs = pd.DataFrame(rows)
    runs["arm"] = runs["estimator_label"] + " G=" + runs["group_size"].astype(str)
    empty = pd.DataFrame()
    return ReportData(runs, empty, empty, empty, ("estimator_label", "group_size"), "estimator_label")


def test_arm_named_like_the_baseline_wins_over_an_estimator_column_match():
    data = _data(
        [
            {"estimator_label": "grpo", "estimator": "grpo", "group_size": 4},
            {"estimator_label": "dapo", "estimator": "grpo", "group_size": 4},
            {"estimator_label": "avspo", "estimator": "avspo", "group_size": 4},
        ]
    )
    assert baseline_pairs(data, "grpo") == [("avspo G=4", "grpo G=4"), ("dapo G=4", "grpo G=4")]
    assert data.notes == []


def test_baseline_given_as_an_estimator_name_still_matches_runs_by_estimator():
    data = _data(
        [
            {"estimator_label": "ha_dw(base=grpo)", "estimator": "ha_dw", "group_size": 4},
            {"estimator_label": "grpo(x)", "estimator": "grpo", "group_size": 4},
        ]
    )
    assert baseline_pairs(data, "grpo") == [("ha_dw(base=grpo) G=4", "grpo(x) G=4")]
