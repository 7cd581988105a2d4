"""What one grading worker process does: per-task string normalisation, math-verify parse and verify.

Runs inside the worker processes of `benchctl.grading.math_pool` (and in-process when `workers=0`). math-verify's
own signal-based timeouts are disabled (`parsing_timeout=None`, `timeout_seconds=None`): the parent process
bounds each item instead (landscape.md section 5: signal.alarm breaks outside the main thread and cannot interrupt
C-level big-integer arithmetic).

Profiles (string rewrites applied to the gold AND the answer before parsing; `default` rewrites nothing, so it is
plain math-verify):
- `minerva`: Python/NumPy-style numbers the Minerva (MIT OCW) golds box, e.g. `4.5e33` -> `4.5\\times10^{33}`
  (math-verify reads `4.5e33` as 4.5*e*33), `-3./2` -> `-3/2`, `np.arcsin` -> `\\arcsin`.
- `olympiad`: the stray `$` the OlympiadBench golds keep (`221,$8` -> `221, 8`;
  `\\cup\\{1\\}$.` -> `\\cup\\{1\\}`); golds and box contents only (`BOX_ONLY`):
  in a whole completion `$` delimits LaTeX for math-verify's extraction.
Numbers in `minerva` are compared relatively (rel 1e-6) when both sides are plain real numbers [our choice]:
math-verify rounds to 6 decimal places (absolute), which makes every pair of values below 5e-7 equal
(`2.88e-19` == `2.88e-20`; Math-Verify issue #14) and physics magnitudes like 1e-27 J are common there.
Tolerance (`tol`, absolute): OlympiadBench's `error` field; a wrong verdict is turned correct when both sides are
plain numbers within `tol` (OlympiadBench's judge compares `abs(a - b) <= precision`).
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import replace
from functools import lru_cache

import math_verify.parser
import sympy
from latex2sympy2_extended.latex2sympy2 import latex2sympy, normalize_latex
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from benchctl.grading.math_extract import BOX_UNPARSED
from benchctl.grading.math_fast import assemble, literal_sympy, split_structure

logging.getLogger("math_verify").setLevel(logging.ERROR)  # its "timeout disabled" warning and parse tracebacks

EXTRACTION_CONFIG = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
"""Boxed answers first (priority 0), then math-verify's usual anchors/LaTeX/plain-expression fallbacks."""

_SCI = re.compile(r"(?<![\w.\\])(\d+(?:\.\d*)?)[eE]([+-]?\d+)(?![\w.])")
_BARE_POINT = re.compile(r"(\d)\.(?![\d.])")
_NUMPY = re.compile(r"\b(?:np|numpy|math)\.(?=[a-z])")
_OLY_DOLLAR = re.compile(r"\s*,?\s*\$\s*,?\s*")


def _minerva(text: str) -> str:
    text = _NUMPY.sub("\\\\", text)
    text = _SCI.sub(lambda m: f"{m.group(1)}\\times10^{{{int(m.group(2))}}}", text)
    return _BARE_POINT.sub(r"\1", text)


def _olympiad(text: str) -> str:
    if "$" not in text:
        return text
    parts = [p for p in _OLY_DOLLAR.split(text.strip().rstrip(".").strip()) if p]
    return ", ".join(parts) if "," in text else " ".join(parts)


PROFILES = {"default": None, "minerva": _minerva, "olympiad": _olympiad}
BOX_ONLY = {"olympiad"}  # rewrites for golds and box contents only: in a whole completion `$` delimits LaTeX
RELATIVE_NUMBERS = {"minerva": 1e-6}  # profile -> relative tolerance for plain-number pairs


def normalize(profile: str, text: str) -> str:
    """The profile's rewrite of `text` (identity for `default`)."""
    rewrite = PROFILES[profile]
    return text if rewrite is None else rewrite(text)


MATH_VERIFY_PARSE_LATEX = math_verify.parser.parse_latex_cached  # the original (the differential test's reference)
_LATEX2SYMPY = getattr(MATH_VERIFY_PARSE_LATEX, "__wrapped__", MATH_VERIFY_PARSE_LATEX)


_NOT_PLAIN = re.compile(
    r"[=<>;:|&!]|\\\\|\\(?:pm|mp|in|cup|cap|setminus|le|ge|leq|geq|ne|neq|lt|gt|approx|equiv|sim|mid|to|subset|"
    r"supset|subseteq|supseteq|emptyset|varnothing|begin|end|text|mbox|textbf|mathrm|operatorname|land|lor|wedge|vee|"
    r"neg|forall|exists|implies|iff|rightarrow|Rightarrow|quad|qquad)(?![a-zA-Z])|\\[{}]"
)


@lru_cache(maxsize=8192)
def _plain_element(text: str, is_real: bool):
    """latex2sympy of one comma part on its own, when that is a plain expression (sympy Expr, no matrix)."""
    try:
        value = latex2sympy(text, is_real=is_real, convert_degrees=False, normalization_config=None)
    except Exception:  # noqa: BLE001 - not ours: the whole text goes to latex2sympy
        return None
    return value if isinstance(value, sympy.Expr) and not isinstance(value, sympy.MatrixExpr) else None


