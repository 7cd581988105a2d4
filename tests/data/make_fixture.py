"""Rebuild `tests/data/benchmarks/` from the complete benchmark files: `python tests/data/make_fixture.py DATA_DIR`.

Each fixture file holds whole lines copied byte for byte from the file of the same name in DATA_DIR (the
`shared/benchmarks` schema), in their original order. Only redistributable sets are copied (tests/data/SOURCES.md).
Which rows, and why:
- math500.jsonl: the 8 problems whose perturbed gold math-verify still grades correct (tests/grading/test_math_golds.py)
  and the first rows of the file, 50 in all.
- gsm8k_test.jsonl: lines 140-149, which include a gold written with a thousands separator (gsm8k-test-146).
- math_train.jsonl: the first 10 rows, a row with several boxes, and the 2 rows whose gold is empty.
- mbpp.jsonl: the first prompt-split row, test problems 11-40 (7 of them with challenge tests), 367 (test) and 927
  (train), the only two tasks with setup code, and the first validation row (511).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MATH500_KNOWN_LIMITS = {
    "test/number_theory/864.json",
    "test/number_theory/46.json",
    "test/number_theory/516.json",
    "test/number_theory/847.json",
    "test/number_theory/1257.json",
    "test/number_theory/368.json",
    "test/geometry/473.json",
    "test/prealgebra/1114.json",
}
MATH500_ROWS = 50
GSM8K_LINES = range(140, 150)
MATH_TRAIN_EXTRA = {"train/algebra/152.json", "train/number_theory/7115.json", "train/number_theory/7117.json"}
MBPP_IDS = {"1", *map(str, range(11, 41)), "367", "927", "511"}


def _select(lines: list[str], wanted) -> list[str]:
    return [line for index, line in enumerate(lines) if wanted(index, json.loads(line))]


def _math500(lines: list[str]) -> list[str]:
    firsts = [json.loads(line)["id"] for line in lines if json.loads(line)["id"] not in MATH500_KNOWN_LIMITS]
    keep = MATH500_KNOWN_LIMITS | set(firsts[: MATH500_ROWS - len(MATH500_KNOWN_LIMITS)])
    return _select(lines, lambda i, row: row["id"] in keep)


SELECTIONS = {
    "math500.jsonl": _math500,
    "gsm8k_test.jsonl": lambda lines: _select(lines, lambda i, row: i in GSM8K_LINES),
    "math_train.jsonl": lambda lines: _select(lines, lambda i, row: i < 10 or row["id"] in MATH_TRAIN_EXTRA),
    "mbpp.jsonl": lambda lines: _select(lines, lambda i, row: row["id"] in MBPP_IDS),
}


def build(data_dir: Path, out: Path) -> dict[str, int]:
    """Write every fixture file under `out`; returns rows written per file."""
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, select in SELECTIONS.items():
        lines = (data_dir / name).read_text(encoding="utf-8").splitlines(keepends=True)
        rows = select([line for line in lines if line.strip()])
        (out / name).write_text("".join(rows), encoding="utf-8")
        written[name] = len(rows)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/data/make_fixture.py DATA_DIR")
    print(build(Path(sys.argv[1]), Path(__file__).resolve().parent / "benchmarks"))
