"""Final-answer extraction (pure Python): last box, nesting, multi-box joins, \\fbox and `\\boxed 5`."""

import pytest

from benchctl.grading.math_extract import final_boxed_answer, last_boxed, leading_integer
from benchctl.grading.math_worker import PROFILES
from benchctl.grading import math as math_grading


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\\boxed{1} then \\boxed{\\frac{a}{b}}", "\\frac{a}{b}"),
        ("\\boxed{\\left\\{ 1, 2 \\right\\}}", "\\left\\{ 1, 2 \\right\\}"),
        ("$\\boxed 5$", "5"),
        ("\\fbox{7}", "7"),
        ("\\fbox{7} \\boxed{8}", "8"),
        ("\\boxed{2} and \\boxed{", "2"),  # a truncated last box is skipped
        ("\\boxed{}", None),
        ("no box", None),
    ],
)
def test_last_boxed_takes_the_last_balanced_non_empty_box(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("$\\boxed{2}$ and $\\boxed{3}$", "2, 3"),
        ("\\boxed{2}, \\boxed{3}, or \\boxed{4}", "2, 3, 4"),
        ("\\boxed{2}. Then we get \\boxed{3}", "3"),
        ("".join(f"\\boxed{{{i}}}, " for i in range(8)).rstrip(", "), "2, 3, 4, 5, 6, 7"),
    ],
)
def test_final_answer_joins_boxes_separated_only_by_and_or_commas(text, expected):
    assert final_boxed_answer(text) == expected


def test_leading_integer_reads_the_start_only():
    assert (leading_integer(" 12\n3+4="), leading_integer("-7"), leading_integer("x12")) == ("12", "-7", None)


def test_profile_names_agree_between_parent_and_worker():
    assert tuple(PROFILES) == math_grading.PROFILES
