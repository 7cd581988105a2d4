"""Which prompt makes `arith_words` a testbed: SmolLM2-135M-Instruct's step-0 pass@1 by family under prompt variants
(system turn x instruction), on the same first P problems of a split, in one run (issue 42 item 1).

Each variant samples n completions per prompt at `--temperature` (default 1) with `benchctl tasks difficulty`'s
sampler (`benchctl.lab.difficulty.sample_completions`: the trainer's prompt and distribution, the task's 96 new
tokens), grades them with the task's grader, and prints, per family: prompts, mean pass@1, the share under 0.1 and
over 0.9, mean tokens. `--dump FILE` writes every completion with its verdict (jsonl) to read what the model does.

    PYTHONPATH=$PWD python benchmarks/arith_words_prompts.py --prompts 40 --n 8 --dump /tmp/aw.jsonl

Variants: the task's default (empty system turn, "Give your final answer as a number at the end."), the
template's own system prompt with it, and each system turn with the first design's "Put your final answer within
\\boxed{}." (arith_chat's instruction), and one worked example in the system turn (`example+number`).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _shared import comma_choices

from benchctl.lab.difficulty import difficulty_rows, sample_completions
from benchctl.results.runs import resolve_model
from benchctl.tasks.arith_words import INSTRUCTION, ArithWordsTask

BOXED = "Put your final answer within \\boxed{}."
EXAMPLE = (  # one worked example in the system turn, to anchor the answer's form
    "Solve the problem: write the computation briefly, then the answer.\n"
    "Example. Question: Mia has 4 apples and gets 3 more. How many apples does Mia have now?\n"
    "Answer: 4 + 3 = 7. The answer is 7."
)
VARIANTS = {  # name: (system_prompt, instruction); None: the chat template's default system prompt
    "empty+number": ("", INSTRUCTION),
    "template+number": (None, INSTRUCTION),
    "empty+boxed": ("", BOXED),
    "template+boxed": (None, BOXED),
    "example+number": (EXAMPLE, INSTRUCTION),
}


def run_variant(name: str, args, model: str, dump) -> None:
    """Sample, grade, print the table by family; append the completions to `dump`."""
    system, instruction = VARIANTS[name]
    task = ArithWordsTask(args.prompts, args.seed, args.split, system_prompt=system, instruction=instruction)
    problems = task.load()
    start = time.perf_counter()
    texts, lengths = sample_completions(model, task, problems, args.n, task.max_new_tokens, args.temperature, args.seed)
    seconds = time.perf_counter() - start
    rates = []
    for problem, group in zip(problems, texts):
        verdicts = task.grade([(problem, text) for text in group])
        rates.append(np.mean([v.correct for v in verdicts]))
        for text, verdict in zip(group, verdicts) if dump else ():
            row = {"variant": name, "question": problem.question, "gold": problem.gold, "completion": text}
            dump.write(json.dumps(row | {"extracted": verdict.extracted, "correct": verdict.correct}) + "\n")
    levels = [problem.meta["level"] for problem in problems]
    print(f"\n{name} at T={args.temperature}: system={system!r} instruction={instruction!r}")
    print(f"{np.mean(lengths):.1f} tokens a completion, {seconds:.0f} s")
    print(f"{'family':<12} {'prompts':>7} {'pass@1':>7} {'<0.1':>6} {'>0.9':>6}")
    for row in difficulty_rows(levels, np.array(rates), 0.1, 0.9):
        print(
            f"{row['level']:<12} {row['prompts']:>7} {row['mean_pass']:>7.3f} "
            f"{row['under_low']:>6.1%} {row['over_high']:>6.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=40, help="first N problems of the split")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--split", default="train", help="train, test or validation")
    parser.add_argument("--seed", type=int, default=0, help="task and sampling seed")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    parser.add_argument("--dump", default=None, help="jsonl file for every completion and its verdict")
    args = parser.parse_args()
    names = comma_choices(args.variants, VARIANTS, "variant")
    model = resolve_model("smollm2-135m").path
    dump = open(args.dump, "w") if args.dump else None  # noqa: SIM115 - closed below
    try:
        for name in names:
            run_variant(name, args, model, dump)
    finally:
        if dump:
            dump.close()


if __name__ == "__main__":
    main()
