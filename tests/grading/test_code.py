"""Tests of `benchctl.grading.code`: real MBPP references pass, mutants fail, every reason is recorded, and each
reward hack of the module docstring's "covered" list fails."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from benchctl.errors import BenchctlError
from benchctl.grading.code import extract_code, grade_code, plan_problem
from benchctl.grading.sandbox import run_python
from benchctl.tasks.base import Problem

ADD = Problem(
    "toy-add",
    "add two numbers",
    "",
    {
        "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"],
        "test_setup_code": "",
        "challenge_test_list": ["assert add(10**20, 1) == 10**20 + 1"],
        "code": "def add(a, b):\n    return a + b\n",
    },
)
EVENS = Problem(
    "toy-evens",
    "even numbers",
    "",
    {
        "test_list": [
            "assert sorted(evens([1, 2, 3, 4])) == [2, 4]",
            "assert len(evens([2, 5, 2])) == 2",
            "assert int(count_evens([1, 2, 3, 4])) == 2",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
        "code": "def evens(xs):\n    return [x for x in xs if x % 2 == 0]\n"
        "def count_evens(xs):\n    return len(evens(xs))\n",
    },
)
GOOD_ADD = "def add(a, b):\n    return a + b\n"


def grade_one(problem: Problem, completion: str, **kw):
    return grade_code([(problem, completion)], workers=1, **kw)[0]


@pytest.fixture(scope="module")
def mbpp(benchmarks_dir):
    with open(benchmarks_dir / "mbpp.jsonl") as fh:
        rows = [json.loads(line) for line in fh]
    keys = ("test_list", "test_setup_code", "challenge_test_list", "code")
    return [Problem(r["id"], r["prompt"], "", {k: r[k] for k in keys}) for r in rows]


# ---- real data ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_mbpp_reference_passes_with_its_challenge_tests(mbpp):
    assert len(mbpp) == 974
    assert sum(len(p.meta["challenge_test_list"]) > 0 for p in mbpp) == 11
    verdicts = grade_code([(p, f"```python\n{p.meta['code']}\n```") for p in mbpp], workers=2)
    failures = [(p.id, v.reason, v.detail) for p, v in zip(mbpp, verdicts) if not v.correct]
    assert failures == []
    assert all(v.detail.endswith("tests passed") for v in verdicts)


def _mutant(problem: Problem, kind: str) -> str:
    """The reference with the tested function replaced (kind "none") or its results perturbed ("perturb")."""
    first_hole = plan_problem(problem).expressions[0]
    name = ast.parse(first_hole, mode="eval").body.func.id
    if kind == "none":
        return f"{problem.meta['code']}\n\ndef {name}(*args, **kwargs):\n    return None\n"
    return problem.meta["code"] + textwrap.dedent(f"""

        _orig = {name}
        def _perturb(r):
            if type(r) is bool: return not r
            if type(r) in (int, float, complex): return r + 1
            if type(r) in (str, list, tuple): return r + type(r)("x" if type(r) is str else [None])
            if isinstance(r, dict): return {{**r, "mutant": 1}}
            if isinstance(r, (set, frozenset)): return set(r) | {{"mutant"}}
            return 1 if r is None else None
        def {name}(*args, **kwargs):
            return _perturb(_orig(*args, **kwargs))
        """)


@pytest.mark.slow
def test_mutated_mbpp_references_fail(mbpp):
    items = [(p, _mutant(p, "none" if i % 2 == 0 else "perturb")) for i, p in enumerate(mbpp)]
    verdicts = grade_code(items, workers=2)
    passed = [p.id for p, v in zip(mbpp, verdicts) if v.correct]
    assert passed == []
    assert {v.reason for v in verdicts} <= {"wrong", "error"}


def test_setup_code_runs_after_the_solution(mbpp):
    trees = [p for p in mbpp if p.id in ("367", "927")]
    assert all("Node(" in p.meta["test_setup_code"] for p in trees)
    assert all(v.correct for v in grade_code([(p, p.meta["code"]) for p in trees], workers=2))


# ---- reasons -----------------------------------------------------------------------------------------------

REASONS = [
    (f"Here it is:\n```python\n{GOOD_ADD}```\nDone.", "correct", "4/4 tests passed"),
    ("def add(a, b):\n    return a * b\n", "wrong", "test 1/4 `assert add(1, 2) == 3`: got [2]"),
    ("def add(a, b):\n    return 3\n", "wrong", "test 2/4"),
    ("", "no_answer", "no code"),
    ("```python\n\n```", "no_answer", "no code"),
    ("Sure! def add(a, b) returns a+b", "error", "SyntaxError"),
    ("def add(a, b):\n    return a / 0\n", "error", "test 1/4 `assert add(1, 2) == 3`: raised ZeroDivisionError"),
    ("def add(a, b):\n    return len(bytearray(8 << 30))\n", "error", "limit hit: memory MemoryError"),
    ("def add(a, b):\n    print('x' * 10**7)\n    return a + b\n", "error", "limit hit: output_limit"),
    ("import no_such_module_xyz\n" + GOOD_ADD, "error", "solution failed: ModuleNotFoundError"),
    ("def add(a, b):\n    import os\n    os._exit(0)\n", "error", "sandbox ended early (exit status 0) after 0/4"),
]


@pytest.mark.parametrize(("completion", "reason", "detail"), REASONS)
def test_reasons_are_recorded_with_their_detail(completion, reason, detail):
    verdict = grade_one(ADD, completion)
    assert (verdict.reason, verdict.correct) == (reason, reason == "correct")
    assert detail in verdict.detail
    assert verdict.extracted == extract_code(completion)


def test_infinite_loop_gives_timeout_within_budget():
    verdict = grade_one(ADD, "def add(a, b):\n    while True:\n        pass\n", timeout_s=1.0)
    assert verdict.reason == "timeout" and verdict.timed_out
    assert "wall clock 1s exceeded (0/4 calls done)" in verdict.detail


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("```python\na = 1\n```\ntext\n```python\nb = 2\n```", "b = 2\n"),  # the last python block
        ("```py\nx = 1\n```\n```bash\nls\n```", "x = 1\n"),  # tagged python beats a later shell block
        ("```\nu = 1\n```", "u = 1\n"),  # else the last unlabelled block
        ("```bash\nls\n```", None),  # fences, but none is Python
        ("x = 3", "x = 3"),  # no fence: the whole text
        ("```python\ndef f():\n    return 1", "def f():\n    return 1"),  # cut at max_tokens
        ("   \n", None),
    ],
)
def test_extract_code_takes_the_last_python_block(text, code):
    assert extract_code(text) == code


# ---- reward hacks ------------------------------------------------------------------------------------------

EARLY_EXITS = [
    GOOD_ADD + "import sys\nsys.exit(0)\n",
    "def add(a, b):\n    return 0\nimport os\nos._exit(0)\n",
    "import atexit, os\natexit.register(lambda: os._exit(0))\ndef add(a, b):\n    return 0\n",
    "def add(a, b):\n    import sys\n    sys.exit(0)\n",
    "def add(a, b):\n    raise SystemExit(0)\n",
]


@pytest.mark.parametrize("completion", EARLY_EXITS)
def test_early_exit_before_tests_fails(completion):
    verdict = grade_one(ADD, completion)
    assert not verdict.correct and verdict.reason in ("wrong", "error")


ALWAYS_EQUAL = [
    "class A:\n    def __eq__(self, other): return True\n    __hash__ = None\ndef add(a, b):\n    return A()\n",
    "class I(int):\n    def __eq__(self, other): return True\ndef add(a, b):\n    return I(0)\n",
    "class L(list):\n    __eq__ = lambda self, other: True\ndef add(a, b):\n    return L()\n",
    "def add(a, b):\n    return [type('X', (), {'__eq__': lambda s, o: True})()]\n",
]


@pytest.mark.parametrize("completion", ALWAYS_EQUAL)
def test_always_true_eq_object_fails(completion):
    verdict = grade_one(ADD, completion)
    assert verdict.reason == "wrong" and "unverifiable" in verdict.detail


OVERRIDES = textwrap.dedent("""
    import builtins
    builtins.sorted = lambda *a, **k: [2, 4]
    builtins.len = lambda *a: 2
    builtins.int = lambda *a: 2
    builtins.print = None
    builtins.isinstance = lambda *a: True
    builtins.AssertionError = type("AssertionError", (Exception,), {})
    sorted, len, int = builtins.sorted, builtins.len, builtins.int
