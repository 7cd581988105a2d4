"""Grading throughput: benchctl's batched math grader vs one-sample-at-a-time math-verify, same items.

Items: MATH-500 golds x `--samples` completions each (default 500 x 256 = 128,000). Per problem a few distinct
answers (the gold and 2-5 wrong values, with skewed Dirichlet weights and a per-problem accuracy) repeat many
times in varied LaTeX forms (`\\frac{a}{b}`, `a/b`, `\\dfrac`, decimals, `\\left(`, operator spacing), wrapped in
prose after the problem's real solution text (its boxes removed). Optional shares of unboxed answers
(`--unboxed`, "The answer is $x$.") and of truncated completions without any answer (`--truncated`, cut at a
random point of the solution text) are 0 by default: both are unique long texts that math-verify must scan in
full on either side, so they bound the speed-up (Amdahl); run with e.g. `--unboxed 0.03 --truncated 0.03`.

Baseline: for each item `verify(parse(gold), parse(completion))` with math-verify 0.9.0 in this process, with
math-verify's own (signal) timeouts and the same extraction config as benchctl (boxed answers first). The
baseline runs on every `--stride`-th problem (all its samples, in order, so math-verify's own caches help it as
they would in a real loop) and is extrapolated to all items; the script says so and asserts that the two
graders give IDENTICAL verdicts (correct or not) on every compared item. The default `--stride 2` with 3 rounds
runs it on the even, then the odd problems, so the median of the two is the whole set's time and every item is
compared [our choice: 10% subsamples of different problems differed by 1.5x in CPU, which moved the ratio].

Runs interleave (`--rounds 3`): benchctl, baseline on problems 0 mod stride, benchctl, baseline on problems
stride/2 mod stride, benchctl, so both see the same machine load; each benchctl run gets freshly forked workers
(cold caches) and the report gives medians; each run line prints the load average and the CPU seconds, and the
summary the CPU ratio beside the wall-clock one: with the kernel's autogroup scheduling a busy machine gives this
session one share of the CPUs, so the 2 workers may run little faster than one and the wall-clock ratio moves
with the load. Last, `--profile` times the unique jobs in-process and prints what bounds the speed-up: the share
of the pool work in whole-text jobs (unboxed and truncated completions, which math-verify's own extraction must
read), in math-verify's LaTeX parser on them, and in its parser + verify on all unique pairs, with the speed-up
at most if that part cost nothing, and times the whole-text items alone on both sides.

    .venv/bin/python benchmarks/grading.py [--data-dir DIR] [--samples 256] [--workers 2] [--stride 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

from benchctl.grading.math import grade_math
from benchctl.grading.math_extract import math_verify_box
from benchctl.grading.math_pool import _POOLS, close_pools

FRAC = re.compile(r"\\[dt]?frac\{(-?\d+)\}\{(\d+)\}")
WRAPPERS = [
    "{p}\n\nTherefore, the final answer is $\\boxed{{{x}}}$.",
    "{p}\n\nSo the answer is \\boxed{{{x}}}.",
    "{p}\n\n**Final Answer**\n\\[\n\\boxed{{{x}}}\n\\]",
    "{p}\n\nHence $x = \\boxed{{{x}}}$ as required.",
]


def strip_boxes(solution: str) -> str:
    """The solution text with `\\boxed{x}` turned into the group `{x}` (the gold must not leak as a box)."""
    return solution.replace("\\boxed", "").replace("\\fbox", "")


def wrong_values(gold: str, rng: random.Random, k: int) -> list[str]:
    """k distinct wrong answers: the last number changed, a sign flip, a doubled value."""
    numbers = list(re.finditer(r"\d+", gold))
    out: list[str] = []
    for delta in rng.sample([1, -1, 2, 3, -2, 10, 5], 7):
        if numbers:
            m = numbers[-1]
            value = max(0, int(m.group()) + delta)
            out.append(gold[: m.start()] + str(value) + gold[m.end() :])
        else:
            out.append(f"{gold}+{abs(delta)}")
    out += [f"-({gold})", f"2({gold})"]
    return [v for v in dict.fromkeys(out) if v != gold][:k]


def forms(value: str) -> list[str]:
    """LaTeX spellings of one answer: as is, \\dfrac, a/b, decimal, \\left( \\right), spaced operators."""
    out = [value, value.replace("\\frac", "\\dfrac"), re.sub(r"([+=,])", r" \1 ", value)]
    m = FRAC.fullmatch(value)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        out += [f"{a}/{b}"] + ([repr(a / b)] if b and len(repr(a / b)) < 8 else [])
    if value.startswith("(") and value.endswith(")"):
        out.append(f"\\left{value[:-1]}\\right)")
    return list(dict.fromkeys(out))


def make_items(rows: list[dict], samples: int, seed: int, unboxed: float = 0.0, truncated: float = 0.0):
    """(gold, completion) pairs, problem-major (what an evaluation produces)."""
    rng = random.Random(seed)
    items = []
    for row in rows:
        gold, prefix = row["answer"], strip_boxes(row["solution"])[:1500]
        values = [gold] + wrong_values(gold, rng, rng.randint(2, 5))
        accuracy = rng.betavariate(0.7, 0.7)
        rest = [rng.gammavariate(0.5, 1) for _ in values[1:]]
        weights = [accuracy] + [(1 - accuracy) * w / (sum(rest) or 1) for w in rest]
        styles = {v: (forms(v), [rng.random() ** 2 for _ in forms(v)]) for v in values}
        for _ in range(samples):
            u = rng.random()
            if u < truncated:
                items.append((gold, prefix[: rng.randint(len(prefix) // 3, len(prefix))]))  # truncated: no answer
                continue
            value = rng.choices(values, weights)[0]
            text = rng.choices(*styles[value])[0]
            if u < truncated + unboxed:
                items.append((gold, f"{prefix}\n\nThe answer is ${text}$."))  # unboxed
            else:
                items.append((gold, rng.choice(WRAPPERS).format(p=prefix, x=text)))
    return items


def baseline(items: list[tuple[str, str]]) -> tuple[list[bool], float]:
    """One sample at a time: parse gold, parse completion, verify (gold first), math-verify's own timeouts."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    start, cpu, out = time.perf_counter(), time.process_time(), []
    for gold, completion in items:
        out.append(bool(verify(parse(f"\\boxed{{{gold}}}", config), parse(completion, config))))
    return out, time.perf_counter() - start, time.process_time() - cpu


