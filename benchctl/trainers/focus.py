"""CoDaPO's resampling of high-value questions (arXiv:2606.07950, CoDaSampling), the trainer's second sampler beside
DAPO's dynamic sampling, and the per-call inputs the trainer hands every estimator (contract.md §1).

Transcribed from tmlr-group/CoDaPO @ 210c2051f54de76fdf92eb4cef9bb919dd404789, codapo/ray_trainer.py (the
`DuplicateBatchDataLoader` and the even/odd steps of `fit`): every prompt batch is trained on two consecutive steps.
A normal step draws P new prompts; after it, the questions whose value w_q (`estimators.codapo.question_value`:
confidence x U-shaped difficulty) is >= the `codapo_percentile` quantile of the batch's (torch.quantile's linear
rule) are kept, in batch order, and the next step (a focus step) re-rolls them, each `codapo_repeat` times, cycling
through them until P groups, without advancing the data order. Then a normal step again.
Deviations: the value ranks the rewards the estimator sees (correctness, plus the overlong penalty when on) and the
engine's sampled-token log-probs [our choice; the code uses the reward score and the actor's old log-probs]; each
copy of a question is its own group with its own seed key (`seed_keys`); a selected question enters once per
position (the code matches by question text, so a question twice in a batch is taken twice as often).
Combination: DAPO's dynamic sampling refills a batch with new prompts, which a focus step does not draw; the two are
refused together (`plan.resolve`) [our choice]; the authors' CoDaPO + DAPO script sets filter_groups.enable, which
their trainer never reads, so it too runs without dynamic sampling.
"""

from __future__ import annotations

import numpy as np

from benchctl.estimators.codapo import question_value


def estimator_inputs(problems: list, groups: list) -> dict:
    """The optional inputs of `Estimator.advantages`: prompt_ids (S,) and seq_logprob (S, G), the mean sampled-token
    log-prob of each rollout (0 for a rollout without tokens, as CoDaPO's code)."""
    seq_logprob = [[float(np.mean(x.logprobs)) if x.logprobs else 0.0 for x in group] for group in groups]
    return {"prompt_ids": [p.id for p in problems], "seq_logprob": np.array(seq_logprob)}


def next_focus(sampler, rewards: np.ndarray, seq_logprob: np.ndarray, positions: tuple, focus: tuple) -> tuple:
    """Data positions the next step re-rolls (a focus step), or () when it is a normal step: after a focus step, or
    with the sampler off (`sampler.focus_quantile` None). rewards, seq_logprob (S, G); positions (S,)."""
    if sampler.focus_quantile is None or focus:
        return ()
    value = question_value(rewards, seq_logprob, 0.1)  # (S,) with the code's weight_offset, bit for bit its ties
    top = np.flatnonzero(value >= np.quantile(value, sampler.focus_quantile))
    return tile([positions[i] for i in top], sampler.focus_repeat, sampler.prompts_per_step)


def tile(questions: list, repeat: int, size: int) -> tuple:
    """Each question `repeat` times in order, cycling through them until `size` entries (the code's refill loop);
    () for no question (a value that is NaN selects none), never a loop without end."""
    out: list = []
    while questions and len(out) < size:
        for question in questions:
            out.extend([question] * min(repeat, size - len(out)))
            if len(out) == size:
                break
    return tuple(out)


def seed_keys(step: int, positions, batch) -> list[str]:
    """One seed key per group: `step/position/id`, with `/copy` for the second and later copies of a position."""
    seen: dict = {}
    keys = []
    for pos, problem in zip(positions, batch):
        copy = seen[pos] = seen.get(pos, -1) + 1
        keys.append(f"{step}/{pos}/{problem.id}" + (f"/{copy}" if copy else ""))
    return keys
