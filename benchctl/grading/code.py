"""Code grading (MBPP): `grade_code(items, workers=..., timeout_s=...) -> list[Verdict]`.

How a completion is judged (MBPP: Austin et al. 2021, arXiv:2108.07732 §2.1 - a sample is correct when it
passes all of the task's `assert` tests):
1. The code is the last ```python (or ```py / ```python3) fenced block; else the last unlabelled fenced block;
   else the whole text [our choice].  An unterminated final fence (cut at max_tokens) runs to the end.
   No code -> `no_answer`.
2. Each test `assert <expr>` is split with `ast` into *holes* - the maximal sub-expressions that call or name
   something the task defines (e.g. `f(x)` in `assert sorted(f(x)) == [1, 2]`) - and a *skeleton* with the
   holes replaced by placeholders.  Names count as trusted (builtin functions, stdlib modules) unless the
   reference solution or setup code defines them (MBPP task 126 defines `sum`).
3. The child (`benchctl.grading.sandbox.run_python`) execs the candidate, then `test_setup_code` (tasks 367
   and 927 build trees from the solution's `Node` class, so setup runs after the solution), restores the
   builtins captured before the candidate ran, evaluates only the holes and ships their values back in a strict
   encoding of exact builtin types.  The expected values never enter the child.
4. This process evaluates each skeleton on the decoded (fresh, builtin) values, with its own builtins.  A sample
   is correct only if the channel reported every hole in order, the harness finished, and every skeleton is true.

Reasons: correct; wrong (an assertion is false, or a result is not a plain builtin value - detail names the
test); no_answer; timeout (wall clock; detail says after which test); error (syntax error, exception in the
candidate or in a test call, resource limit hit, early exit, corrupted channel - detail says which).

Covered reward hacks (tests in tests/grading/test_code.py): early `sys.exit(0)` / `os._exit(0)` / atexit hooks
(`test_early_exit_before_tests_fails`), objects whose `__eq__` is always true or that subclass builtins
(`test_always_true_eq_object_fails`), builtins overrides such as `len`, `sorted`, `print`, `AssertionError`
(`test_builtins_override_does_not_change_verdicts`), printed success markers and forged channel records
(`test_fake_success_marker_fails`, `test_channel_forgery_cannot_create_a_pass`).
Not covered: a candidate that hard-codes the expected outputs it saw in the prompt (MBPP prompts show the
tests), or that finds them in a world-readable file outside `SandboxLimits.hide_paths`; non-deterministic
code is run once per distinct (problem, code) pair within one call [our choice].
"""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import re
import reprlib
import sys
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from benchctl.errors import BenchctlError, check_range
from benchctl.grading.sandbox import ExecResult, SandboxLimits, run_python
from benchctl.grading.verdict import Verdict
from benchctl.tasks.base import Problem

DEFAULT_TIMEOUT_S = 10.0  # wall clock per sample, all tests together [our choice]
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PY_TAGS = {"python", "py", "python3"}
_MODULES = frozenset(sys.stdlib_module_names)
_TRUSTED = frozenset(dir(builtins)) | _MODULES
_ATOMIC = (ast.Name, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr)
_HOLE = "_benchctl_hole_{}"


