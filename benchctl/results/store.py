"""Crash-safe on-disk layout of an eval/grade run directory (parquet parts, atomic writes, resume).

Run directory (`benchctl eval --out DIR`, `benchctl grade --out DIR`) [our choice, lighteval-style details +
a tidy summary, landscape.md §4/§7]:

    DIR/config.json                       resolved config, {"key": {"value": v, "source": "flag|env|default"}}
    DIR/summary.parquet                   every task's summary rows (one row per task x k)
    DIR/<task>/samples/part-00000.parquet per-sample rows, one part per chunk of *complete* problems
    DIR/<task>/problems.parquet           per-problem n, c, mean, pass@k and maj@k columns
    DIR/<task>/summary.parquet            per-k pass@k / maj@k / mean@n with bootstrap CIs over problems

Every file is written to a temporary name in the same folder and renamed into place (`os.replace` is atomic
on POSIX), so a crash leaves either the whole part or nothing; left-over `*.tmp` files are ignored and
removed.  A part always holds all n samples of each of its problems, so "problem done" = "present in a part".
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchctl.errors import BenchctlError

RUN_KIND = "benchctl-eval-run"  # marker in config.json: the only kind of folder --overwrite may delete
_PART = re.compile(r"part-(\d{5,})\.parquet")


def write_atomic(path: Path, write) -> None:
    """Call `write(tmp_path)` then rename tmp -> `path` (same folder, so the rename is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(path: Path, table: pa.Table) -> None:
    """Write one parquet file atomically."""
    write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (sorted keys, indented)."""
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"))


def write_overall_summary(out: Path) -> None:
    """DIR/summary.parquet: the summary rows of every task in the run folder (earlier commands' tasks too)."""
    summaries = [pq.read_table(p) for p in sorted(out.glob("*/summary.parquet"))]
    if summaries:
        write_table(out / "summary.parquet", pa.concat_tables(summaries, promote_options="default"))


class SampleParts:
    """The `samples/` folder of one task: numbered parquet parts, appended atomically, read back lazily."""

    def __init__(self, task_dir: Path) -> None:
        self.dir = Path(task_dir) / "samples"
        for stale in self.dir.glob(".*.tmp"):  # half-written parts of a crashed run
            stale.unlink(missing_ok=True)

    def paths(self) -> list[Path]:
        """Finished parts in write order."""
        found = [(int(m.group(1)), p) for p in self.dir.glob("part-*.parquet") if (m := _PART.fullmatch(p.name))]
        return [p for _, p in sorted(found)]

    def append(self, table: pa.Table) -> Path:
        """Write `table` as the next part; returns its path."""
        paths = self.paths()
        number = int(_PART.fullmatch(paths[-1].name).group(1)) + 1 if paths else 0
        path = self.dir / f"part-{number:05d}.parquet"
        write_table(path, table)
        return path

    def sample_counts(self) -> dict[str, int]:
        """problem id -> samples stored (the latest part holding a problem wins, as in `iter_parts`)."""
        counts: dict[str, int] = {}
        for table in self.iter_parts(["problem_id"]):
            ids = table.column("problem_id").to_pylist()
            for pid in set(ids):
                counts[pid] = 0
            for pid in ids:
                counts[pid] += 1
        return counts

    def iter_parts(self, columns: list[str] | None = None):
        """Yield each part as a pyarrow Table (only `columns`), one at a time (memory: one part)."""
        for path in self.paths():
            try:
                yield pq.read_table(path, columns=columns)
            except (pa.ArrowInvalid, OSError) as exc:
                raise BenchctlError(
                    f"sample part {path} is unreadable ({type(exc).__name__}); delete it and rerun "
                    "to resample its problems"
                ) from None


def prepare_run_dir(out: Path, config_json: dict, identity: dict, overwrite: bool) -> None:
    """Create/validate `out`: same sampling identity as a stored run (resume) or `overwrite` (wipe it).

    `identity` holds the settings that change what a sample *is* (model, n, temperature, ...); any other
    setting (ks, tasks, limit, bootstrap) may change between resumed runs.
    """
    cfg_path = out / "config.json"
    if out.exists() and not out.is_dir():
        raise BenchctlError(f"--out {out} is a file, not a folder; choose another --out")
    if out.exists() and any(out.iterdir()):
        stored = _read_config(cfg_path)
        if stored is None:
            raise BenchctlError(
                f"--out {out} exists and is not a benchctl eval run dir (no readable config.json); choose another --out"
            )
        try:
            _check_identity(out, stored.get("identity", {}), identity)
        except BenchctlError:
            if not overwrite:
                raise
            shutil.rmtree(out)  # only samples made with a different sampling config are discarded
    body = {"kind": RUN_KIND, "identity": identity, "config": config_json}
    write_json(cfg_path, body)


def _read_config(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") == RUN_KIND else None


def _check_identity(out: Path, stored: dict, now: dict) -> None:
    changed = [
        f"{k}={stored.get(k)!r} (now {now.get(k)!r})"
        for k in sorted(set(stored) | set(now))
        if stored.get(k) != now.get(k)
    ]
    if changed:
        raise BenchctlError(
            f"{out} holds samples made with a different sampling config: {'; '.join(changed)}; "
            "pass --overwrite to discard them, or choose another --out"
        )
