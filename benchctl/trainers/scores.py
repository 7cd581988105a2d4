"""Per-token scores an estimator asks the trainer for (`est.token_scores`): OAR's importance scores (docs/contract.md
§7; arXiv:2601.07408) over the reasoning span, RL-ZVP's policy entropies (arXiv:2509.21880) over the whole response.

`phi` of a response = mean log-probability of its answer tokens: the tokens of the final answer the task's
extractor reads (`task.answer_span`: the last `\\boxed{}`'s contents when there is a box), found by character
offsets from prefix decoding (`token_range`, exact also for byte-level tokens that split a multi-byte character).
Scores cover the reasoning tokens, the completion tokens before that span:
* "gradient" (`oar_g`): s_t = |<dphi/de_t, e_t>|, gradient x input at the input embedding of token t; one
  backward pass for the whole batch (each row's phi depends on its own embeddings only).
* "perturbation" (`oar_p`): s_t = max(phi - phi(token t replaced by pad), 0); every (row, token) perturbation
  is one row of a batched no-grad forward, the rows of one prompt sharing its forward (the prompt is never
  perturbed; 2.8x faster than a forward per row on a make-claims step, benchmarks/oar_scores.py).
[our choice] A completion without an answer (or whose tokens do not decode back to its text) has no reasoning
span: all its tokens keep weight 1 (logged as `oar/no_span_frac`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from benchctl.trainers.batch import Batch, pieces
from benchctl.trainers.policy import forward_stats, piecewise_stats


def answer_masks(
    task, texts: Sequence[str], completions: Sequence[Sequence[int]], tokenizer, width: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(reasoning_mask, answer_mask), each (N, width) bool over completion tokens."""
    reasoning = torch.zeros((len(texts), width), dtype=torch.bool)
    answer = torch.zeros((len(texts), width), dtype=torch.bool)
    for i, (text, ids) in enumerate(zip(texts, completions)):
        span = _answer_token_span(task, text, ids, tokenizer)
        if span is not None:
            first, last = span
            reasoning[i, :first] = True
            answer[i, first:last] = True
    return reasoning, answer


def _answer_token_span(task, text: str, ids: Sequence[int], tokenizer) -> tuple[int, int] | None:
    """Token range [first, last) of the answer the task's extractor reads (`task.answer_span`: the last box's
    contents when there is a box), None without one or when `ids` do not decode to `text`."""
    span = task.answer_span(text)
    if span is None or span[0] >= span[1]:
        return None
    return token_range(ids, tokenizer, text, *span)


def token_range(ids: Sequence[int], tokenizer, text: str, start: int, end: int) -> tuple[int, int] | None:
    """Tokens [first, last) whose text overlaps characters [start, end) of `text`; None unless `ids` decode to it.

    Token j covers characters [C(j), L(j + 1)): L(k) = len(decode(ids[:k])), C(k) = the same without a trailing
    U+FFFD, i.e. the characters completely decoded. A byte-level token holding part of a multi-byte character
    decodes it as U+FFFD, so it covers that character, as does the token completing it (decoding token by token
    and concatenating would not give `text` back). Prefixes are decoded from the end back to the span: the cost
    is (tokens from the span to the end) decodes, small for a final answer.
    """
    ids = list(ids)
    memo: dict[int, str] = {}

    def prefix(k: int) -> str:
        if k not in memo:
            memo[k] = tokenizer.decode(ids[:k], skip_special_tokens=True)
        return memo[k]

    if prefix(len(ids)) != text:
        return None
    last = len(ids)
    while last > 0 and len(prefix(last - 1).rstrip("\ufffd")) >= end:  # token last-1 starts at or after `end`
        last -= 1
    first = last
    while first > 0 and len(prefix(first)) > start:  # token first-1 ends after `start`
        first -= 1
    return (first, last) if first < last else None


