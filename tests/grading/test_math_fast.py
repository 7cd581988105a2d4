"""The rational-literal fast path decides exactly what math-verify decides (checked against the worker path)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchctl.grading.math_fast import fast_reason, literal_sympy, literal_value
from benchctl.grading.math_worker import grade_job


@pytest.mark.parametrize(
    "text, value",
    [
        ("204", 204),
        (" -7 ", -7),
        ("025", 25),
        ("14/3", (14, 3)),
        ("-\\frac{7}{12}", (-7, 12)),
        ("\\dfrac{-7}{12}", (-7, 12)),
        ("\\frac12", (1, 2)),
        ("\\tfrac{3}{6}", (1, 2)),
    ],
)
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
    pairs = [
        (g, a)
        for g in golds
        if literal_value(g) is not None
        for a in (
            g,
            g.replace("\\frac", "\\dfrac"),
            str(literal_value(g) + 1).replace("/", "/"),
            f"{literal_value(g).numerator}/{literal_value(g).denominator}",
            "-" + g.lstrip("-"),
        )
    ]
    assert len(pairs) > 1000
    decided = [(g, a, fast_reason(g, a)) for g, a in pairs]
    checked = [(g, a, r) for g, a, r in decided if r is not None]
    assert len(checked) > 0.9 * len(pairs)
    mismatches = [(g, a, r) for g, a, r in checked if grade_job("default", g, a, True, None)[0] != r]
    assert mismatches == []


# -- literal_sympy: srepr-identical to latex2sympy wherever it answers ------------------------------------------


def _latex2sympy(text):
    """What math-verify's parse_latex_cached returns for `text` (the unpatched function), or the exception name."""
    import sympy

    from benchctl.grading.math_worker import _LATEX2SYMPY

    try:
        return sympy.srepr(_LATEX2SYMPY(text))
    except Exception as exc:  # noqa: BLE001 - a parse failure is an outcome to compare
        return f"raised {type(exc).__name__}"


_SPACE = st.sampled_from(["", "", " ", "  "])
_DIGITS = st.from_regex(r"0{0,2}[0-9]{1,6}", fullmatch=True)
_ATOM = st.one_of(
    _DIGITS,
    st.builds(lambda a, b: f"{a}.{b}", st.from_regex(r"[0-9]{0,4}", fullmatch=True), _DIGITS),
    st.builds(
        lambda s1, a, s2, b: f"\\frac{{{s1}{a}}}{{{s2}{b}}}",
        st.sampled_from(["", "-"]),
        _DIGITS,
        st.sampled_from(["", "-"]),
        _DIGITS,
    ),
    st.just("\\infty"),
)
_ELEMENT = st.builds(
    lambda sp1, sign, sp2, atom, sp3: f"{sp1}{sign}{sp2}{atom}{sp3}",
    _SPACE,
    st.sampled_from(["", "", "-"]),
    _SPACE,
    _ATOM,
    _SPACE,
)
_STRUCTURE = st.builds(
    lambda open_, elements, close: f"{open_}{','.join(elements)}{close}",
    st.sampled_from(["", "(", "[", "(", "\\{", "{"]),
    st.lists(_ELEMENT, min_size=1, max_size=5),
    st.sampled_from(["", ")", "]", ")", "\\}", "}"]),
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(_STRUCTURE)
def test_literal_structures_are_built_exactly_as_latex2sympy_builds_them(text):
    import sympy

    value = literal_sympy(text)
    if value is not None:
        assert sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "(2,4)",
        "(15,-29)",
        "(2,2)",
        "(3,3]",
        "[3,3]",
        "[4,3]",
        "(3,4]",
        "[1, 2)",
        "(-\\infty, 0]",
        "(2,\\infty)",
        "(\\infty, 2)",
        "(-\\infty,\\infty)",
        "-2,1",
        "3, 5, 7",
        "1,5,5",
        "(1,-16,-4,43)",
        "( 0.5 , \\frac{7}{2} )",
        "\\frac{3}{-2}",
        "\\frac{4}{2}",
        "007",
        "00.5",
        "0.10",
        "3.000",
        "- 2",
        ".25",
        "-1.5",
    ],
)
def test_literal_edge_shapes_match_latex2sympy(text):
    import sympy

    value = literal_sympy(text)
    assert value is not None and sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "1,500",
        "(1,500)",
        "2,000.5",
        "(5)",
        "[1,2,3]",
        "\\frac{1}{0}",
        "\\frac12",
        "1e5",
        "--2",
        "\\{1,2\\}",
        "x",
        "1+2",
        "(1,2",
        "",
        "(,)",
        "1.",
        "2^3",
        "10\\%",
    ],
)
def test_other_shapes_are_left_to_latex2sympy(text):
    assert literal_sympy(text) is None


