"""Final-answer extraction (pure Python): last box, nesting, \\fbox, `\\boxed 5`; the box math-verify surely reads."""

import pytest

from benchctl.grading import math as math_grading
from benchctl.grading.math_extract import last_boxed, leading_integer, math_verify_box
from benchctl.grading.math_worker import PROFILES


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
        ("So the answer is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
        ("\\[\n\\boxed{(1, 2]}\n\\]", "(1, 2]"),
        ("\\boxed{\\$18} dollars}", "\\$18"),  # escaped dollar cannot close an environment; a later `}` is harmless
    ],
)
def test_math_verify_box_reads_the_only_box_when_math_verify_must_read_it(text, expected):
    assert math_verify_box(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "$\\boxed{2}$ and $\\boxed{3}$",  # several boxes: math-verify may join them
        "\\boxed{255}. Final Answer: The final answer is $10,455$. I hope it is correct.",  # few-shot sentence wins
        "\\fbox{7}",
        "\\boxed 5$",
        "\\boxed {5}",
        "\\boxed*{5}",  # not math-verify's box pattern
        "$\\boxed{50}$ percent",
        "\\boxed{50}%",  # a percent word after the environment divides by 100
        "\\boxed{a$b}",
        "\\boxed{(0, 1] \\cup x}",
        "\\boxed{x\\]}",  # an environment may close inside the box
        "\\boxed{\\frac{1}{2}",
        "\\boxed{ }",
        "no box",
    ],
)
def test_math_verify_box_declines_whenever_math_verify_may_read_something_else(text):
    assert math_verify_box(text) is None


def test_leading_integer_reads_the_start_only():
    assert (leading_integer(" 12\n3+4="), leading_integer("-7"), leading_integer("x12")) == ("12", "-7", None)


def test_profile_names_agree_between_parent_and_worker():
    assert tuple(PROFILES) == math_grading.PROFILES