def _phi(logp: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Mean log-prob of the answer tokens per row (N,); 0 for rows without an answer span."""
    a = answer.to(logp.dtype)
    return (logp * a).sum(dim=1) / a.sum(dim=1).clamp(min=1.0)


@dataclass(frozen=True)
class Scoring:
    """How the OAR scorers forward the policy (the same settings as its update)."""

    temperature: float = 1.0  # the policy's log-probs at the rollout temperature
    pad_id: int = 0  # the token a perturbation puts in place of the scored one (oar_p)
    micro_batch_tokens: int | None = None  # rows x width per forward; None = one forward
    chunk_tokens: int = 1024  # with micro_batch_tokens: positions per (chunk x vocabulary) logits block


def gradient_scores(model, batch: Batch, answer: torch.Tensor, reasoning: torch.Tensor, how: Scoring) -> torch.Tensor:
    """|<dphi/de_t, e_t>| on reasoning tokens (N, T), 0 elsewhere (oar_g).

    Each row's phi depends on its own embeddings only, so rows are scored apart, one backward per piece trimmed of its
    padding columns: the trainer's length buckets (`length_buckets`, as its update forwards them: 1.6x faster than one
    padded batch on a make-claims step, benchmarks/oar_scores.py), or with `micro_batch_tokens` its `token_budget_split`
    micro-batches, the log-probs then in blocks of `chunk_tokens` positions (`forward_stats`). The scores equal the
    one-batch ones up to float rounding."""
    temperature, micro_batch_tokens = how.temperature, how.micro_batch_tokens
    chunk_tokens = how.chunk_tokens if micro_batch_tokens else None
    out = torch.zeros(reasoning.shape, dtype=torch.float32)  # (N, T)
    for index, sub in pieces(batch, micro_batch_tokens):
        rows, t = index.cpu(), sub.tokens.shape[1]
        part = _gradient_scores(model, sub, answer[rows, :t], reasoning[rows, :t], temperature, chunk_tokens)
        out[rows, :t] = part.float().cpu()
    return out


def _gradient_scores(model, batch: Batch, answer, reasoning, temperature: float, chunk_tokens: int | None):
    """`gradient_scores` of one forward/backward over all rows of `batch` (N, T)."""
    embed = model.get_input_embeddings()(batch.input_ids).detach().requires_grad_(True)  # (N, L, D)
    logp = forward_stats(model, batch, temperature, chunk=chunk_tokens, inputs_embeds=embed).logprobs  # (N, T)
    (grad,) = torch.autograd.grad(_phi(logp, answer.to(logp.device)).sum(), embed)
    start = batch.prompt_width
    t = batch.tokens.shape[1]
    score = (grad[:, start : start + t] * embed[:, start : start + t]).sum(dim=-1).abs()  # (N, T)
    return score.detach() * reasoning.to(score.device)


def perturbation_scores(
    model, batch: Batch, answer: torch.Tensor, reasoning: torch.Tensor, how: Scoring, chunk: int = 256
) -> torch.Tensor:
    """max(phi - phi(token t -> pad), 0) on reasoning tokens (N, T), batched over all perturbations (oar_p);
    `chunk` perturbed rows per forward, with `how.micro_batch_tokens` at most that many tokens' worth of rows
    (and the log-probs in blocks of `how.chunk_tokens` positions)."""
    temperature, pad_id, micro_batch_tokens = how.temperature, how.pad_id, how.micro_batch_tokens
    answer = answer.to(batch.tokens.device)
    blocks = how.chunk_tokens if micro_batch_tokens else None
    if micro_batch_tokens:
        chunk = max(1, micro_batch_tokens // batch.input_ids.shape[1])
    with torch.no_grad():
        base = _phi(forward_stats(model, batch, temperature, chunk=blocks).logprobs, answer)  # (N,)
        rows, cols = torch.nonzero(reasoning, as_tuple=True)
        scores = torch.zeros(reasoning.shape, dtype=torch.float32)
        for start in range(0, rows.numel(), chunk):
            r, c = rows[start : start + chunk], cols[start : start + chunk]
            sub = batch.rows(r.to(batch.input_ids.device))
            ids = sub.input_ids.clone()
            ids[torch.arange(r.numel()), batch.prompt_width + c.to(ids.device)] = pad_id
            # the prompt is never perturbed: rows of one prompt share its forward (`completion_forward`)
            perturbed = Batch(
                ids, sub.attention_mask, sub.position_ids, sub.tokens, sub.mask, sub.prompt_width, sub.prompt_index
            )
            phi = _phi(forward_stats(model, perturbed, temperature, chunk=blocks).logprobs, answer[r])
            scores[r, c] = (base[r] - phi).clamp(min=0.0).float().cpu()
    return scores


def entropy_scores(model, batch: Batch, answer: torch.Tensor, span: torch.Tensor, how: Scoring) -> torch.Tensor:
    """The policy's entropy H_t = -sum_v pi_v log pi_v at each response token (N, T), no gradient, 0 outside `span`
    (rl_zvp): the distribution the token was sampled from, at the rollout temperature, before the update. `answer`
    is unused (the signature is every scorer's)."""
    chunk = how.chunk_tokens if how.micro_batch_tokens else None
    stats = piecewise_stats(
        model, batch, how.temperature, want=("logprobs", "entropy"), micro_batch_tokens=how.micro_batch_tokens,
        chunk=chunk,
    )  # fmt: skip
    return stats.entropy.float().cpu() * span.to(torch.float32)


SCORERS = {"gradient": gradient_scores, "perturbation": perturbation_scores, "entropy": entropy_scores}
ANSWER_SPAN = ("gradient", "perturbation")  # scorers of the reasoning span before the answer (tasks that show work)


def score_masks(kind: str, task, texts, completions, tokenizer, response_mask: torch.Tensor):
    """(span, answer) (N, T) bool for scorer `kind`: OAR's reasoning span and answer tokens (`answer_masks`), or,
    for a whole-response scorer (entropy), every response token and no answer."""
    if kind in ANSWER_SPAN:
        return answer_masks(task, texts, completions, tokenizer, response_mask.shape[1])
    span = response_mask.bool().cpu()
    return span, torch.zeros_like(span)
