"""Where problems come from: local JSON Lines in the `shared/benchmarks` schema, or a hub dataset.

Local files (SOURCES.md "Common schema"): `id`, `problem`, `answer` (+ extras kept in `Problem.meta`); MBPP rows:
`id`, `prompt`, `code`, `test_list`, `test_setup_code`, `challenge_test_list`, `split`.

Hub rows are mapped into the same schema by one small function per source (`map_*` below); they follow the same
derivation rules SOURCES.md documents for the local files (e.g. AIME `str(int(answer))`, OlympiadBench
`final_answer[0].strip("$")`, GSM8K text after `####` without thousands separators), so a local file and the
hub give the same golds. The hub is reached through `datasets.load_dataset` (imported lazily).
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from benchctl.errors import BenchctlError
from benchctl.grading.math_extract import last_boxed
from benchctl.tasks.base import DATA_DIR_ENV, Problem

Row = dict[str, Any]


class HubUnreachableError(BenchctlError):
    """The hub's host does not resolve (no network)."""


@dataclass(frozen=True)
class HubSource:
    """A hub dataset split and the function that maps one of its rows to the common schema."""

    dataset: str  # hub dataset id
    split: str
    mapper: Callable[[Row, int], Row]  # (hub row, row index) -> common-schema row
    configs: tuple[str | None, ...] = (None,)  # configs concatenated in order (hendrycks_math: one per subject)


def read_jsonl(path: Path, limit: int | None = None) -> list[Row]:
    """The JSON objects of a JSON Lines file (blank lines skipped); BenchctlError naming the file and line when a
    line is not UTF-8, not JSON or not an object, and when the file holds no rows at all."""
    rows: list[Row] = []
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if limit is not None and len(rows) >= limit:
                break
            if line.strip():
                rows.append(_json_object(line, path, number))
    if not rows:
        raise BenchctlError(f"{path} is empty; expected JSON Lines, one object per line")
    return rows


