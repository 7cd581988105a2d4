"""The math benchmarks: MATH-500, AIME 2024/2025, AMC 2023, Minerva (OCW), OlympiadBench, GSM8K, MATH train.

Hub ids follow landscape.md section 6 (what lighteval / lm-eval / Qwen2.5-Math use); the local files are the
`shared/benchmarks` copies (SOURCES.md). Choices:
- aime25: `yentinglin/aime_2025` split train [our choice: lighteval's id; `opencompass/AIME2025` splits the
  year into two configs]. Same 30 answers as the MathArena-derived local file.
- amc23: `math-ai/amc23` (40 rows, the Qwen2.5-Math AMC 2023 subset), not the 83-row AI-MO AMC set.
- minerva: `math-ai/minervamath` (272 rows; golds = last box of the solution when the hub row has no answer).
- math_train: `EleutherAI/hendrycks_math`, its 7 subject configs concatenated (train split, 7500 rows).
Prompt [our choice, the DeepSeek-R1 / Qwen2.5-Math instruction]: the problem, a newline, then "Please reason step
by step, and put your final answer within \\boxed{}." as one user turn; `prompt_text` is the same text with
"Solution:" appended as a cue for base models without a chat template.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from benchctl.errors import BenchctlError
from benchctl.grading.verdict import Verdict
from benchctl.tasks import sources
from benchctl.tasks.base import DEFAULT_TIMEOUT, Problem, Task, local_path, register_task, resolve_data_dir
from benchctl.tasks.sources import HubSource

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
HENDRYCKS_CONFIGS = (
    "algebra",
    "counting_and_probability",
    "geometry",
    "intermediate_algebra",
    "number_theory",
    "prealgebra",
    "precalculus",
)


class MathTask(Task):
    """A math benchmark graded by `benchctl.grading.math.grade_math` with this task's profile."""

    kind = "math"
    hub: ClassVar[HubSource]
    profile: ClassVar[str] = "default"  # grading profile (benchctl.grading.math_worker.PROFILES)

    @property
    def hub_id(self) -> str:  # type: ignore[override]
        config = next((c for c in self.hub.configs if c), None)
        return self.hub.dataset + (f":{config}" if config and len(self.hub.configs) == 1 else "")

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        rows = load_rows(self, data_dir, limit)
        return [sources.math_problem(row) for row in rows]

    def hub_rows(self, mirror: Path | None = None) -> list[dict]:
        """Every row of the canonical hub dataset in the local schema (what `benchctl data pull` writes)."""
        return sources.load_hub(self.hub, self.name, self.local_file, mirror)

    def prompt_text(self, problem: Problem) -> str:
        return f"{problem.question.strip()}\n{MATH_INSTRUCTION}\n\nSolution:"

    def messages(self, problem: Problem) -> list[dict]:
        return [{"role": "user", "content": f"{problem.question.strip()}\n{MATH_INSTRUCTION}"}]

    def extract(self, completion: str) -> str | None:
        from benchctl.grading.math import extract_math_answer

        return extract_math_answer(completion)

    def tolerance(self, problem: Problem) -> float | None:
        """Absolute numeric tolerance for this problem (None: exact, math-verify precision)."""
        return None

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        from benchctl.grading.math import grade_math

        pairs = [(problem.gold, completion) for problem, completion in items]
        tols = [self.tolerance(problem) for problem, _ in items]
        tolerances = tols if any(t is not None for t in tols) else None
        return grade_math(pairs, profile=self.profile, tolerances=tolerances, workers=workers, timeout=timeout)


def load_rows(task: Task, data_dir: Path | str | None, limit: int | None) -> list[dict]:
    """Common-schema rows from the local file when a data dir is given (error if the file is missing), else hub."""
    root = resolve_data_dir(data_dir)
    if root is None:
        rows = task.hub_rows()  # type: ignore[attr-defined]
        return rows if limit is None else rows[:limit]
    path = local_path(task.local_file, root)
    if path is None:
        raise BenchctlError(
            f"{root / str(task.local_file)} not found; put {task.local_file} in the data dir or pass another --data-dir"
        )
    return sources.read_jsonl(path, limit)


def _hub(dataset: str, split: str, mapper, configs: tuple[str | None, ...] = (None,)) -> HubSource:
    return HubSource(dataset, split, mapper, configs)


@register_task("math500")
class Math500(MathTask):
    description = "MATH-500 (PRM800K test subset of Hendrycks MATH), 500 problems"
    hub = _hub("HuggingFaceH4/MATH-500", "test", sources.map_math500)
    local_file, known_size = "math500.jsonl", 500


@register_task("aime24")
class Aime24(MathTask):
    description = "AIME 2024 I+II, 30 integer-answer problems"
    hub = _hub("HuggingFaceH4/aime_2024", "train", sources.map_aime)
    local_file, known_size = "aime24.jsonl", 30


@register_task("aime25")
class Aime25(MathTask):
    description = "AIME 2025 I+II, 30 integer-answer problems"
    hub = _hub("yentinglin/aime_2025", "train", sources.map_aime)
    local_file, known_size = "aime25.jsonl", 30


@register_task("amc23")
class Amc23(MathTask):
    description = "AMC 12A/12B 2023, 40 problems with integer answers (Qwen2.5-Math subset)"
    hub = _hub("math-ai/amc23", "test", sources.map_amc)
    local_file, known_size = "amc23.jsonl", 40


@register_task("minerva")
class Minerva(MathTask):
    description = "Minerva MIT OCW science/engineering problems, 272 (numeric + symbolic answers)"
    hub = _hub("math-ai/minervamath", "test", sources.map_minerva)
    local_file, known_size, profile = "minerva_math.jsonl", 272, "minerva"


@register_task("olympiadbench")
class OlympiadBench(MathTask):
    description = "OlympiadBench OE_TO_maths_en_COMP: English text-only open-ended competition math, 675"
    hub = _hub("Hothan/OlympiadBench", "train", sources.map_olympiad, ("OE_TO_maths_en_COMP",))
    local_file, known_size, profile = "olympiadbench.jsonl", 675, "olympiad"

    def tolerance(self, problem: Problem) -> float | None:
        error: Any = problem.meta.get("error")
        try:
            return float(error) if error not in (None, "") else None
        except (TypeError, ValueError):
            return None


@register_task("gsm8k")
class Gsm8k(MathTask):
    description = "GSM8K grade-school word problems, test split, 1319"
    hub = _hub("openai/gsm8k", "test", sources.map_gsm8k, ("main",))
    local_file, known_size = "gsm8k_test.jsonl", 1319


@register_task("math_train")
class MathTrain(MathTask):
    description = "Hendrycks MATH train split, 7500 (for RL training; filter meta['level'] >= 3 for 'level 3-5')"
    hub = _hub("EleutherAI/hendrycks_math", "train", sources.map_hendrycks, HENDRYCKS_CONFIGS)
    local_file, known_size = "math_train.jsonl", 7500
    # MATH-500 is drawn from MATH's test split: no question in common with the 7,500 train problems (checked on the
    # complete files and the fixture: tests/tasks/test_overlap.py)
    held_out_task = "math500"
