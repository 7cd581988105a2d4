"""Benchmark 9d: peak memory of `run_eval` on the tiny model does not grow with n.

Each eval runs in a fresh subprocess on the same arith problems with the same chunk size in *samples*
(`chunk_samples`), once with n=16 and once with n=256; the child reports its peak RSS
(`resource.getrusage(RUSAGE_SELF).ru_maxrss`) and the parent prints both peaks and their ratio.  Samples stream
to parquet parts per chunk and the summary is built by streaming the parts back, so the ratio should stay
close to 1 even though n=256 writes 16x more samples.  Run: `.venv/bin/python benchmarks/eval_memory.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROBLEMS, CHUNK_SAMPLES, MAX_TOKENS = 64, 1024, 8
NS = (16, 256)
CHILD = """
import json, resource, sys, time
from benchctl.evaluation import EvalConfig, run_eval
model, out, n, limit, chunk, max_tokens = sys.argv[1:7]
start = time.perf_counter()
result = run_eval(EvalConfig(model=model, tasks=("arith",), ks=(1, int(n)), n=int(n), limit=int(limit),
                             out=out, chunk_samples=int(chunk), max_tokens=int(max_tokens), progress=False))
row = result.tasks[0].summary.to_pylist()[-1]
print(json.dumps({"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": time.perf_counter() - start, "pass_at_n": row["pass_at_k"],
                  "mean_at_n": row["mean_at_n"]}))
"""


def measure(model: Path, n: int, workdir: Path) -> dict:
    out = workdir / f"n{n}"
    args = [
        sys.executable,
        "-c",
        CHILD,
        str(model),
        str(out),
        str(n),
        str(PROBLEMS),
        str(CHUNK_SAMPLES),
        str(MAX_TOKENS),
    ]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"eval with n={n} failed:\n{proc.stderr[-3000:]}")
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    stats["samples"] = PROBLEMS * n
    return stats


def main() -> None:
    from benchctl.models.cache import cached_tiny_model

    model = cached_tiny_model()
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: measure(model, n, Path(tmp)) for n in NS}
    for n, s in results.items():
        print(
            f"n={n:>3}: {s['samples']:>6} samples, peak RSS {s['peak_rss_mib']:.0f} MiB, {s['seconds']:.1f} s, "
            f"mean@n={s['mean_at_n']:.3f} pass@{n}={s['pass_at_n']:.3f}"
        )
    small, large = (results[n]["peak_rss_mib"] for n in NS)
    print(
        f"peak RSS ratio n={NS[1]} / n={NS[0]} = {large / small:.3f} "
        f"({NS[1] // NS[0]}x the samples; chunk = {CHUNK_SAMPLES} samples)"
    )
    if large / small > 1.25:
        raise SystemExit("FAIL: peak memory grows with n")


if __name__ == "__main__":
    main()
