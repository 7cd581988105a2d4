"""Differential test: benchctl's math verdict equals math-verify's on completions written the way models write.

Reference (what `benchctl/grading/math.py` documents): `verify(parse("\\boxed{gold}"), parse(completion))` with
math-verify 0.9.0, extraction config `[LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]`, no
time limits on either side (a loaded CI machine must not turn a slow parse into a difference), and its own
`parse_latex_cached` (the worker's srepr-identical replacement is swapped out while the
reference runs). Golds are real golds of `shared/benchmarks`; completions are built by hypothesis (seeded:
`derandomize=True`) in the styles of reasoning-model outputs: several boxes with assorted separators and prose,
`\\text{}` words, final-answer sentences (MATH few-shot "I hope it is correct"), intermediate boxes, `$`, `$$`,
`\\[ \\]` and `\\( \\)` displays, units, percentages, thousands separators, intervals and tuples, truncated texts,
no box.
Each example is a batch graded in ONE `grade_math` call through the pool (dedup, fast path, fallbacks included).
Every divergence this test found is a row of tests/grading/test_math_regressions.py ("math-verify fidelity").
"""

from __future__ import annotations

import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from benchctl.grading.math import grade_math

BATCH = 40  # completions per hypothesis example
EXAMPLES = int(os.environ.get("BENCHCTL_DIFFERENTIAL_EXAMPLES", 50))  # x BATCH = 2,000 completions [our choice:
# ~1 min on 2 cores]; a longer search outside CI: BENCHCTL_DIFFERENTIAL_EXAMPLES=500 BENCHCTL_DIFFERENTIAL_SEED=7
SEED = os.environ.get("BENCHCTL_DIFFERENTIAL_SEED")  # unset: derandomized, the same completions on every run
FILES = (
    "math500.jsonl",
    "aime24.jsonl",
    "aime25.jsonl",
    "amc23.jsonl",
    "gsm8k_test.jsonl",
    "minerva_math.jsonl",
    "olympiadbench.jsonl",
)


@pytest.fixture(scope="module")
def corpus(request) -> tuple[list[str], list[str]]:
    """(golds, prose snippets): every gold of the benchmark files (complete ones, else the test fixture subset),
    and 300-character windows of MATH-500 solutions with their boxes removed."""
    try:
        data_dir = request.getfixturevalue("benchmarks_dir")
    except pytest.skip.Exception:
        data_dir = request.getfixturevalue("fixture_data_dir")
    return load_corpus(Path(data_dir))


def load_corpus(data_dir: Path) -> tuple[list[str], list[str]]:
    """`corpus` from one folder of benchmark files."""
    golds, prose = [], []
    for name in FILES:
        path = Path(data_dir) / name
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            gold = str(row.get("answer") or row.get("final_answer") or "")
            if gold.strip() and "$" not in gold:  # golds with stray `$` need the olympiad profile
                golds.append(gold.strip())
            if name == "math500.jsonl":
                text = row["solution"].replace("\\boxed", "").replace("\\fbox", "")
                prose += [text[i : i + 300] for i in range(0, max(1, len(text) - 300), 300)]
    assert len(golds) > 20 and prose
    return golds, prose


# -- answers: the gold, its equivalent and perturbed spellings, other golds -----------------------------------------
def _perturbed(gold: str) -> str:
    numbers = list(re.finditer(r"\d+", gold))
    if not numbers:
        return gold + "+1"
    last = numbers[-1]
    return gold[: last.start()] + str(int(last.group()) + 1) + gold[last.end() :]


def _thousands(gold: str) -> str:
    return f"{int(gold):,}" if re.fullmatch(r"\d{4,}", gold) else gold


SPELLINGS = [
    lambda g: g,
    lambda g: g,
    lambda g: g,
    _perturbed,
    _thousands,
    lambda g: _thousands(g).replace(",", "{,}"),
    lambda g: g.replace("\\frac", "\\dfrac"),
    lambda g: f"{g}\\text{{ cm}}",
    lambda g: f"{g} \\mbox{{ inches}}^2",
    lambda g: f"{g}\\%",
    lambda g: f"{g}%",
    lambda g: f"\\${g}",
    lambda g: f"x = {g}",
    lambda g: f"\\text{{{g}}}",
    lambda g: f"{g}^\\circ",
    lambda g: f"\\left( {g} \\right)",
    lambda g: f"[{g}, {_perturbed(g)}]",
    lambda g: f"({g}, {_perturbed(g)})",
    lambda g: f"{g}.0",
    lambda g: f" {g} ",
]


@st.composite
def answers(draw, golds: list[str], gold: str) -> str:
    base = draw(st.sampled_from([gold] * 4 + [draw(st.sampled_from(golds))]))
    return draw(st.sampled_from(SPELLINGS))(base)