def test_literal_parse_agrees_on_every_real_gold_and_perturbation(benchmarks_dir):
    import re

    import sympy

    from benchctl.tasks import get_task

    golds = [p.gold for name in ("math500", "aime24", "amc23") for p in get_task(name).load(benchmarks_dir)]
    texts = {
        t
        for g in golds
        for t in (g, re.sub(r"\d+", lambda m: str(int(m.group()) + 1), g), g.replace(",", " , "), "-" + g)
    }
    covered = [(t, literal_sympy(t)) for t in sorted(texts)]
    covered = [(t, v) for t, v in covered if v is not None]
    assert len(covered) > 500
    assert [t for t, v in covered if sympy.srepr(v) != _latex2sympy(t)] == []


def test_math_verify_parse_goes_through_the_literal_builder_in_workers():
    import math_verify.parser

    from benchctl.grading import math_worker

    assert math_verify.parser.parse_latex_cached is math_worker.parse_latex_fast
    import sympy

    parsed = math_worker.parse_cached("\\boxed{\\left( 3 , -7 \\right)}")
    assert parsed == (sympy.Tuple(3, -7), "( 3 , -7 )")


def test_latex_that_fails_to_parse_is_parsed_once_and_fails_the_same_way_again(monkeypatch):
    from benchctl.grading import math_worker

    calls = []

    def latex2sympy(latex):
        calls.append(latex)
        raise ValueError(f"cannot parse {latex}")

    monkeypatch.setattr(math_worker, "_LATEX2SYMPY", latex2sympy)
    monkeypatch.setattr(math_worker, "_PARSE_FAILED", {})
    errors = []
    for _ in range(3):
        with pytest.raises(ValueError) as info:
            math_worker.parse_latex_fast("\\frac{x}{ \\unparseable_for_this_test")
        errors.append(str(info.value))
    assert calls == ["\\frac{x}{ \\unparseable_for_this_test"] and len(set(errors)) == 1


# -- structure_sympy: tuples / intervals / lists of plain expressions, parsed part by part -------------------------
_PARTS = [
    "3",
    "-2",
    "0.5",
    "\\frac{3}{4}",
    "\\infty",
    "-\\infty",
    "\\sqrt{3}",
    "-\\sqrt{3}",
    "2\\sqrt{5}",
    "\\pi",
    "\\frac{\\pi}{2}",
    "\\frac{\\pi^2}{8}",
    "\\frac{5 \\pi^2}{4}",
    "x",
    "2x+1",
    "a",
    "e",
    "i",
    "1+2i",
    "\\sin x",
    "x^2",
    "f(1,2)",
    "\\frac{1+\\sqrt{5}}{2}",
    "10\\%",
    "k",
    "-b",
    "\\log 2",
    "|x|",
    "3!",
    "\\pm 1",
    "x=1",
    "\\{1\\}",
    "\\text{cm}",
    "1,500",
    "(1,2)",
    "\\emptyset",
    "",
]
_GENERAL = st.builds(
    lambda open_, parts, close, sep: f"{open_}{sep.join(parts)}{close}",
    st.sampled_from(["", "(", "[", "("]),
    st.lists(st.sampled_from(_PARTS), min_size=2, max_size=4),
    st.sampled_from(["", ")", "]", ")"]),
    st.sampled_from([",", ", ", " , "]),
)


@settings(max_examples=300, deadline=None)
@given(_GENERAL)
def test_structures_of_plain_parts_are_built_exactly_as_latex2sympy_builds_them(text):
    import sympy

    from benchctl.grading.math_worker import structure_sympy

    value = structure_sympy(text)
    if value is not None:
        assert sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "[ \\frac{\\pi^2}{8} , \\frac{5 \\pi^2}{9} ]",
        "(-\\sqrt{3}, \\sqrt{6})",
        "( 3, \\frac{\\pi}{2} )",
        "(x, y)",
        "(1, i)",
        "(1+2i, 3)",
        "(e, \\pi)",
        "[x, x]",
        "(3, \\sqrt{5})",
        "(f(1,2), 3)",
        "(-\\infty, \\sqrt{2}]",
        "\\frac{1}{2}, \\sqrt{2}",
    ],
)
def test_plain_part_structures_match_latex2sympy(text):
    import sympy

    from benchctl.grading.math_worker import structure_sympy

    value = structure_sympy(text)
    assert value is not None and sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "(2,12) \\cup (12,102)",
        "(1, \\pm 2)",
        "x=1, y=2",
        "(\\{1\\}, 2)",
        "(1,500)",
        "[1, 2, 3]",
        "(a+5)(b+2)",
        "\\text{A}, \\text{B}",
        "(1, )",
        "1 < x, 2",
    ],
)
def test_structures_with_other_parts_are_left_to_latex2sympy(text):
    from benchctl.grading.math_worker import structure_sympy

    assert structure_sympy(text) is None


def test_structure_parse_agrees_on_every_real_comma_gold(benchmarks_dir):
    import sympy

    from benchctl.grading.math_worker import structure_sympy
    from benchctl.tasks import get_task

    golds = {
        p.gold for name in ("math500", "aime24", "amc23", "olympiadbench") for p in get_task(name).load(benchmarks_dir)
    }
    covered = [(g, structure_sympy(g)) for g in sorted(golds) if "," in g]
    covered = [(g, v) for g, v in covered if v is not None]
    assert len(covered) > 30
    assert [g for g, v in covered if sympy.srepr(v) != _latex2sympy(g)] == []