def run_benchctl(items: list[tuple[str, str]], workers: int):
    """One timed `grade_math` call on a freshly started pool (pool start not timed; worker caches cold):
    (verdicts, wall seconds, CPU seconds of the parent and its workers)."""
    close_pools()
    grade_math([("1", "\\boxed{1}")], workers=workers)  # fork the workers from the warm forkserver
    cpu0, start = time.process_time() + _workers_cpu(), time.perf_counter()
    verdicts = grade_math(items, workers=workers)
    return verdicts, time.perf_counter() - start, time.process_time() + _workers_cpu() - cpu0


def _workers_cpu() -> float:
    """CPU seconds used so far by the shared pools' worker processes (Linux /proc; 0 elsewhere). A worker
    replaced after a timeout loses its count (none on these mixes)."""
    total = 0.0
    for pool in list(_POOLS.values()):
        for worker in pool.workers:
            try:
                fields = Path(f"/proc/{worker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def whole_texts(items: list[tuple[str, str]], workers: int) -> None:
    """Time the whole-text items alone (unboxed / truncated: no box the parent can read, so math-verify's own
    extraction runs on every distinct text) on both sides and print the speed-up on them: what dedup, the fast
    paths and the memos leave once every text is its own string. Runs the baseline, so call it before
    `profile_jobs`. (Not a bound to subtract from the mix: in the mix the box jobs warm the workers' ANTLR
    prediction cache first, so the texts cost less there than alone.)"""
    texts = [item for item in items if math_verify_box(item[1]) is None]
    if not texts:
        return
    _, base_s, _ = baseline(texts)
    _, ours_s, ours_cpu = run_benchctl(texts, workers)
    print(
        f"whole-text items alone: {len(texts):,} ({len(set(texts)):,} distinct); math-verify one at a time "
        f"{base_s:.1f} s, benchctl {ours_s:.1f} s ({ours_cpu:.1f} s CPU, workers={workers}): {base_s / ours_s:.1f}x "
        f"on them"
    )


def profile_jobs(items: list[tuple[str, str]], sample: int, seed: int) -> dict:
    """CPU seconds (this process, in-process grading, one cache for all jobs) of benchctl's unique pool jobs, split
    into box jobs (the parent read the box) and whole-text jobs (unboxed / truncated completions: math-verify's own
    extraction reads the text), each with the seconds spent in math-verify's LaTeX parser (latex2sympy, ANTLR) and
    in its `verify`. Whole-text jobs are timed on a seeded sample of `sample` and extrapolated. Imports the worker
    module, which installs benchctl's parse into math-verify: call it after every baseline run."""
    import benchctl.grading.math as bm
    from benchctl.grading import math_warm  # noqa: F401 - warms the parser as the forkserver does
    from benchctl.grading import math_worker as worker

    keys = dict.fromkeys(key for key, _ in bm._keyed("default", items, [None] * len(items)))
    jobs = [key for key in keys if bm._fast(key) is None]
    boxes, texts = [j for j in jobs if j[3]], [j for j in jobs if not j[3]]
    picked = random.Random(seed).sample(texts, min(sample, len(texts)))
    spent = {"parser": 0.0, "verify": 0.0}
    originals = {"parser": ("_LATEX2SYMPY", worker._LATEX2SYMPY), "verify": ("verify", worker.verify)}
    for name, (attr, func) in originals.items():
        setattr(worker, attr, _timed(func, spent, name))
    try:
        out = {"boxes": len(boxes), "texts": len(texts), "picked": len(picked)}
        for group, todo, scale in (("box", boxes, 1.0), ("text", picked, len(texts) / max(1, len(picked)))):
            spent.update(parser=0.0, verify=0.0)
            out[f"{group}_s"] = _cpu(todo, worker.grade_job) * scale
            out.update({f"{group}_{name}": seconds * scale for name, seconds in spent.items()})
    finally:
        for attr, func in originals.values():
            setattr(worker, attr, func)
    return out


def _timed(func, spent: dict, name: str):
    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - start

    return timed


def _cpu(jobs: list[tuple], grade) -> float:
    start = time.process_time()
    for job in jobs:
        grade(*job)
    return time.process_time() - start


def print_bound(prof: dict, ours_s: float, base_s: float) -> None:
    """What bounds the speed-up: shares of benchctl's pool work (whole-text jobs; math-verify's LaTeX parser and
    `verify`, which run once per unique pair on either side), and the speed-up benchctl would reach at most (Amdahl
    on the measured wall-clock, as if all of it were pool work: an upper bound) if that part cost nothing."""
    total = (prof["box_s"] + prof["text_s"]) or 1e-9
    text, text_parser = prof["text_s"] / total, prof["text_parser"] / total
    own = (prof["box_parser"] + prof["box_verify"] + prof["text_parser"] + prof["text_verify"]) / total

    def at_most(share: float) -> str:
        return f"{base_s / max(ours_s * (1 - share), 1e-9):.1f}x"

    for group, count, name in (("box", "boxes", "box jobs"), ("text", "texts", "whole-text jobs (unboxed/truncated)")):
        seconds = prof[f"{group}_s"] or 1e-9
        print(
            f"profile (in-process CPU): {prof[count]:,} unique {name}: "
            f"{prof[f'{group}_s']:.1f} s, {prof[f'{group}_parser'] / seconds:.0%} in math-verify's LaTeX parser "
            f"(latex2sympy/ANTLR), {prof[f'{group}_verify'] / seconds:.0%} in its verify"
            + (f" (timed on {prof['picked']:,}, extrapolated)" if group == "text" else "")
        )
    print(
        f"bound (measured {base_s / ours_s:.1f}x): whole-text jobs are {text:.0%} of the pool work, free -> at most "
        f"{at_most(text)}; math-verify's parser on them alone {text_parser:.0%}, free -> at most "
        f"{at_most(text_parser)}; math-verify's parser + verify on all unique pairs {own:.0%}, free -> at most "
        f"{at_most(own)}"
    )


def _load() -> str:
    """The 1/5/15-minute load averages: timings on a shared machine are only comparable beside them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.environ.get("BENCHCTL_DATA_DIR") or str(Path(__file__).resolve().parents[2] / "shared/benchmarks")
    parser.add_argument("--data-dir", default=default_dir)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--stride", type=int, default=2, help="baseline on every stride-th problem")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="benchctl runs; a baseline subsample between each two")
    parser.add_argument("--unboxed", type=float, default=0.0, help="share of answers written without a box")
    parser.add_argument("--truncated", type=float, default=0.0, help="share of completions cut before any answer")
    parser.add_argument("--profile", type=int, default=600, help="whole-text jobs timed for the bound (0: no profile)")
    return parser.parse_args()


def main() -> int:
    args = _args()
    rows = [json.loads(line) for line in open(Path(args.data_dir) / "math500.jsonl", encoding="utf-8")]
    items = make_items(rows, args.samples, args.seed, args.unboxed, args.truncated)
    unique = len({(g, math_verify_box(c) or c) for g, c in items})
    print(f"items {len(items):,} ({len(rows)} problems x {args.samples}), ~{unique:,} unique (gold, answer) pairs")

    ours_runs, base_runs, mismatches, compared = [], [], [], 0
    for round_ in range(2 * args.rounds - 1):  # benchctl, baseline, benchctl, ...: both see the same load
        if round_ % 2 == 0:
            ours, seconds, cpu = run_benchctl(items, args.workers)
            if ours_runs and [v.correct for v in ours] != [v.correct for v in ours_runs[0][0]]:
                raise AssertionError("benchctl verdicts differ between runs")
            ours_runs.append((ours, seconds, cpu))
            print(
                f"benchctl run {len(ours_runs)}: {seconds:.2f} s, {len(items) / seconds:,.0f} items/s, CPU {cpu:.1f} s "
                f"(parent + workers={args.workers}, cold worker caches), load {_load()}"
            )
            continue
        offset = (round_ // 2) * args.stride // max(1, args.rounds - 1)
        picked = [i for i in range(len(items)) if (i // args.samples) % args.stride == offset]
        base, base_s, base_cpu = baseline([items[i] for i in picked])
        base_runs.append((base_s / len(picked) * len(items), base_cpu / len(picked) * len(items)))
        print(
            f"baseline run {len(base_runs)}: {base_s:.1f} s on {len(picked):,} items (problems = {offset} mod "
            f"{args.stride}), {len(picked) / base_s:,.0f} items/s -> extrapolated {base_runs[-1][0]:.0f} s "
            f"(CPU {base_runs[-1][1]:.0f} s) for all, load {_load()}"
        )
        mismatches += [
            (items[i], ours_runs[-1][0][i]) for i, b in zip(picked, base) if b != ours_runs[-1][0][i].correct
        ]
        compared += len(picked)
    ours_s, full = summarize(ours_runs, base_runs, mismatches, compared)
    if args.profile:
        whole_texts(items, args.workers)
        print_bound(profile_jobs(items, args.profile, args.seed), ours_s, full)
    return 0


def summarize(ours_runs: list, base_runs: list, mismatches: list, compared: int) -> tuple[float, float]:
    """Print the medians, the wall-clock and CPU speed-ups and the verdict comparison; (ours, baseline) seconds.
    The CPU ratio does not depend on how much of the 2 cores other sessions leave to the workers (with the
    kernel's autogroup scheduling, a busy machine gives this session's processes one share, parallel or not)."""
    ours = ours_runs[0][0]
    reasons = {r: sum(v.reason == r for v in ours) for r in sorted({v.reason for v in ours})}
    ours_s, ours_cpu = statistics.median(r[1] for r in ours_runs), statistics.median(r[2] for r in ours_runs)
    full, full_cpu = statistics.median(r[0] for r in base_runs), statistics.median(r[1] for r in base_runs)
    print(f"benchctl median {ours_s:.2f} s, reasons {reasons}; baseline median (extrapolated) {full:.0f} s")
    print(
        f"speed-up: {full / ours_s:.1f}x (median/median wall-clock), {full_cpu / ours_cpu:.1f}x less CPU "
        f"({full_cpu:.0f} s vs {ours_cpu:.1f} s); verdicts identical on {compared - len(mismatches):,}/{compared:,} "
        f"compared items; load {_load()}"
    )
    for (gold, _completion), verdict in mismatches[:5]:
        print(f"  MISMATCH gold={gold!r} answer={verdict.extracted!r} ours={verdict.reason}")
    assert not mismatches, f"{len(mismatches)} verdicts differ from one-at-a-time math-verify"
    return ours_s, full


if __name__ == "__main__":
    sys.exit(main())
