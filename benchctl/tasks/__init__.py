"""Benchmark tasks: registry, problems, prompts, extraction and grading.

from benchctl.tasks import get_task, list_tasks, register_task, task_class
task = get_task("math500"); problems = task.load(data_dir="shared/benchmarks", limit=10)
verdicts = task.grade([(problems[0], completion)])
"""

# Importing the modules registers the built-in tasks.
from benchctl.tasks import arith as _arith  # noqa: E402,F401
from benchctl.tasks import arith_chat as _arith_chat  # noqa: E402,F401
from benchctl.tasks import arith_mix as _arith_mix  # noqa: E402,F401
from benchctl.tasks import arith_words as _arith_words  # noqa: E402,F401
from benchctl.tasks import math_tasks as _math_tasks  # noqa: E402,F401
from benchctl.tasks import mbpp as _mbpp  # noqa: E402,F401
from benchctl.tasks.base import DATA_DIR_ENV, Problem, Task, get_task, list_tasks, register_task, task_class

__all__ = ["DATA_DIR_ENV", "Problem", "Task", "get_task", "list_tasks", "register_task", "task_class"]
