"""The one result type every grader returns (math, arith, code): graders never raise for a bad completion.

A `Verdict` is frozen and self-checking: `reason` must be one of `REASONS`, and `correct` is True exactly when
`reason == "correct"` (style.md item 15: verdict objects, not exceptions).
"""

from __future__ import annotations

from dataclasses import dataclass

REASONS = ("correct", "wrong", "no_answer", "parse_error", "timeout", "error")
"""correct/wrong: compared; no_answer: nothing extractable in the completion; parse_error: an answer was found but
could not be parsed (or the gold could not); timeout: the per-item time bound was hit (the worker was killed);
error: the grader itself failed (exception, crashed worker)."""


@dataclass(frozen=True)
class Verdict:
    """Outcome of grading one completion against one problem."""

    correct: bool
    reason: str  # one of REASONS
    extracted: str | None  # extracted final answer (math) / code block (code); None if none found
    detail: str = ""  # short human-readable why (failing assert, exception name, ...)

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unknown verdict reason {self.reason!r}; choose one of: {', '.join(REASONS)}")
        if self.correct != (self.reason == "correct"):
            raise ValueError(f"inconsistent verdict: correct={self.correct} with reason={self.reason!r}")

    @property
    def timed_out(self) -> bool:
        """True when the per-item time bound was hit."""
        return self.reason == "timeout"

    @classmethod
    def of(cls, reason: str, extracted: str | None, detail: str = "") -> Verdict:
        """Build a verdict from its reason (correct is derived)."""
        return cls(reason == "correct", reason, extracted, detail)
