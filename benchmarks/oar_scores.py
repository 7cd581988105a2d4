"""What OAR's importance scores cost per step, against the policy update's forward/backward on the same batch.

    python benchmarks/oar_scores.py [--prompts 64] [--group 8] [--reps 3]

A batch like one `make claims` step (tiny-warm, arith_mix train prompts x G completions: the reference
completions, some cut short so lengths vary), packed as the trainer packs it. Timed, each the median of `reps`
interleaved runs (so machine load falls on all alike):

* reference: one forward/backward of the summed completion log-probs over the trainer's length buckets (what the
  update costs per step, one mini-batch);
* oar_g, one padded batch (the scorer before length buckets) and in length buckets (`gradient_scores` now);
* oar_p, perturbed rows forwarded per row (before) and sharing their prompt's forward (`perturbation_scores` now).

Prints seconds and each one's ratio to the reference. The scores of both forms agree to float rounding (checked).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchctl.results.runs import resolve_model
from benchctl.tasks import get_task
from benchctl.trainers.batch import Batch, length_buckets, pack
from benchctl.trainers.policy import forward_stats
from benchctl.trainers.scores import Scoring, _gradient_scores, answer_masks, gradient_scores, perturbation_scores


def make_batch(prompts: int, group: int):
    """(model, tokenizer, batch, answer mask, reasoning mask) of `prompts` x `group` arith_mix rows."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model("tiny-warm").path
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    task = get_task("arith_mix", split="train", size=prompts)
    rows_p, rows_c, texts = [], [], []
    for i, problem in enumerate(task.load()):
        prompt = tokenizer(task.prompt_text(problem), add_special_tokens=False)["input_ids"]
        full = task.reference_completion(problem)
        for j in range(group):
            text = full if (i + j) % 3 else full[: max(1, len(full) - 2)] + full[-2:]  # same text, varied groups
            rows_p.append(prompt)
            rows_c.append(tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
            texts.append(text)
    batch = pack(rows_p, rows_c, tokenizer.pad_token_id)
    reasoning, answer = answer_masks(task, texts, rows_c, tokenizer, batch.tokens.shape[1])
    return model, tokenizer, batch, answer, reasoning


def reference(model, batch: Batch) -> None:
    """The update's forward/backward: summed log-probs over the length buckets."""
    model.zero_grad()
    for index in length_buckets(batch):
        sub = batch.rows(index).trim()
        logp = forward_stats(model, sub, 1.0).logprobs
        (logp * sub.mask).sum().backward()


def oar_g_one_batch(model, batch, answer, reasoning, how):
    return _gradient_scores(model, batch, answer, reasoning, how.temperature, None)


def oar_p_per_row(model, batch, answer, reasoning, how):
    unshared = Batch(batch.input_ids, batch.attention_mask, batch.position_ids, batch.tokens, batch.mask,
                     batch.prompt_width)  # fmt: skip
    return perturbation_scores(model, unshared, answer, reasoning, how)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model, tokenizer, batch, answer, reasoning = make_batch(args.prompts, args.group)
    how = Scoring(1.0, tokenizer.pad_token_id)
    cases = {
        "reference (update fwd/bwd)": lambda: reference(model, batch),
        "oar_g, one padded batch": lambda: oar_g_one_batch(model, batch, answer, reasoning, how),
        "oar_g, length buckets (now)": lambda: gradient_scores(model, batch, answer, reasoning, how),
        "oar_p, per-row forward": lambda: oar_p_per_row(model, batch, answer, reasoning, how),
        "oar_p, shared prompt (now)": lambda: perturbation_scores(model, batch, answer, reasoning, how),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    results = {}
    for _ in range(args.reps):
        for name, run in cases.items():
            start = time.perf_counter()
            results[name] = run()
            times[name].append(time.perf_counter() - start)
    for old, new in (("oar_g, one padded batch", "oar_g, length buckets (now)"),
                     ("oar_p, per-row forward", "oar_p, shared prompt (now)")):  # fmt: skip
        gap = float((results[old] - results[new]).abs().max() / results[old].abs().max().clamp(min=1e-12))
        print(f"{new}: max relative difference to the old form {gap:.1e}")
    base = statistics.median(times["reference (update fwd/bwd)"])
    print(f"{batch.tokens.shape[0]} rows, width {batch.input_ids.shape[1]}; median of {args.reps}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:30s} {median:7.3f} s   x{median / base:5.2f} of the reference")


if __name__ == "__main__":
    main()
