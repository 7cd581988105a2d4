"""Regenerate tests/data/arith_words_smollm2.jsonl: S real SmolLM2-135M-Instruct answers (T=1, seed 0, the task's
96 new tokens, `benchctl.lab.difficulty.sample_completions`: the trainer's prompt and distribution) to each of the
first N problems of arith_words' test split (every family among them), with the grader's verdict. The verdicts
were then checked by hand (docs/real-model.md); the test grades the stored answers, so it never runs the model.

    PYTHONPATH=$PWD python tests/data/make_arith_words_fixture.py 8 2
"""

import json
import sys
from pathlib import Path

from benchctl.lab.difficulty import sample_completions
from benchctl.results.runs import resolve_model
from benchctl.tasks import get_task


def main(count: int, samples: int) -> None:
    task = get_task("arith_words")
    problems = task.load(limit=count)
    model = resolve_model("smollm2-135m").path
    texts, _ = sample_completions(model, task, problems, samples, task.max_new_tokens, 1.0, 0)
    out = Path(__file__).with_name("arith_words_smollm2.jsonl")
    with out.open("w") as fh:
        for index, (problem, group) in enumerate(zip(problems, texts)):
            for sample, text in enumerate(group):
                (verdict,) = task.grade([(problem, text)])
                row = {"id": f"test-{index}-{sample}", "index": index, "question": problem.question}
                row |= {"gold": problem.gold, "completion": text, "extracted": verdict.extracted}
                fh.write(json.dumps(row | {"correct": verdict.correct}) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 16, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
