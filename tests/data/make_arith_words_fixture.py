"""Add to tests/data/arith_words_smollm2.jsonl: S real SmolLM2-135M-Instruct answers (seed 0, the task's 96 new
tokens, `benchctl.lab.difficulty.sample_completions`: the trainer's prompt and distribution) at temperature T to
each of the first N problems of arith_words' test split, with the grader's verdict, under ids "PREFIX-i-s"; rows of
that prefix already there are replaced, others kept. Rows "test-*": the first design's test stream at T=1 (two- and
three-digit operands); rows "words-*": the redesign's (eleven families) at the testbed's T=0.6. The verdicts were
then checked by hand (docs/real-model.md); the test grades the stored answers, so it never runs the model.

    PYTHONPATH=$PWD python tests/data/make_arith_words_fixture.py 11 2 0.6 words
"""

import json
import sys
from pathlib import Path

from benchctl.lab.difficulty import sample_completions
from benchctl.results.runs import resolve_model
from benchctl.tasks import get_task


def main(count: int, samples: int, temperature: float, prefix: str) -> None:
    task = get_task("arith_words")
    problems = task.load(limit=count)
    model = resolve_model("smollm2-135m").path
    texts, _ = sample_completions(model, task, problems, samples, task.max_new_tokens, temperature, 0)
    out = Path(__file__).with_name("arith_words_smollm2.jsonl")
    kept = [line for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    kept = [line for line in kept if not json.loads(line)["id"].startswith(f"{prefix}-")]
    with out.open("w") as fh:
        fh.writelines(line + "\n" for line in kept)
        for index, (problem, group) in enumerate(zip(problems, texts)):
            for sample, text in enumerate(group):
                (verdict,) = task.grade([(problem, text)])
                row = {"id": f"{prefix}-{index}-{sample}", "index": index, "question": problem.question}
                row |= {"gold": problem.gold, "completion": text, "extracted": verdict.extracted}
                fh.write(json.dumps(row | {"correct": verdict.correct}) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        int(args[0]) if args else 11,
        int(args[1]) if len(args) > 1 else 2,
        float(args[2]) if len(args) > 2 else 0.6,
        args[3] if len(args) > 3 else "words",
    )
