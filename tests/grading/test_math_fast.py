"""The rational-literal fast path decides exactly what math-verify decides (checked against the worker path)."""

import pytest

from benchctl.grading.math_fast import fast_reason, literal_value
from benchctl.grading.math_worker import grade_job


@pytest.mark.parametrize("text, value", [("204", 204), (" -7 ", -7), ("025", 25), ("14/3", (14, 3)),
                                         ("-\\frac{7}{12}", (-7, 12)), ("\\dfrac{-7}{12}", (-7, 12)),
                                         ("\\frac12", (1, 2)), ("\\tfrac{3}{6}", (1, 2))])
def test_literals_are_read_exactly(text, value):
    from fractions import Fraction

    assert literal_value(text) == (Fraction(*value) if isinstance(value, tuple) else Fraction(value))


@pytest.mark.parametrize("text", ["0.5", "1,000", "10\\%", "\\frac{1}{0}", "1/0", "x", "\\frac{a}{b}", "2^3", "+5"])
def test_non_literals_are_left_to_math_verify(text):
    assert literal_value(text) is None


def test_values_equal_after_six_decimal_rounding_are_left_to_math_verify():
    assert fast_reason("\\frac{1}{3}", "333333/1000000") is None


def test_fast_verdicts_match_math_verify_on_real_literal_golds(benchmarks_dir):
    from benchctl.tasks import get_task

    golds = [p.gold for name in ("math500", "aime24", "amc23") for p in get_task(name).load(benchmarks_dir)]
    pairs = [(g, a) for g in golds if literal_value(g) is not None
             for a in (g, g.replace("\\frac", "\\dfrac"), str(literal_value(g) + 1).replace("/", "/"),
                       f"{literal_value(g).numerator}/{literal_value(g).denominator}", "-" + g.lstrip("-"))]
    assert len(pairs) > 1000
    decided = [(g, a, fast_reason(g, a)) for g, a in pairs]
    checked = [(g, a, r) for g, a, r in decided if r is not None]
    assert len(checked) > 0.9 * len(pairs)
    mismatches = [(g, a, r) for g, a, r in checked if grade_job("default", g, a, True, None)[0] != r]
    assert mismatches == []