def structure_sympy(latex: str):
    """latex2sympy of a tuple / interval / bare list whose 2+ comma parts are plain expressions, built from the
    parts parsed one by one (`math_fast.assemble`): ANTLR's full-context prediction on the bracket and comma
    decisions costs 20-70 ms per structure, a lone part a few ms. Parts with relations, `\\pm`, sets, text or
    matrices are not ours (None). A test compares it with latex2sympy on generated and real strings."""
    split = split_structure(latex)
    if split is None or len(split[1]) < 2 or any(not p.strip() or _NOT_PLAIN.search(p) for p in split[1]):
        return None
    is_real = not math_verify.parser.should_treat_as_complex(latex)
    values = [_plain_element(part.strip(), is_real) for part in split[1]]
    if any(v is None for v in values):
        return None
    try:
        return assemble(split[0], values, split[2])
    except Exception:  # noqa: BLE001 - e.g. a non-real interval end: leave the error to latex2sympy
        return None


_NOT_UNION = re.compile(r"\\(?:cap|setminus|cup[a-zA-Z])|\\\\|\\[{}]|[=<>]")


def union_sympy(latex: str):
    """latex2sympy of `A \\cup B \\cup ...` whose parts are all bracketed intervals / tuples that `literal_sympy`
    or `structure_sympy` build: `convert_set_union`'s left fold `Union(Union(A, B), C, evaluate=False)`, tuple
    parts as FiniteSet. Anything else (`\\cap`, `\\setminus`, sets, relations, complex-looking text) is None.
    A test compares it with latex2sympy on generated and real strings (srepr identical)."""
    parts = latex.split("\\cup")
    if len(parts) < 2 or _NOT_UNION.search(latex) or math_verify.parser.should_treat_as_complex(latex):
        return None
    values = []
    for part in parts:
        value = literal_sympy(part)
        value = structure_sympy(part) if value is None else value
        if not isinstance(value, (sympy.Interval, sympy.Tuple)):
            return None
        values.append(sympy.FiniteSet(*value) if isinstance(value, sympy.Tuple) else value)
    result = values[0]
    for value in values[1:]:
        result = sympy.Union(result, value, evaluate=False)
    return result


_PARSE_FAILED: dict[str, Exception] = {}  # latex -> what latex2sympy raised (lru_cache keeps no exceptions)


def parse_latex_fast(latex: str):
    """math-verify's `parse_latex_cached` (latex2sympy on the NORMALISED latex), with numeric literal structures
    (`(2, 4)`, `-2, 1`, `[0.5, \\infty)`, `\\frac{3}{4}`) built directly by `math_fast.literal_sympy` and other
    tuples / intervals / lists from their parts (`structure_sympy`), unions of those (`union_sympy`): the same
    sympy object (srepr-identical, tested) without ANTLR's slow full-context parse of the whole structure (5-70 ms).
    Memoised, failures included (math-verify keeps only the last 20 successes; a completion without a box makes
    it try the text's LaTeX pieces right to left, and truncated completions of one solution share most pieces).
    Installed into `math_verify.parser` when this module loads."""
    failed = _PARSE_FAILED.get(latex)
    if failed is not None:
        raise failed
    try:
        return _parse_latex_fast(latex)
    except Exception as exc:  # noqa: BLE001 - re-raised; latex2sympy is deterministic on the same string
        if len(_PARSE_FAILED) > 8192:
            _PARSE_FAILED.clear()
        _PARSE_FAILED[latex] = exc
        raise


@lru_cache(maxsize=8192)
def _parse_latex_fast(latex: str):
    value = literal_sympy(latex)
    if value is None:
        value = structure_sympy(latex)
    if value is None and "\\cup" in latex:
        value = union_sympy(latex)
    return _LATEX2SYMPY(latex) if value is None else value


math_verify.parser.parse_latex_cached = parse_latex_fast  # extract_latex looks the name up at call time


@lru_cache(maxsize=8192)
def parse_cached(text: str) -> tuple:
    """math-verify `parse` with our extraction config and no signal timeout, memoised per worker."""
    return tuple(parse(text, list(EXTRACTION_CONFIG), parsing_timeout=None))


_BOX_NORMALIZATION = replace(EXTRACTION_CONFIG[0].normalization_config, boxed="last")


