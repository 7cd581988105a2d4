"""MBPP (Austin et al. 2021, arXiv:2108.07732): Python tasks judged by their `assert` tests.

Source: `google-research-datasets/mbpp` config `full` (landscape.md section 6), or `mbpp.jsonl` from a data dir
(all 974 rows with a `split` field: prompt 10, test 500, validation 90, train 374). Default split: `test`.
Prompt: the MBPP paper / lm-eval wording ("You are an expert Python programmer, and here is your task: ... Your
code should pass these tests:" + the `test_list` asserts), plus [our choice] a request for one ```python block,
which is where `benchctl.grading.code.extract_code` looks. Grading: `benchctl.grading.code.grade_code` (sandboxed
execution); `test_list` only by default, as lm-eval and the paper's headline numbers do (`challenge_tests=True`
adds the 11 tasks' challenge tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.grading.verdict import Verdict
from benchctl.tasks import sources
from benchctl.tasks.base import Problem, Task, local_path, register_task, resolve_data_dir

SPLITS = {"prompt": 10, "test": 500, "validation": 90, "train": 374, "all": 974}
HUB_DATASET, HUB_CONFIG = "google-research-datasets/mbpp", "full"


@register_task("mbpp")
class Mbpp(Task):
    """MBPP (full) with sandboxed assert-based grading."""

    kind = "code"
    hub_id = f"{HUB_DATASET}:{HUB_CONFIG}"
    local_file = "mbpp.jsonl"
    description = "MBPP Python programming tasks (full config), graded by running the asserts in a sandbox"

    def __init__(self, split: str = "test", challenge_tests: bool = False) -> None:
        if split not in SPLITS:
            raise BenchctlError(f"mbpp split {split!r} is not valid; choose one of: {', '.join(SPLITS)}")
        self.split, self.challenge_tests = split, challenge_tests
        self.known_size = SPLITS[split]

    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        every = self._rows(data_dir)
        rows = [r for r in every if self.split == "all" or r.get("split") == self.split]
        if every and not rows:
            raise BenchctlError(
                f"no mbpp row has split {self.split!r} (rows need a 'split' field: "
                f"{', '.join(s for s in SPLITS if s != 'all')})"
            )
        return [self._problem(r) for r in (rows if limit is None else rows[:limit])]

    def _rows(self, data_dir: Path | str | None) -> list[dict]:
        root = resolve_data_dir(data_dir)
        if root is not None:
            path = local_path(self.local_file, root)
            if path is None:
                raise BenchctlError(f"{root / self.local_file} not found; put mbpp.jsonl in the data dir")
            return sources.read_jsonl(path)
        return self.hub_rows()

    def hub_rows(self, mirror: Path | None = None) -> list[dict]:
        """The hub rows of this split (every split for "all", in file order) in the local schema, with `split`."""
        splits = [s for s in SPLITS if s != "all"] if self.split == "all" else [self.split]
        rows = []
        for split in splits:
            source = sources.HubSource(HUB_DATASET, split, sources.map_mbpp, (HUB_CONFIG,))
            rows += [{**row, "split": split} for row in sources.load_hub(source, self.name, self.local_file, mirror)]
        return rows

    @staticmethod
    def _problem(row: dict) -> Problem:
        keys = ("test_list", "test_setup_code", "challenge_test_list", "code", "split")
        missing = [k for k in ("id", "prompt", "test_list") if k not in row]
        if missing:
            raise BenchctlError(f"mbpp row {row.get('id', '?')!r} lacks field(s) {', '.join(missing)}")
        return Problem(str(row["id"]), row["prompt"], "", {k: row.get(k) for k in keys})

    def size(self, data_dir: Path | str | None = None) -> int:
        path = local_path(self.local_file, data_dir)
        return self.known_size if path is None else len(self.load(path.parent))

    def prompt_text(self, problem: Problem) -> str:
        tests = "\n".join(problem.meta.get("test_list") or [])
        return (
            f"You are an expert Python programmer, and here is your task: {problem.question.strip()} "
            f"Your code should pass these tests:\n\n{tests}\n\n"
            "Write your solution in a single ```python code block."
        )

    def extract(self, completion: str) -> str | None:
        from benchctl.grading.code import extract_code

        return extract_code(completion)

    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float | None = None
    ) -> list[Verdict]:
        """Sandboxed execution; `timeout` per sample in seconds (None: the code grader's default)."""
        from benchctl.grading.code import grade_code

        options = {} if timeout is None else {"timeout_s": timeout}
        return grade_code(items, workers=workers, include_challenge=self.challenge_tests, **options)