# -- how an answer is written: box, display, separators, sentences (`@` marks where the value goes) ---------------
DISPLAYS = ["$@$", "$$@$$", "\\[@\\]", "\\[\n@\n\\]", "\\(@\\)", "@", "@", " [ @ ] "]
BOXES = ["\\boxed{@}"] * 8 + ["\\fbox{@}", "\\boxed {@}", "\\boxed @ $", "\\boxed*{@}"]
SEPARATORS = [
    ", ",
    " and ",
    ", and ",
    " or ",
    "; ",
    " \\quad \\text{and} \\quad ",
    "\\text{ for part (a) and }",
    " \\text{ and } ",
    " \\\\ ",
    "\n\n",
    " then ",
    ",\\ ",
    "$ and $",
    "$, $",
    " \\qquad ",
]
LEADS = [
    "Therefore, the final answer is",
    "So the answer is",
    "Hence",
    "Thus $x =",
    "The answer:",
    "**Final Answer**\n",
    "Answer:",
    "",
    "We get",
    "The final answer is",
]
FEW_SHOT = [
    "\n\nFinal Answer: The final answer is @. I hope it is correct.",
    "\nFinal Answer: The final answer is $@$. I hope it is correct.",
]
ENDINGS = ["", ".", "$.", " as required.", " percent", "%", " cm.", "}", "\n"] + FEW_SHOT


def fill(template: str, value: str) -> str:
    return template.replace("@", value)


@st.composite
def boxed_text(draw, value: str) -> str:
    return fill(draw(st.sampled_from(DISPLAYS)), fill(draw(st.sampled_from(BOXES)), value))


@st.composite
def completions(draw, golds: list[str], prose: list[str], gold: str) -> str:
    """One completion: prose, then an ending in one of several styles, maybe truncated."""
    text = draw(st.sampled_from(prose))[: draw(st.integers(0, 300))]
    values = draw(st.lists(answers(golds, gold), min_size=1, max_size=3))
    style = draw(st.sampled_from(["boxes", "boxes", "boxes", "intermediate", "sentence", "unboxed"]))
    if style == "boxes":  # one or several boxes, each its own display or all in one
        parts = [draw(boxed_text(v)) for v in values]
        joined = parts[0]
        for part in parts[1:]:
            joined += draw(st.sampled_from(SEPARATORS + [draw(st.sampled_from(prose))[:80]])) + part
        text += f"\n\n{draw(st.sampled_from(LEADS))} {joined}"
    elif style == "intermediate":  # a box mid-way, the final statement unboxed (MATH few-shot style)
        text += f" = \\boxed{{{values[-1]}}}. " + draw(st.sampled_from(prose))[:120]
        text += fill(draw(st.sampled_from(FEW_SHOT)), values[0])
    elif style == "sentence":
        text += f"\n\n{draw(st.sampled_from(LEADS))} ${values[0]}$"
    else:
        text += f" The answer is {values[0]}"
    text += fill(draw(st.sampled_from(ENDINGS)), values[0])
    if draw(st.integers(0, 9)) == 0:  # truncated generation
        text = text[: draw(st.integers(0, len(text)))]
    return text


@st.composite
def batches(draw, golds: list[str], prose: list[str]) -> list[tuple[str, str]]:
    out = []
    for _ in range(BATCH):
        gold = draw(st.sampled_from(golds))
        out.append((gold, draw(completions(golds, prose, gold))))
    return out


# -- the reference: plain math-verify ------------------------------------------------------------------------------
@contextmanager
def plain_math_verify():
    """math-verify with its own `parse_latex_cached` (undoes the worker's patch if this process imported it)."""
    import math_verify.parser

    patched = math_verify.parser.parse_latex_cached
    worker = sys.modules.get("benchctl.grading.math_worker")  # imported by other tests: it patched math-verify
    original = getattr(worker, "MATH_VERIFY_PARSE_LATEX", patched)
    math_verify.parser.parse_latex_cached = original
    try:
        yield
    finally:
        math_verify.parser.parse_latex_cached = patched


def math_verify_verdicts(pairs: list[tuple[str, str]]) -> list[bool]:
    """`verify(parse(\\boxed{gold}), parse(completion))` per pair, gold first, no time limit."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    with plain_math_verify():
        return [
            bool(
                verify(
                    parse(f"\\boxed{{{g}}}", config, parsing_timeout=None),
                    parse(c, config, parsing_timeout=None),
                    timeout_seconds=None,
                )
            )
            for g, c in pairs
        ]


@pytest.mark.slow
def test_hypothesis_completions_are_graded_exactly_as_math_verify_grades_them(corpus):
    golds, prose = corpus

    # no shrinking: a batch costs ~1 s and the assertion already lists every diverging item of it
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(batches(golds, prose))
    def check(pairs):
        ours = [v.correct for v in grade_math(pairs, workers=2, timeout=120.0)]
        reference = math_verify_verdicts(pairs)
        diverging = [(g, c, o) for (g, c), o, r in zip(pairs, ours, reference) if o != r]
        assert diverging == []

    (check if SEED is None else seed(int(SEED))(check))()  # hypothesis' @seed would override derandomize