@lru_cache(maxsize=8192)
def parse_box(content: str) -> tuple:
    """What math-verify's `parse` makes of a completion whose answer is certainly this box's content
    (`math_extract.math_verify_box`): `extract_latex` on its plain-box match (`normalize_latex` with boxed="last",
    then `parse_latex_cached`), giving (value, normalized string) as `parse` does, or (normalized string,) when the
    box does not parse. NOT `parse("\\boxed{..}")`: on a failed box that would read on inside the box text alone
    (`\\boxed{\\text{\\frac{13}{6}}}` -> 13/6 from the bare fraction), where the completion is what math-verify
    reads."""
    try:
        latex = normalize_latex(f"\\boxed{{{content}}}", _BOX_NORMALIZATION)
    except Exception:  # noqa: BLE001 - math-verify's parse returns [] on it
        return ()
    try:
        return (parse_latex_fast(latex), latex)
    except Exception:  # noqa: BLE001 - extract_latex: not parsed
        return (latex,)


_VERIFIED: dict[tuple, bool] = {}  # (gold text, sympy parts of the parsed answer, string match) -> verify result


def _strings_match(gold: tuple, pred: tuple) -> bool:
    """math-verify's string rule: some gold string equals some answer string, both stripped and non-empty."""
    golds = {x.strip() for x in gold if isinstance(x, str)} - {""}
    return any(isinstance(x, str) and x.strip() in golds for x in pred)


def verify_cached(gold_text: str, gold: tuple, pred: tuple) -> bool:
    """math-verify `verify(gold, pred)`, memoised on the exact structure of the answer's sympy parts (`srepr`)
    plus whether its strings match, so answers spelled differently but parsed to identical objects (`\\dfrac` /
    `\\frac`, `\\left(` / `(`, `a  +  b` / `a + b`) are verified once. Exact: `verify` is `any` over the
    (gold, answer) element pairs of `compare_single_extraction`, which compares two sympy objects with
    `sympy_expr_eq`, two strings by stripped non-empty equality, and a string with a sympy object as False; so a
    matching string pair makes it True whatever the sympy pairs give (each wrapped: an error there is False),
    and otherwise only the sympy parts matter."""
    if _strings_match(gold, pred):
        return True
    parts = [x for x in pred if not isinstance(x, str)]
    if not all(isinstance(x, (sympy.Basic, sympy.MatrixBase)) for x in parts):
        return bool(verify(list(gold), list(pred), timeout_seconds=None))  # not a shape parse returns: no memo
    key = (gold_text, tuple(sympy.srepr(x) for x in parts))
    if key not in _VERIFIED:
        if len(_VERIFIED) > 65536:
            _VERIFIED.clear()
        _VERIFIED[key] = bool(verify(list(gold), parts, timeout_seconds=None))
    return _VERIFIED[key]


def _is_unparsed(result: tuple) -> bool:
    return all(isinstance(x, str) for x in result)


def _number(result: tuple) -> float | None:
    """The value when the first parse result is a plain real number (no symbols), else None."""
    x = result[0] if result else None
    if not isinstance(x, sympy.Expr) or not x.is_number:
        return None
    try:
        value = complex(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return value.real if value.imag == 0 and math.isfinite(value.real) else None


def _within(gold: tuple, pred: tuple, tol: float) -> bool:
    g, p = _number(gold), _number(pred)
    return g is not None and p is not None and abs(g - p) <= tol * (1 + 1e-9)


def grade_job(
    profile: str, gold: str | None, answer: str, boxed: bool, tol: float | None
) -> tuple[str, str | None, str]:
    """(reason, extracted, detail) for one answer; `boxed` answers are box contents, others whole completions.

    gold None: extraction only (reason "correct" is not used; the extracted string is what matters).
    A box math-verify cannot parse gives detail `BOX_UNPARSED`: math-verify would go on to the other candidates of
    the whole completion, so the parent grades that instead (`benchctl.grading.math`).
    """
    text = normalize(profile, answer) if boxed or profile not in BOX_ONLY else answer
    pred = parse_box(text) if boxed else parse_cached(text)
    extracted = answer if boxed else (next((x for x in reversed(pred) if isinstance(x, str)), None) if pred else None)
    if boxed and len(pred) == 1:
        return "parse_error", answer, BOX_UNPARSED
    if boxed and not pred:
        return "parse_error", answer, "answer not parsed"
    if not pred:
        return "no_answer", None, ""
    if gold is None:
        return "wrong", extracted, "extraction only"
    gold_text = f"\\boxed{{{normalize(profile, gold)}}}"
    gold_parsed = parse_cached(gold_text)
    rel = RELATIVE_NUMBERS.get(profile)
    g, p = (_number(gold_parsed), _number(pred)) if rel else (None, None)
    if g is not None and p is not None:
        return ("correct", extracted, "relative") if math.isclose(g, p, rel_tol=rel) else ("wrong", extracted, "")
    if verify_cached(gold_text, gold_parsed, pred):
        return "correct", extracted, ""
    if tol is not None and _within(gold_parsed, pred, tol):
        return "correct", extracted, f"within tolerance {tol:g}"
    if not gold_parsed or _is_unparsed(gold_parsed):
        return "parse_error", extracted, "gold not parsed"
    if _is_unparsed(pred):
        return "parse_error", extracted, "answer not parsed"
    return "wrong", extracted, ""