def _json_object(line: bytes, path: Path, number: int) -> Row:
    try:
        row = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise BenchctlError(f"{path}:{number} is not UTF-8 text; expected JSON Lines, one object per line") from None
    except json.JSONDecodeError as exc:
        raise BenchctlError(f"{path}:{number} is not valid JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise BenchctlError(f"{path}:{number} is a JSON {type(row).__name__}, not an object; one object per line")
    return row


def math_problem(row: Row) -> Problem:
    """Common-schema math row -> Problem (extras go to meta)."""
    try:
        meta = {k: v for k, v in row.items() if k not in ("id", "problem", "answer")}
        return Problem(str(row["id"]), row["problem"], str(row["answer"]), meta)
    except KeyError as exc:
        raise BenchctlError(f"math row {row.get('id', '?')!r} lacks field {exc.args[0]!r}") from None


def load_hub(source: HubSource, task_name: str, local_file: str | None, mirror: Path | None = None) -> list[Row]:
    """All rows of the hub split in the common schema; BenchctlError (one line) when the hub is unreachable.

    `mirror`: a folder of local snapshots of hub datasets, `mirror/<org>/<name>` in the hub's own layout (data
    files, README configs), read by `datasets` the same way instead of the network."""
    hint = f"pass --data-dir DIR (or set {DATA_DIR_ENV}) with {local_file}" if local_file else "check the network"
    dataset = source.dataset if mirror is None else str(Path(mirror) / source.dataset)
    if mirror is not None and not Path(dataset).is_dir():
        raise BenchctlError(
            f"{dataset} not found: the mirror needs a snapshot of {source.dataset} for task {task_name}"
        )
    if mirror is None and not os.environ.get("HF_DATASETS_OFFLINE") and not _hub_resolves():
        raise HubUnreachableError(
            f"cannot reach the Hugging Face hub to load {source.dataset} for task {task_name}; {hint}"
        )
    try:
        import datasets

        rows: list[Row] = []
        for config in source.configs:
            for row in datasets.load_dataset(dataset, config, split=source.split):
                rows.append(source.mapper(dict(row), len(rows)))
        return rows
    except BenchctlError:
        raise
    except Exception as exc:  # noqa: BLE001 - network/cache/format errors of any kind become one line
        why = " ".join(str(exc).split())[:160]
        raise BenchctlError(
            f"cannot load {dataset} for task {task_name} ({type(exc).__name__}: {why}); {hint}"
        ) from exc


def _hub_resolves(timeout: float = 3.0) -> bool:
    """Whether the hub host resolves (fail in milliseconds, not after datasets' 30 s of retries)."""
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        socket.getaddrinfo(host, 443)
        return True
    except OSError:
        return False
    finally:
        socket.setdefaulttimeout(old)


# ---- per-source row mappers (hub row -> common schema) -------------------------------------------------------

_AIME_URL = re.compile(r"(\d{4})_AIME_(I{1,2})_Problems/Problem_(\d+)")
_AMC_URL = re.compile(r"(\d{4})_AMC_(\d+[AB])_Problems/Problem_(\d+)")


def integer_text(value: Any) -> str:
    """`str(int(x))` for integral values ("025" -> "25", 27.0 -> "27"), else the stripped text."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def map_math500(row: Row, index: int) -> Row:
    keep = {k: row[k] for k in ("solution", "subject", "level") if k in row}
    return {"id": row["unique_id"], "problem": row["problem"], "answer": row["answer"], **keep}


def map_aime(row: Row, index: int) -> Row:
    url = str(row.get("url") or "")
    match = _AIME_URL.search(url)
    rid = f"{match.group(1)}-AIME-{match.group(2)}-{match.group(3)}" if match else f"aime-{row.get('id', index)}"
    extra = {"solution": row["solution"]} if row.get("solution") else {}
    return {"id": rid, "problem": row["problem"], "answer": integer_text(row["answer"]), "source": url, **extra}


def map_amc(row: Row, index: int) -> Row:
    url = str(row.get("url") or "")
    match = _AMC_URL.search(url)
    rid = f"{match.group(1)}-AMC{match.group(2)}-{match.group(3)}" if match else f"amc23-{row.get('id', index)}"
    problem = row.get("problem") or row["question"]
    return {"id": rid, "problem": problem, "answer": integer_text(row["answer"]), "source": url}


def map_minerva(row: Row, index: int) -> Row:
    problem = row.get("problem") or row["question"]
    answer = row.get("answer") or last_boxed(str(row.get("solution") or "")) or ""
    extra = {"solution": row["solution"]} if row.get("solution") else {}
    return {"id": f"minerva-{index}", "problem": problem, "answer": str(answer).strip(), **extra}


def map_olympiad(row: Row, index: int) -> Row:
    answer = str(row["final_answer"][0]).strip().strip("$").strip()
    answer = re.sub(r"\$\s*,\s*\$", ", ", answer)
    keep = ("answer_type", "is_multiple_answer", "unit", "error", "final_answer")
    solution = row.get("solution") or []
    return {
        "id": f"olympiadbench-{row['id']}",
        "problem": row["question"],
        "answer": answer,
        "solution": "\n\n".join(solution) if isinstance(solution, list) else solution,
        "subject": row.get("subfield"),
        **{k: row.get(k) for k in keep},
    }


def map_gsm8k(row: Row, index: int) -> Row:
    answer = row["answer"].split("####")[-1].strip().replace(",", "")
    return {"id": f"gsm8k-test-{index}", "problem": row["question"], "answer": answer, "solution": row["answer"]}


def map_hendrycks(row: Row, index: int) -> Row:
    level = re.fullmatch(r"Level (\d)", str(row.get("level", "")))
    return {
        "id": f"train/{index}",
        "problem": row["problem"],
        "answer": last_boxed(row["solution"]) or "",
        "solution": row["solution"],
        "subject": row.get("type"),
        "level": int(level.group(1)) if level else None,
    }


def map_mbpp(row: Row, index: int) -> Row:
    return {
        "id": str(row["task_id"]),
        "prompt": row["text"],
        "code": row["code"],
        "test_list": list(row["test_list"]),
        "test_setup_code": row.get("test_setup_code") or "",
        "challenge_test_list": list(row.get("challenge_test_list") or []),
    }


def map_rows(mapper: Callable[[Row, int], Row], rows: Iterable[Row]) -> list[Row]:
    """Apply a mapper with running indices (what `load_hub` does, for in-memory rows)."""
    return [mapper(dict(row), i) for i, row in enumerate(rows)]
