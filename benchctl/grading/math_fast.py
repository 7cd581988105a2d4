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


# -- exact stand-in for latex2sympy on numeric literal structures (used inside the grading workers) ---------------
_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
_ELEMENT = re.compile(
    rf"\s*(?P<neg>-?)\s*(?:(?P<num>{_NUMBER})|(?P<inf>\\infty)"
    rf"|\\frac\s*\{{\s*(?P<top_neg>-?)\s*(?P<top>\d+)\s*\}}\s*\{{\s*(?P<bot_neg>-?)\s*(?P<bot>\d+)\s*\}})\s*"
)
_THOUSANDS = re.compile(r"\d,\d{3}")  # latex2sympy's lexer reads `1,500` as ONE number: never ours
_OPEN, _CLOSE = {"(": True, "[": False}, {")": True, "]": False}


def _number(text: str):
    """latex2sympy `parse_number` (leading zeros of an integer dropped, then sympy.Number)."""
    import sympy

    if text.isdigit():
        text = text.lstrip("0") or "0"
    return sympy.Number(text)


def _element(text: str):
    """One literal element as latex2sympy converts it (unary minus on a Number negates it), else None."""
    import sympy

    m = _ELEMENT.fullmatch(text)
    if m is None:
        return None
    if m["num"] is not None:
        value = _number(m["num"])
    elif m["inf"] is not None:
        value = sympy.oo
    else:
        top, bot = _number(m["top"]), _number(m["bot"])
        if bot == 0:
            return None
        value = sympy.Rational(-top if m["top_neg"] else top, -bot if m["bot_neg"] else bot)
    return -value if m["neg"] else value


def literal_sympy(latex: str):
    """What `latex2sympy(latex)` returns when `latex` is a numeric literal structure, else None (= not ours).

    Covered shapes (spaces anywhere between tokens): an element (`7`, `-0.25`, `.5`, `\\frac{-3}{4}`, `-\\infty`);
    a bare comma list of 2+ elements -> FiniteSet; `(a, b)`, `[a, b]`, `(a, b]`, `[a, b)` -> Interval, or Tuple
    when that interval would be empty (latex2sympy `convert_interval`); `(a, b, c, ...)` -> Tuple. Anything with
    a thousands-like comma (`1,500`), another bracket shape, or any other token is left to latex2sympy. A test
    compares this with latex2sympy on generated and real strings (`srepr` identical).
    """
    import sympy

    text = latex.strip()
    if not text or _THOUSANDS.search(text) or "{," in text or ",}" in text:
        return None
    bracketed = text[0] in _OPEN and text[-1] in _CLOSE
    parts = (text[1:-1] if bracketed else text).split(",")
    values = [_element(part) for part in parts]
    if any(v is None for v in values):
        return None
    if not bracketed:
        return values[0] if len(values) == 1 else sympy.FiniteSet(*values)
    left_open, right_open = _OPEN[text[0]], _CLOSE[text[-1]]
    if len(values) > 2:
        return sympy.Tuple(*values) if left_open and right_open else None
    if len(values) != 2:
        return None
    left, right = values
    if (left_open and right_open and right <= left) or (not left_open and not right_open and right < left):
        return sympy.Tuple(left, right)
    return sympy.Interval(left, right, left_open=left_open, right_open=right_open)
