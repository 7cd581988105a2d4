"""What RL-ZVP's entropies cost in the TRL plug-in when TRL runs no old-policy forward: the plug-in's one extra
no-grad forward (`BenchctlGRPOTrainer.completion_entropies`) against TRL's own update forward/backward
(`_compute_loss` + backward) on the same generation batch.

    python benchmarks/trl_zvp_entropy.py [--model tiny-warm] [--prompts 8] [--group 8] [--tokens 64] [--reps 5]

One generation batch of `prompts` x `group` completions of up to `tokens` tokens (TRL samples them; the reward is
a fixed function of the text so some groups are all-equal). Timed, each the median of `reps` interleaved runs (so
machine load falls on both alike): the extra forward, and one loss forward + backward over the same rows (what TRL's
update costs per generation batch with one mini-batch and num_iterations=1). Prints seconds and the ratio. With
vLLM importance-sampling correction, TRL's default there, or misaligned steps, the extra forward is not run (its
entropies come from TRL's own old-policy forward; tests/integrations/trl/test_trl_rl_zvp.py counts the forwards).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch


def reward(prompts, completions, **_):
    """1 for prompts starting with an even digit, else a spread of the completion text: some all-equal groups."""
    return [1.0 if int(p[0]) % 2 == 0 else (sum(map(ord, c)) % 3) / 2 for p, c in zip(prompts, completions)]


def make_trainer(model: str, prompts: int, group: int, tokens: int, out: str):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from benchctl.integrations.trl import BenchctlGRPOTrainer
    from benchctl.results.runs import resolve_model

    path = resolve_model(model).path
    args = GRPOConfig(
        output_dir=out, use_cpu=not torch.cuda.is_available(), bf16=False, fp16=False,
        per_device_train_batch_size=prompts * group, num_generations=group, max_completion_length=tokens,
        beta=0.0, max_steps=1, report_to="none", save_strategy="no", disable_tqdm=True, log_level="error", seed=0,
    )  # fmt: skip
    data = Dataset.from_list([{"prompt": f"{a}+{b}="} for a in range(10) for b in range(10)])
    return BenchctlGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), reward_funcs=reward, args=args,
        train_dataset=data, processing_class=AutoTokenizer.from_pretrained(path), estimator="rl_zvp",
    )  # fmt: skip


def median_seconds(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-warm")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=5)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        trainer = make_trainer(a.model, a.prompts, a.group, a.tokens, out)
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # what Trainer.train sets before each loss
        prompts = [{"prompt": f"{q % 10}+{q // 10}="} for q in range(a.prompts) for _ in range(a.group)]
        output = trainer._generate_and_score_completions(prompts)
        assert "old_per_token_logps" not in output  # this configuration pays the extra forward

        def update():
            trainer.model.zero_grad(set_to_none=True)
            trainer._compute_loss(trainer.model, output).backward()

        extra, loss = [], []
        for _ in range(a.reps):  # interleaved
            extra.append(median_seconds(lambda: trainer.completion_entropies(output, "train"), 1))
            loss.append(median_seconds(update, 1))
    e, u = statistics.median(extra), statistics.median(loss)
    rows, width = output["completion_ids"].shape
    print(f"{a.model}: {rows} completions x {width} tokens, median of {a.reps}")
    print(f"extra entropy forward (no grad) {e:.3f} s; TRL loss forward+backward {u:.3f} s; ratio {e / u:.2f}")


if __name__ == "__main__":
    main()