_UNION_PART = st.builds(
    lambda o, a, b, c: f"{o}{a}, {b}{c}",
    st.sampled_from(["(", "["]),
    st.sampled_from(["-\\infty", "-2", "0", "\\frac{1}{2}", "\\sqrt{3}", "x", "7"]),
    st.sampled_from(["\\infty", "3", "0", "\\frac{5}{2}", "2\\pi", "y", "-1"]),
    st.sampled_from([")", "]"]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(_UNION_PART, st.sampled_from(["(1, 2, 3)", "[0, 1, 2]", "(2)", "\\{1\\}", "5", "(1, i)"])),
        min_size=2,
        max_size=4,
    ),
    st.sampled_from(["\\cup", " \\cup ", "\\cap", "\\setminus"]),
)
def test_unions_of_structures_are_built_exactly_as_latex2sympy_builds_them(parts, op):
    import sympy

    from benchctl.grading.math_worker import union_sympy

    text = op.join(parts)
    value = union_sympy(text)
    if value is not None:
        assert sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "(0,9) \\cup (9,36)",
        "(-\\infty, 2) \\cup (3, \\infty)",
        "[1,2]\\cup[3,4]\\cup(5,6)",
        "(1,2,3) \\cup [0, \\frac{\\pi}{2}]",
        "[5,2] \\cup (3,3)",
        "(-\\infty,-1] \\cup [x, y)",
    ],
)
def test_union_shapes_match_latex2sympy(text):
    import sympy

    from benchctl.grading.math_worker import union_sympy

    value = union_sympy(text)
    assert value is not None and sympy.srepr(value) == _latex2sympy(text)


@pytest.mark.parametrize(
    "text",
    [
        "(1,i) \\cup (2,3)",
        "(1,2) \\cap (0,3)",
        "\\{1\\} \\cup (2,3)",
        "x \\in (1,2) \\cup (3,4)",
        "5 \\cup (1,2)",
        "(1,2) \\cup (3,4) \\setminus \\{3\\}",
        "(1,2)",
    ],
)
def test_other_unions_are_left_to_latex2sympy(text):
    from benchctl.grading.math_worker import union_sympy

    assert union_sympy(text) is None


def test_union_parse_agrees_on_every_real_union_gold(benchmarks_dir):
    import sympy

    from benchctl.grading.math_worker import union_sympy
    from benchctl.tasks import get_task

    golds = {
        p.gold for name in ("math500", "aime24", "amc23", "olympiadbench") for p in get_task(name).load(benchmarks_dir)
    }
    covered = [(g, union_sympy(g)) for g in sorted(golds) if "\\cup" in g]
    covered = [(g, v) for g, v in covered if v is not None]
    assert len(covered) >= 3
    assert [g for g, v in covered if sympy.srepr(v) != _latex2sympy(g)] == []


VERIFY_MEMO_CASES = [  # (gold, answers): spacing variants, unparsed text (string rule), mixed, equations
    ("y = 2x + 3", ["y = 2x + 3", "y  =  2x  +  3", "y=2x+3", "y = 2x + 1", "y  =  2x  +  1", "2x + 3"]),
    ("\\text{Monday}", ["\\text{Monday}", "\\text{ Monday }", "\\text{Tuesday}", "Monday", "\\text{monday}"]),
    ("\\text{(C)}", ["\\text{(C)}", "C", "(C)", "\\text{(D)}", "\\text{(C)} "]),
    ("\\frac{\\pi}{6}", ["\\frac{\\pi}{6}", "\\dfrac{\\pi}{6}", "\\frac{\\pi}{6} ", "\\pi/6", "30^\\circ", "\\pi"]),
    ("(2, 4)", ["(2, 4)", "(2,4)", "\\left( 2, 4 \\right)", "(4, 2)", "[2, 4]"]),
    ("x^2 + 7x + 10", ["x^2+7x+10", "x^2  +  7x  +  10", "(x+2)(x+5)", "x^2 + 7x + 11"]),
    ("\\{1\\pm\\sqrt{5},-2\\}", ["\\{1\\pm\\sqrt{5} , -2\\}", "\\{1\\pm\\sqrt{5},-2\\}", "\\{-2, 1\\pm\\sqrt{5}\\}"]),
]


@pytest.mark.parametrize("gold, answers", VERIFY_MEMO_CASES)
def test_verify_memo_gives_math_verifys_verdict_for_every_spelling(gold, answers):
    """verify_cached is keyed on the answer's sympy parts plus the string rule; every spelling, graded twice in
    two orders (memo misses and hits), gets exactly what math-verify's verify gives on the full parses."""
    from math_verify import verify

    from benchctl.grading import math_worker as worker

    gold_text = f"\\boxed{{{gold}}}"
    gold_parsed = worker.parse_cached(gold_text)
    for order in (answers, answers[::-1]):
        worker._VERIFIED.clear()
        for answer in order + order:
            pred = worker.parse_box(answer)
            expected = bool(verify(list(gold_parsed), list(pred), timeout_seconds=None))
            assert worker.verify_cached(gold_text, gold_parsed, pred) == expected, (gold, answer)