def extract_code(completion: str) -> str | None:
    """The code of a completion (rule 1 of the module docstring); None when there is none."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(completion or "")]
    chosen = next((b for tag, b in reversed(blocks) if tag in _PY_TAGS), None)
    if chosen is None:
        chosen = next((b for tag, b in reversed(blocks) if tag == ""), None)
    if chosen is None:
        chosen = "" if blocks else (completion or "")
    return chosen if chosen.strip() else None


@dataclass(frozen=True)
class PlannedTest:
    """One assert: its text, the compiled skeleton, and which channel expressions fill its holes."""

    source: str
    skeleton: Any  # code object of the skeleton expression
    holes: tuple[int, ...]  # indices into Plan.expressions
    modules: tuple[str, ...]  # stdlib modules the skeleton names


@dataclass(frozen=True)
class Plan:
    """Everything the grader needs for one problem, independent of the completion."""

    tests: tuple[PlannedTest, ...]
    expressions: tuple[str, ...]  # hole sources, evaluated in the child
    trusted_names: tuple[str, ...]  # names in the holes that must stay builtin / stdlib
    setup: str


def _parse(source: str, mode: str = "exec") -> ast.AST:
    with warnings.catch_warnings():  # dataset code has e.g. invalid escape sequences in regex strings
        warnings.simplefilter("ignore")
        return ast.parse(source, mode=mode)


def _defined_names(code: str) -> set[str]:
    try:
        tree = _parse(code)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


class _Splitter(ast.NodeTransformer):
    """Replaces each maximal task-dependent sub-expression by a placeholder name (rule 2)."""

    def __init__(self, trusted: frozenset[str]) -> None:
        self.trusted, self.holes = trusted, []

    def _tainted(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id not in self.trusted for n in ast.walk(node))

    def visit(self, node: ast.AST) -> ast.AST:
        if not self._tainted(node):
            return node
        if isinstance(node, _ATOMIC) or (isinstance(node, ast.Call) and self._tainted(node.func)):
            self.holes.append(ast.unparse(node))
            return ast.Name(id=_HOLE.format(len(self.holes) - 1), ctx=ast.Load())
        return self.generic_visit(node)


def plan_problem(problem: Problem, *, include_challenge: bool = True) -> Plan:
    """Split the problem's asserts into holes and skeletons; BenchctlError for a malformed problem."""
    meta = problem.meta
    tests = list(meta.get("test_list") or [])
    tests += list(meta.get("challenge_test_list") or []) if include_challenge else []
    if not tests:
        raise BenchctlError(f"code problem {problem.id!r} has no test_list")
    setup = str(meta.get("test_setup_code") or "")
    trusted = _TRUSTED - _defined_names(str(meta.get("code") or "")) - _defined_names(setup)
    planned, expressions, names = [], [], set()
    for text in tests:
        try:
            stmt = _parse(text.strip()).body
        except SyntaxError as exc:
            raise BenchctlError(f"test of problem {problem.id!r} is not valid Python: {text!r} ({exc.msg})") from None
        if len(stmt) != 1 or not isinstance(stmt[0], (ast.Assert, ast.Expr)):
            raise BenchctlError(f"test of problem {problem.id!r} is not a single assert: {text!r}")
        splitter = _Splitter(trusted)
        skeleton = splitter.visit(stmt[0].test if isinstance(stmt[0], ast.Assert) else stmt[0].value)
        body = ast.fix_missing_locations(ast.Expression(body=skeleton))
        modules = sorted({n.id for n in ast.walk(skeleton) if isinstance(n, ast.Name) and n.id in _MODULES})
        for hole in splitter.holes:
            names.update(n.id for n in ast.walk(_parse(hole, "eval")) if isinstance(n, ast.Name) and n.id in trusted)
        first = len(expressions)
        expressions.extend(splitter.holes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(body, f"<test of {problem.id}>", "eval")
        planned.append(PlannedTest(text.strip(), code, tuple(range(first, len(expressions))), tuple(modules)))
    return Plan(tuple(planned), tuple(expressions), tuple(sorted(names)), setup)


def _check(test: PlannedTest, result: ExecResult) -> tuple[str, str] | None:
    """None when the test held; else (reason, detail)."""
    outs = [result.outcomes[i] for i in test.holes]
    for out in outs:
        if out.kind == "exception":
            kind = "limit hit: memory" if out.exc == "MemoryError" else "raised"
            return "error", f"{kind} {out.exc}: {out.message}"[:300]
        if out.kind == "unverifiable":
            return "wrong", f"unverifiable result ({out.message})"
    ns = {"__builtins__": builtins.__dict__, **{_HOLE.format(j): o.value for j, o in enumerate(outs)}}
    ns.update({m: importlib.import_module(m) for m in test.modules})
    try:
        held = bool(eval(test.skeleton, ns))  # noqa: S307 - dataset expression on fresh builtin values
    except Exception as exc:  # noqa: BLE001 - e.g. int("abc") on a wrong result
        return "wrong", f"assertion raised {type(exc).__name__}: {exc}"[:300]
    return None if held else ("wrong", f"got {reprlib.repr([o.value for o in outs])[:200]}")


def verdict_from_result(plan: Plan, result: ExecResult, extracted: str, timeout_s: float) -> Verdict:
    """Rule 4 of the module docstring: turn one sandbox run into a verdict."""
    n, got = len(plan.tests), len(result.outcomes)
    if result.timed_out:
        why = f"wall clock {timeout_s:g}s exceeded ({got}/{len(plan.expressions)} calls done)"
        return Verdict.of("timeout", extracted, why)
    if result.killed_reason:
        return Verdict.of("error", extracted, f"limit hit: {result.killed_reason}")
    if result.stage_error is not None:
        err = result.stage_error
        what = "solution" if err.stage in ("compile", "exec") else "test setup"
        return Verdict.of("error", extracted, f"{what} failed: {err.exc}: {err.message}"[:300])
    if result.protocol_error:
        return Verdict.of("error", extracted, f"result channel corrupted: {result.protocol_error}")
    for k, test in enumerate(plan.tests, 1):
        if test.holes and max(test.holes) >= got:
            break
        failed = _check(test, result)
        if failed:
            return Verdict.of(failed[0], extracted, f"test {k}/{n} `{test.source[:120]}`: {failed[1]}")
    if not result.completed:
        why = "cpu limit" if result.cpu_limit_hit else f"exit status {result.returncode}"
        last = (result.stderr.strip().splitlines() or [""])[-1][:160]
        tail = f"; stderr: {last}" if last else ""
        calls = f"{got}/{len(plan.expressions)} calls"
        return Verdict.of("error", extracted, f"sandbox ended early ({why}) after {calls}{tail}")
    return Verdict.of("correct", extracted, f"{n}/{n} tests passed")


def grade_code(
    items: Sequence[tuple[Problem, str]],
    *,
    workers: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    include_challenge: bool = True,
    limits: SandboxLimits = SandboxLimits(),
) -> list[Verdict]:
    """One verdict per (problem, completion), in order.  Each distinct (problem, code) pair runs once in its
    own sandboxed child; `workers` threads (default: CPU count) each supervise one child.  Never raises for a
    bad completion; raises BenchctlError for a malformed problem or bad argument."""
    check_range("timeout_s", timeout_s, 0, None, low_open=True)
    workers = workers or os.cpu_count() or 1
    check_range("workers", workers, 1, None)
    plans: dict[str, Plan] = {}
    jobs: dict[tuple[str, str], Plan] = {}
    keys: list[tuple[str, str | None]] = []
    for problem, completion in items:
        code = extract_code(completion)
        if problem.id not in plans:
            plans[problem.id] = plan_problem(problem, include_challenge=include_challenge)
        keys.append((problem.id, code))
        if code is not None:
            jobs[(problem.id, code)] = plans[problem.id]

    def run(key: tuple[str, str]) -> Verdict:
        plan = jobs[key]
        result = run_python(
            key[1],
            timeout_s=timeout_s,
            limits=limits,
            setup=plan.setup,
            expressions=plan.expressions,
            trusted_names=plan.trusted_names,
        )
        return verdict_from_result(plan, result, key[1], timeout_s)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="benchctl-code") as pool:
        done = dict(zip(jobs, pool.map(run, jobs)))
    return [done[k] if k[1] is not None else Verdict.of("no_answer", None, "no code in the completion") for k in keys]
