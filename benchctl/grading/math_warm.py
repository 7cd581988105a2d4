"""Warm math-verify's LaTeX parser once in the forkserver, so every forked grading worker starts warm.

latex2sympy's ANTLR parser builds its prediction DFA lazily and shares it across parses in a process; a cold
process parses about 1.8x slower until the DFA fills (measured: 5.8 vs 3.3 ms per unique MATH-500 answer job).
`benchctl.grading.math_pool` preloads this module into the forkserver, so the work is done once (~1-2 s, in the
background process) and inherited copy-on-write by every worker, including replacements after a timeout.
The corpus is generic answer shapes (fractions, roots, tuples, intervals, sets, matrices, units, equations),
not benchmark golds.
"""

from __future__ import annotations

from benchctl.grading.math_worker import grade_job

CORPUS = (
    "\\frac{1}{2}",
    "\\dfrac{3}{4}",
    "-\\frac{7}{12}",
    "2\\sqrt{3}",
    "\\frac{\\sqrt{5}}{2}",
    "3\\pi",
    "\\frac{\\pi}{6}",
    "(1, 2)",
    "\\left( 3, \\frac{\\pi}{2} \\right)",
    "[-2, 7)",
    "(-\\infty, 0) \\cup (1, \\infty)",
    "\\{1, 2, 3\\}",
    "x^2 + 7x + 10",
    "(x+2)(x+5)",
    "y = 2x - 3",
    "x=2",
    "2^{10}",
    "10^{-3}",
    "4.5 \\times 10^{3}",
    "0.25",
    "1,000",
    "50\\%",
    "30^\\circ",
    "\\text{(C)}",
    "\\text{Monday}",
    "12 \\text{ cm}",
    "\\sin x + \\cos x",
    "\\log_2 8",
    "e^{i\\pi}",
    "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}",
    "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
    "a_n = 2n+1",
    "f(x) = x^2",
    "\\sqrt[3]{2}",
    "|x - 1|",
    "\\infty",
    "-5",
    "1/2",
    "3/4",
    "\\frac{a+b}{c}",
    "p - q",
    "\\binom{5}{2}",
    "5!",
    "\\$18.50",
    "\\pm 3",
    "2 + 3i",
    "x \\in [0, 1]",
    "52_8",
    "\\tan^{-1}(2)",
    "\\mathbf{v}",
)


def warm_up() -> None:
    """Grade every corpus entry against itself and against 0 (parse + verify paths)."""
    for text in CORPUS:
        grade_job("default", text, text, True, None)
        grade_job("default", text, "0", True, None)


warm_up()