""")


def test_builtins_override_does_not_change_verdicts():
    wrong = "def evens(xs):\n    return xs\ndef count_evens(xs):\n    return 99\n"
    naive = run_python(wrong + OVERRIDES + "\n".join(EVENS.meta["test_list"]), timeout_s=5)
    assert naive.stage_error is None  # the overrides do fool a plain exec of code + asserts
    assert grade_one(EVENS, wrong + OVERRIDES).reason == "wrong"
    right = EVENS.meta["code"]
    assert grade_one(EVENS, right + OVERRIDES).correct and grade_one(EVENS, right).correct
    assert grade_one(ADD, OVERRIDES + GOOD_ADD).correct


FORGE = textwrap.dedent("""
    import os
    def add(a, b):
        return 0
    print("All tests passed!\\n{'done': 4}")
    for fd in range(3, 1024):
        try:
            os.write(fd, b"{'i': 0, 'v': ['i', '3']}\\n{'i': 1, 'v': ['i', '5']}\\n{'i': 2, 'v': ['i', '0']}\\n"
                         b"{'i': 3, 'v': ['i', '1']}\\n{'done': 4}\\n")
        except OSError:
            pass
""")


def test_fake_success_marker_fails():
    assert not grade_one(ADD, FORGE + "os._exit(0)\n").correct
    assert not grade_one(ADD, "def add(a, b):\n    return 0\nprint('PASSED 3/3 tests; OK')\n").correct


def test_channel_forgery_cannot_create_a_pass():
    honest_after_forgery = grade_one(ADD, FORGE)  # forged records, then the real ones: duplicates
    assert honest_after_forgery.reason == "error" and "result channel corrupted" in honest_after_forgery.detail
    forged_only = grade_one(ADD, FORGE + "os._exit(0)\n")  # forged wrong values only: judged as values
    assert forged_only.reason == "wrong" and "test 2/4" in forged_only.detail


# ---- options and robustness --------------------------------------------------------------------------------


def test_include_challenge_option_controls_the_extra_tests():
    capped = "def add(a, b):\n    return min(a + b, 10**6)\n"
    assert grade_one(ADD, capped, include_challenge=False).correct
    verdict = grade_one(ADD, capped)
    assert verdict.reason == "wrong" and "test 4/4" in verdict.detail
    assert len(plan_problem(ADD).tests) == 4 and len(plan_problem(ADD, include_challenge=False).tests) == 3


def test_identical_completions_share_one_run():
    flaky = "import random\ndef add(a, b):\n    return a + b if random.random() < 0.5 else 0\n"
    verdicts = grade_code([(ADD, flaky)] * 8, workers=2)
    assert len({v.reason for v in verdicts}) == 1 and len(verdicts) == 8


@pytest.mark.parametrize(
    "completion",
    [
        "(" * 100_000,
        "\x00\x01\x02",
        "".join(" " * i + "if 1:\n" for i in range(150)) + " " * 150 + "pass",
        "import ctypes\nctypes.string_at(0)\n",
        "def add(a, b):\n    return add(a, b)\n",
    ],
)
def test_hostile_completions_never_raise(completion):
    verdict = grade_one(ADD, completion)
    assert not verdict.correct and verdict.reason == "error"


def test_malformed_problem_raises_benchctl_error():
    with pytest.raises(BenchctlError, match="no test_list"):
        grade_code([(Problem("x", "", "", {"test_list": []}), GOOD_ADD)])
    with pytest.raises(BenchctlError, match="timeout_s"):
        grade_code([(ADD, GOOD_ADD)], timeout_s=-1)


def test_task_defined_builtin_names_are_the_candidates():
    meta = {"test_list": ["assert sum(10, 15) == 6"], "code": "def sum(a, b):\n    pass\n"}  # like MBPP 126
    summing = Problem("126-like", "", "", meta)
    plan = plan_problem(summing)
    assert plan.expressions == ("sum(10, 15)",)
    gcd_sum = "def sum(a, b):\n    return __builtins__.sum(i for i in range(1, min(a, b)) if a % i == 0 == b % i)\n"
    assert grade_one(summing, gcd_sum).correct
