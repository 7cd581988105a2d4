"""Exact fast path for plain rational literals (integers, `a/b`, `\\frac{a}{b}`), decided without sympy.

When the gold and the boxed answer are both such literals, math-verify's verdict is known in advance: equal
values are correct; unequal values are wrong UNLESS math-verify's 6-decimal rounding makes them equal
(`float_rounding=6` in `verify`), in which case the pair still goes to math-verify. Decimals, thousands
separators, percentages, units and everything else always go to math-verify. Used only for the `default`
profile without a tolerance; a test checks the fast verdicts against math-verify on real and edge pairs.
"""

from __future__ import annotations

import re
from fractions import Fraction

_INT = r"-?\d+"
_LITERAL = re.compile(
    rf"(?P<int>{_INT})|(?P<sa>-?)(?P<a>\d+)/(?P<b>\d+)"
    rf"|(?P<sf>-?)\\[dt]?frac(?:\{{(?P<fa>{_INT})\}}\{{(?P<fb>{_INT})\}}|(?P<da>\d)(?P<db>\d))"
)


def literal_value(text: str) -> Fraction | None:
    """The exact value of an integer / fraction literal (spaces ignored), else None."""
    m = _LITERAL.fullmatch(text.replace(" ", ""))
    if m is None:
        return None
    if m["int"] is not None:
        return Fraction(int(m["int"]))
    sign, num, den = (m["sa"], m["a"], m["b"]) if m["a"] is not None else (m["sf"], m["fa"] or m["da"], m["fb"] or m["db"])
    if int(den) == 0:
        return None
    value = Fraction(int(num), int(den))
    return -value if sign else value


def fast_reason(gold: str, answer: str) -> str | None:
    """"correct" / "wrong" when both are rational literals and math-verify's verdict is certain, else None."""
    g = literal_value(gold)
    if g is None:
        return None
    p = literal_value(answer)
    if p is None:
        return None
    if g == p:
        return "correct"
    return None if round(float(g), 6) == round(float(p), 6) else "wrong"
