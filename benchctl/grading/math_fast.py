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
    sign, num, den = (
        (m["sa"], m["a"], m["b"]) if m["a"] is not None else (m["sf"], m["fa"] or m["da"], m["fb"] or m["db"])
    )
    if int(den) == 0:
        return None
    value = Fraction(int(num), int(den))
    return -value if sign else value


def fast_reason(gold: str, answer: str) -> str | None:
    """ "correct" / "wrong" when both are rational literals and math-verify's verdict is certain, else None."""
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


def split_structure(latex: str) -> tuple[str, list[str], str] | None:
    """(opening bracket, top-level comma parts, closing bracket) of `(..)` / `[..]` whose first bracket closes at
    the very end, or ("", parts, "") for a bare list; None for a thousands-like comma (`1,500`) or unbalanced text.
    `(1,2) \\cup (3,4)` is a bare one-part text (its first bracket closes early)."""
    text = latex.strip()
    if not text or _THOUSANDS.search(text):
        return None
    bracketed = len(text) > 1 and text[0] in _OPEN and text[-1] in _CLOSE
    body = text[1:-1] if bracketed else text
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return ("", [text], "") if bracketed else None
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if depth:
        return None
    parts.append(body[start:])
    return (text[0], parts, text[-1]) if bracketed else ("", parts, "")


def assemble(open_: str, values: list, close: str):
    """The sympy object latex2sympy builds from converted elements (`convert_interval`, `convert_ordered_tuple`,
    `convert_elements_to_set_or_tuple`); None for shapes it may read otherwise (`[a, b, c]`, one bracketed element).
    May raise what sympy raises (a non-real interval end), as latex2sympy would."""
    import sympy

    if not open_:
        return values[0] if len(values) == 1 else sympy.FiniteSet(*values)
    left_open, right_open = _OPEN[open_], _CLOSE[close]
    if len(values) > 2:
        return sympy.Tuple(*values) if left_open and right_open else None
    if len(values) != 2:
        return None
    left, right = values
    try:  # latex2sympy: an interval that would be empty is read as a tuple; symbolic ends cannot be compared
        if (left_open and right_open and right <= left) or (not left_open and not right_open and right < left):
            return sympy.Tuple(left, right)
    except Exception:  # noqa: BLE001 - same as latex2sympy's convert_interval
        pass
    return sympy.Interval(left, right, left_open=left_open, right_open=right_open)


def literal_sympy(latex: str):
    """What `latex2sympy(latex)` returns when `latex` is a numeric literal structure, else None (= not ours).

    Covered shapes (spaces anywhere between tokens): an element (`7`, `-0.25`, `.5`, `\\frac{-3}{4}`, `-\\infty`);
    a bare comma list of 2+ elements -> FiniteSet; `(a, b)`, `[a, b]`, `(a, b]`, `[a, b)` -> Interval, or Tuple
    when that interval would be empty (latex2sympy `convert_interval`); `(a, b, c, ...)` -> Tuple. Anything with
    a thousands-like comma (`1,500`), another bracket shape, or any other token is left to latex2sympy. A test
    compares this with latex2sympy on generated and real strings (`srepr` identical).
    """
    split = split_structure(latex)
    if split is None:
        return None
    open_, parts, close = split
    values = [_element(part) for part in parts]
    if any(v is None for v in values):
        return None
    return assemble(open_, values, close)
