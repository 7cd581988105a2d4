"""Agreement with lighteval 0.13.0: the same completions graded by benchctl and by lighteval's own math metrics.

lighteval pins `latex2sympy2_extended==1.0.6` (math-verify 0.9.0 needs 1.11.0), so it runs in a venv of its own,
`build/venv-lighteval` (gitignored; `--setup` creates it: `pip install --no-deps lighteval==0.13.0` plus the
modules its metric imports pull in, torch from PyTorch's CPU index). This script runs in benchctl's venv, grades
with benchctl, then runs ITSELF in that venv (`--lighteval-worker`) to score every sample with the metric
lighteval's task uses, on the gold as lighteval's prompt function builds it:
- `math500` -> lighteval `math_500`: `Metrics.pass_at_k_math` (gold `"ANSWER: " + solution`, gold and prediction
  extracted with `[ExprExtractionConfig(), LatexExtractionConfig()]`, precision 6);
- `aime24`, `aime25` -> lighteval `aime24`/`aime25`: `Metrics.pass_at_k_math` (gold = the answer);
- `gsm8k` -> lighteval `gsm8k`: `Metrics.expr_gold_metric` (gold `" " + solution`, i.e. the `#### n` line read by
  `ExprExtractionConfig`; prediction: expressions, then boxed LaTeX; precision 5).
Per task it reports the fraction of identical per-sample verdicts, pass@1 and pass@k from each side (both with
the unbiased estimator, so only grading differs), and each class of disagreement with an example. Which side is
right is judged against the completion's FINAL boxed answer (Hendrycks' last-box rule) graded by benchctl: the
side that agrees with it; "no box" when the completion has none (then read the example).

    .venv/bin/python benchmarks/parity_lighteval.py --setup                      # once: build/venv-lighteval
    .venv/bin/python benchmarks/parity_lighteval.py --synthetic --per-problem 8  # realistic completions, real golds
    .venv/bin/python benchmarks/parity_lighteval.py --samples results/eval/qwen  # a `benchctl eval`/`grade` folder
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / "build" / "venv-lighteval"
TASKS = {"math500": "math_500", "aime24": "aime24", "aime25": "aime25", "gsm8k": "gsm8k"}  # benchctl -> lighteval
FILES = {"math500": "math500.jsonl", "aime24": "aime24.jsonl", "aime25": "aime25.jsonl", "gsm8k": "gsm8k_test.jsonl"}
# Modules lighteval.metrics imports (found by importing it after `--no-deps`); torch from the CPU index.
LIGHTEVAL_DEPS = [
    "latex2sympy2_extended==1.0.6",
    "numpy",
    "sacrebleu",
    "scikit-learn",
    "pytablewriter",
    "nltk",
    "huggingface_hub",
    "pydantic",
    "transformers",
    "pandas",
    "requests",
    "aenum==3.1.15",
    "inspect_ai",
]
FEW_SHOT = "\n\nTherefore, the final answer is: $\\boxed{{{x}}}$. I hope it is correct"  # lighteval's AIME prompt


def setup_venv() -> None:
    """Create build/venv-lighteval with lighteval 0.13.0 and what its metrics import (not vllm, not its pins)."""
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run(pip + ["--no-deps", "lighteval==0.13.0"], check=True)
    subprocess.run(pip + ["torch", "--index-url", "https://download.pytorch.org/whl/cpu"], check=True)
    subprocess.run(pip + LIGHTEVAL_DEPS, check=True)


# -- samples: from a benchctl folder, or synthetic -------------------------------------------------------------------
def folder_samples(folder: Path) -> list[dict]:
    """(task, problem id, sample index, completion) of every sample of a `benchctl eval`/`grade` folder."""
    import pyarrow.parquet as pq

    out = []
    for task in TASKS:
        for part in sorted((folder / task / "samples").glob("part-*.parquet")):
            for row in pq.read_table(part, columns=["problem_id", "sample_index", "completion"]).to_pylist():
                out.append(
                    {
                        "task": task,
                        "id": row["problem_id"],
                        "sample": row["sample_index"],
                        "completion": row["completion"],
                    }
                )
    return out


def synthetic_samples(data_dir: Path, per_problem: int, seed: int) -> list[dict]:
    """Realistic completions for the real golds: `benchmarks/grading.py`'s mix (varied LaTeX forms of the gold and
    of wrong values after the solution text, 3% unboxed, 3% truncated) plus 10% in lighteval's own AIME prompt
    format ("Therefore, the final answer is: $\\boxed{x}$. I hope it is correct")."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from grading import make_items  # benchmarks/grading.py

    rng, out = random.Random(seed), []
    for task, name in FILES.items():
        rows = [json.loads(line) for line in (data_dir / name).read_text(encoding="utf-8").splitlines()]
        rows = [{**row, "solution": row.get("solution") or ""} for row in rows]
        items = make_items(rows, per_problem, seed, unboxed=0.03, truncated=0.03)
        for i, (gold, completion) in enumerate(items):
            if rng.random() < 0.1 and "\\boxed" in completion:
                completion = completion[: completion.rfind("\n\n")] + FEW_SHOT.format(x=gold)
            out.append(
                {"task": task, "id": rows[i // per_problem]["id"], "sample": i % per_problem, "completion": completion}
            )
    return out


def grade_with_benchctl(samples: list[dict], data_dir: Path) -> None:
    """Add benchctl's verdict, reason, extracted answer, lighteval's gold and the last-box reference to each."""
    from benchctl.grading.math_extract import last_boxed
    from benchctl.tasks import get_task

    raw = {
        (task, row["id"]): row
        for task, name in FILES.items()
        for row in map(json.loads, (data_dir / name).read_text(encoding="utf-8").splitlines())
    }
    by_task = defaultdict(list)
    for s in samples:
        by_task[s["task"]].append(s)
    for task_name, group in by_task.items():
        task = get_task(task_name)
        problems = {p.id: p for p in task.load(data_dir)}
        items = [(problems[s["id"]], s["completion"]) for s in group]
        boxes = [(problems[s["id"]], f"\\boxed{{{b}}}") for s in group if (b := last_boxed(s["completion"]))]
        last = iter(task.grade(boxes))
        for s, v in zip(group, task.grade(items)):
            row = raw[(task_name, s["id"])]
            s.update(
                gold=problems[s["id"]].gold,
                benchctl=v.correct,
                reason=v.reason,
                benchctl_read=v.extracted,
                last_box=next(last).correct if last_boxed(s["completion"]) else None,
                lighteval_gold=(
                    f"ANSWER: {row['solution']}"
                    if task_name == "math500"
                    else f" {row['solution']}"
                    if task_name == "gsm8k"
                    else row["answer"]
                ),
            )


# -- lighteval side (runs inside build/venv-lighteval) ---------------------------------------------------------------
def lighteval_worker(path_in: str, path_out: str) -> None:
    """Score each sample with the sample-level metric lighteval's task uses; write (score, extracted) per line."""
    import logging

    logging.disable(logging.WARNING)
    from lighteval.metrics.metrics import Metrics
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    pass_at_k = Metrics.pass_at_k_math(sample_params={"k": 1, "n": 1}).sample_level_fn  # PassAtK(strip_strings)
    metrics = {"math_500": pass_at_k, "aime24": pass_at_k, "aime25": pass_at_k, "gsm8k": Metrics.expr_gold_metric.value}
    with open(path_in, encoding="utf-8") as src, open(path_out, "w", encoding="utf-8") as dst:
        for line in src:
            s = json.loads(line)
            task = TASKS[s["task"]]
            doc = Doc(query="", choices=[s["lighteval_gold"]], gold_index=0, task_name=task)
            fn = metrics[task]
            if task == "gsm8k":
                scored = doc
                score = fn.sample_level_fn.compute(doc=doc, model_response=ModelResponse(text=[s["completion"]]))
            else:  # PassAtK.compute on one sample == its per-sample score; read the extraction off the scorer
                scored = Doc(query="", choices=[fn.preprocess(s["lighteval_gold"])], gold_index=0, task_name=task)
                response = ModelResponse(text=[fn.preprocess(s["completion"])])
                score = fn.compute_score(doc=scored, model_response=response)
            specific = scored.specific or {}
            dst.write(
                json.dumps(
                    {
                        "lighteval": bool(score),
                        "lighteval_read": specific.get("extracted_predictions"),
                        "lighteval_gold_read": specific.get("extracted_golds"),
                    }
                )
                + "\n"
            )


def grade_with_lighteval(samples: list[dict]) -> None:
    python = VENV / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python} not found: run `{sys.executable} {__file__} --setup` first")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        src.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run([str(python), __file__, "--lighteval-worker", str(src), str(dst)], check=True, env=env)
        for s, line in zip(samples, dst.read_text(encoding="utf-8").splitlines()):
            s.update(json.loads(line))


# -- report -----------------------------------------------------------------------------------------------------------
def report(samples: list[dict], k: int) -> dict:
    """Per task: agreement, pass@1 and pass@k of each side, disagreement classes with an example and the judge."""
    import numpy as np

    from benchctl.metrics import pass_at_k

    out = {}
    for task in TASKS:
        group = [s for s in samples if s["task"] == task]
        if not group:
            continue
        counts = defaultdict(lambda: [0, 0, 0])  # problem -> n, c benchctl, c lighteval
        for s in group:
            counts[s["id"]][0] += 1
            counts[s["id"]][1] += s["benchctl"]
            counts[s["id"]][2] += s["lighteval"]
        n, cb, cl = (np.array(col) for col in zip(*counts.values()))
        kk = min(k, int(n.min()))
        classes = Counter()
        examples = {}
        for s in group:
            if s["benchctl"] == s["lighteval"]:
                continue
            same = s["lighteval_read"] is not None and str(s["benchctl_read"]) in map(str, s["lighteval_read"])
            key = (
                f"benchctl {s['reason']} / lighteval {'correct' if s['lighteval'] else 'not correct'}",
                "same answer read" if same else "different answer read",
                "no box" if s["last_box"] is None else "benchctl" if s["last_box"] == s["benchctl"] else "lighteval",
            )
            classes[key] += 1
            examples.setdefault(
                key,
                {f: s[f] for f in ("id", "gold", "benchctl_read", "lighteval_read", "lighteval_gold_read")}
                | {"tail": s["completion"][-160:]},
            )
        out[task] = {
            "samples": len(group),
            "nonempty": sum(bool(s["completion"].strip()) for s in group),  # tiny models often emit nothing
            "boxed": sum(s["last_box"] is not None for s in group),
            "agree": float(np.mean([s["benchctl"] == s["lighteval"] for s in group])),
            "pass@1": (float(np.mean(pass_at_k(n, cb, 1))), float(np.mean(pass_at_k(n, cl, 1)))),
            f"pass@{kk}": (float(np.mean(pass_at_k(n, cb, kk))), float(np.mean(pass_at_k(n, cl, kk)))),
            "disagreements": [
                {"class": c[0], "read": c[1], "right": c[2], "count": m, "example": examples[c]}
                for c, m in classes.most_common()
            ],
        }
    return out


def print_report(result: dict) -> None:
    print(
        "| task | samples (non-empty, with a box) | identical verdicts | pass@1 benchctl / lighteval "
        "| pass@k benchctl / lighteval |"
    )
    print("|---|---|---|---|---|")
    for task, r in result.items():
        kname = next(key for key in r if key.startswith("pass@") and key != "pass@1")
        print(
            f"| {task} | {r['samples']} ({r['nonempty']}, {r['boxed']}) | {100 * r['agree']:.2f}% "
            f"| {r['pass@1'][0]:.3f} / {r['pass@1'][1]:.3f} "
            f"| {kname}: {r[kname][0]:.3f} / {r[kname][1]:.3f} |"
        )
    for task, r in result.items():
        for d in r["disagreements"]:
            print(f"\n[{task}] {d['count']} x {d['class']}, {d['read']}; right (final box): {d['right']}")
            print("   ", json.dumps(d["example"], ensure_ascii=False)[:600])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.environ.get("BENCHCTL_DATA_DIR") or str(REPO.parent / "shared" / "benchmarks")
    parser.add_argument("--data-dir", default=default_dir)
    parser.add_argument("--samples", type=Path, help="a benchctl eval/grade output folder")
    parser.add_argument("--synthetic", action="store_true", help="realistic completions for the real golds")
    parser.add_argument("--per-problem", type=int, default=8, help="synthetic completions per problem")
    parser.add_argument("--k", type=int, default=8, help="pass@k reported next to pass@1 (at most n)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    parser.add_argument("--setup", action="store_true", help="create build/venv-lighteval and exit")
    parser.add_argument("--lighteval-worker", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lighteval_worker:
        lighteval_worker(*args.lighteval_worker)
        return 0
    if args.setup:
        setup_venv()
        return 0
    if (args.samples is None) == (not args.synthetic):
        parser.error("give exactly one of --samples DIR or --synthetic")
    data_dir = Path(args.data_dir)
    samples = folder_samples(args.samples) if args.samples else synthetic_samples(data_dir, args.per_problem, args.seed)
    grade_with_benchctl(samples, data_dir)
    grade_with_lighteval(samples)
    result = report(samples, args.k)
    print_report(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
