"""Every gold answer of every math benchmark file against itself, rewritten, and perturbed (real data).

Figures at the time of writing (2-core machine): 0 self-consistency failures on 2,866 golds; 0 failures on
13,717 equivalent rewritings; perturbed golds graded correct only for the explicit list below.
"""

import re

import pytest

from benchctl.grading.math_worker import normalize
from benchctl.tasks import get_task

pytestmark = pytest.mark.slow
BENCHMARKS = ["math500", "aime24", "aime25", "amc23", "minerva", "olympiadbench", "gsm8k"]

# Perturbed gold still graded CORRECT (known grading limits; see benchctl/grading/math.py "Known issues").
PERTURBED_STILL_CORRECT = {
    "math500": {
        # number-base subscripts are dropped by math-verify: 52_8 == 52_9
        "test/number_theory/864.json",
        "test/number_theory/46.json",
        "test/number_theory/516.json",
        "test/number_theory/847.json",
        "test/number_theory/1257.json",
        "test/number_theory/368.json",
        # units are stripped with their exponent: 864 inches^2 == 864 inches^3
        "test/geometry/473.json",
        "test/prealgebra/1114.json",
    },
    "minerva": {
        "minerva-261"  # the gold parses to the constant 2 (math-verify keeps only a fragment), so does the variant
    },
    "olympiadbench": {
        "olympiadbench-2212",  # symbols are case-folded: N=n becomes n=n, and N=n+1 compares equal
        "olympiadbench-2592",  # 4.2 vs 4.3 is within the stated tolerance error=1e-1 (correct by design)
    },
}
_FRAC = re.compile(r"(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}")


def perturb(gold: str) -> str:
    """gold+1 for integers, else the last number in the gold +1, else `gold+1`."""
    text = gold.strip()
    if re.fullmatch(r"-?\d+", text):
        return str(int(text) + 1)
    numbers = list(re.finditer(r"\d+", text))
    if numbers:
        last = numbers[-1]
        return text[: last.start()] + str(int(last.group()) + 1) + text[last.end() :]
    return text + "+1"


def rewritings(gold: str) -> list[str]:
    """Equivalent completions: boxed with spaces, unboxed prose, `.0`, `\\text{}`, units; fraction forms."""
    g, out = gold.strip(), []
    if re.fullmatch(r"-?\d+", g):
        out += [
            f"\\boxed{{ {g} }}",
            f"The answer is {g}.",
            f"\\boxed{{{g}.0}}",
            f"\\boxed{{\\text{{{g}}}}}",
            f"so $\\boxed{{{g}}}$ units",
            f"\\boxed{{{g}\\text{{ cm}}}}",
        ]
    match = _FRAC.fullmatch(g)
    if match:
        sign, a, b = match.group(1), int(match.group(2)), int(match.group(3))
        out += [
            f"\\boxed{{{sign}{a}/{b}}}",
            f"\\boxed{{{sign}\\dfrac{{{a}}}{{{b}}}}}",
            f"\\boxed{{{sign}\\tfrac{{{a}}}{{{b}}}}}",
            f"\\boxed{{ {sign}\\frac {{{a}}} {{{b}}} }}",
            f"the answer is ${sign}\\frac{{{a}}}{{{b}}}$",
        ]
        if a < 10 and b < 10:
            out.append(f"\\boxed{{{sign}\\frac{a}{b}}}")
        if all(p in (2, 5) for p in _prime_factors(b)):
            out.append(f"\\boxed{{{sign}{a / b!r}}}")
    return out


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_gold_grades_correct_against_itself_boxed_in_prose(benchmarks_dir, name):
    task = get_task(name)
    problems = task.load(benchmarks_dir)
    boxes = [as_written(name, p.gold) for p in problems]
    verdicts = task.grade([(p, f"Thus the final answer is $\\boxed{{{box}}}$.") for p, box in zip(problems, boxes)])
    failures = [(p.id, p.gold, v.reason) for p, v in zip(problems, verdicts) if not v.correct]
    assert failures == []
    # `extracted` is the box, except where math-verify reads on past it: a `$` inside, or a box that does not parse
    # (the prose gold olympiadbench-1965; `extracted` is then what math-verify read from the completion)
    read_on = {p.id for p, box, v in zip(problems, boxes, verdicts) if "$" not in box and v.extracted != box.strip()}
    assert read_on <= {"olympiadbench-1965"}


def as_written(name: str, gold: str) -> str:
    """The gold as a model would box it: OlympiadBench's stray `$` (3 golds) removed by the olympiad profile. Inside
    `$\\boxed{..}$` a `$` closes math-verify's environment, so a box holding one is read as math-verify reads it."""
    return normalize("olympiad", gold) if name == "olympiadbench" else gold


@pytest.mark.parametrize("name", BENCHMARKS)
def test_perturbed_golds_grade_not_correct_except_known_limits(benchmarks_dir, name):
    task = get_task(name)
    problems = task.load(benchmarks_dir)
    verdicts = task.grade([(p, f"So the answer is \\boxed{{{perturb(p.gold)}}}.") for p in problems])
    still_correct = {p.id for p, v in zip(problems, verdicts) if v.correct}
    assert still_correct == PERTURBED_STILL_CORRECT.get(name, set())


@pytest.mark.parametrize("name", BENCHMARKS)
def test_equivalent_rewritings_of_golds_grade_correct(benchmarks_dir, name):
    task = get_task(name)
    items = [(p, form) for p in task.load(benchmarks_dir) for form in rewritings(p.gold)]
    assert items, "every benchmark has integer or fraction golds"
    verdicts = task.grade(items)
    assert [(p.id, form, v.reason) for (p, form), v in zip(items, verdicts) if not v.correct] == []
