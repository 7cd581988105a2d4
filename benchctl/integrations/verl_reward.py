"""veRL's reward function for data written by `benchctl train --engine verl`: benchctl's own graders.

veRL 0.9.1 loads `reward.custom_reward_function.path` and calls `compute_score(data_source=, solution_str=,
ground_truth=, extra_info=)` once per response (its `naive` reward manager, in its reward workers); the launch
folder's `reward.py` imports `compute_score` from here.  The row's `extra_info` (written by
`benchctl.integrations.verl_launch.dataset_rows`) names the task and carries the problem, so the verdict is the
one `benchctl train` / `benchctl eval` give: 1.0 correct, 0.0 otherwise (no answer, wrong, timeout, error).

Returns a float, not a dict: veRL then logs it as `acc` as well, and its validation metrics average every
returned key, which a string (verdict reason) would break.  Math tasks need `math-verify` in veRL's
environment (`pip install "math-verify==0.9.0"`); `arith` needs nothing beyond benchctl.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from benchctl.errors import BenchctlError

FILE_TASK = "file"  # extra_info["task_kind"] of a JSON Lines task file (graded as a math task)


@lru_cache(maxsize=32)
def _task(name: str, kind: str):
    """The grading task: a registered task by name, or the math grading of a JSON Lines task file (which needs
    no access to the file itself)."""
    from benchctl.tasks import get_task
    from benchctl.tasks.math_tasks import MathTask

    if kind == FILE_TASK:
        return MathTask()
    return get_task(name)


def problem_of(ground_truth: str, extra_info: dict[str, Any]):
    """The benchctl `Problem` a veRL row was made from (`extra_info` as `dataset_rows` writes it)."""
    from benchctl.tasks import Problem

    meta = json.loads(extra_info.get("meta") or "{}")
    return Problem(str(extra_info["problem_id"]), str(extra_info["question"]), str(ground_truth), meta)


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **_) -> float:
    """1.0 when benchctl's grader of the row's task accepts `solution_str`, else 0.0 (never raises for a bad
    completion; a row without benchctl's extra_info is a configuration error and raises)."""
    info = dict(extra_info or {})
    if "problem_id" not in info:
        raise BenchctlError(
            f"row of data source {data_source!r} has no benchctl extra_info (problem_id, question, task): "
            "use the parquet files `benchctl train --engine verl` wrote"
        )
    task = _task(str(info.get("task", data_source)), str(info.get("task_kind", "registered")))
    verdict = task.grade([(problem_of(ground_truth, info), solution_str)], workers=1)[0]
    return 1.0 if verdict.correct else 0.0
