"""Graders: math answers (math-verify in a process pool, `benchctl.grading.math`) and code (sandboxed
execution, `benchctl.grading.code`).  Every grader returns `benchctl.grading.verdict.Verdict` objects."""

from benchctl.grading.verdict import REASONS, Verdict

__all__ = ["REASONS", "Verdict"]
