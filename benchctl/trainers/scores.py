"""OAR importance scores (spec §7; arXiv:2601.07408): what `est.token_scores` asks the trainer to compute.

`phi` of a response = mean log-probability of its answer tokens (the final answer span, located with the task's
own `extract`). Scores cover the reasoning tokens, the completion tokens before that span:
* "gradient" (`oar_g`): s_t = |<dphi/de_t, e_t>|, gradient x input at the input embedding of token t; one
  backward pass for the whole batch (each row's phi depends on its own embeddings only).
* "perturbation" (`oar_p`): s_t = max(phi - phi(token t replaced by pad), 0); every (row, token) perturbation
  is one row of a batched no-grad forward.
[our choice] A completion whose answer is not found in its text (or whose tokens do not decode back to the
text character for character) has no reasoning span: all its tokens keep weight 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from benchctl.trainers.policy import Batch, completion_logits, gather_logprobs


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
    """Token range [first, last) covering the last occurrence of the extracted answer in `text`."""
    extracted = task.extract(text)
    if not extracted:
        return None
    start = text.rfind(extracted)
    if start < 0:
        return None
    end = start + len(extracted)
    pieces = [tokenizer.decode([t], skip_special_tokens=True) for t in ids]
    if "".join(pieces) != text:
        return None
    offsets, pos = [], 0
    for piece in pieces:
        offsets.append((pos, pos + len(piece)))
        pos += len(piece)
    covering = [j for j, (a, b) in enumerate(offsets) if b > start and a < end]
    return (covering[0], covering[-1] + 1) if covering else None


def _phi(logp: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Mean log-prob of the answer tokens per row (N,); 0 for rows without an answer span."""
    a = answer.to(logp.dtype)
    return (logp * a).sum(dim=1) / a.sum(dim=1).clamp(min=1.0)


def gradient_scores(
    model, batch: Batch, answer: torch.Tensor, reasoning: torch.Tensor, temperature: float, pad_id: int
) -> torch.Tensor:
    """|<dphi/de_t, e_t>| on reasoning tokens (N, T), 0 elsewhere (oar_g); `pad_id` unused (one signature)."""
    embed = model.get_input_embeddings()(batch.input_ids).detach().requires_grad_(True)  # (N, L, D)
    logp = gather_logprobs(completion_logits(model, batch, temperature, inputs_embeds=embed), batch.tokens)
    (grad,) = torch.autograd.grad(_phi(logp, answer.to(logp.device)).sum(), embed)
    start = batch.prompt_width
    t = batch.tokens.shape[1]
    score = (grad[:, start : start + t] * embed[:, start : start + t]).sum(dim=-1).abs()  # (N, T)
    return score.detach() * reasoning.to(score.device)


def perturbation_scores(
    model,
    batch: Batch,
    answer: torch.Tensor,
    reasoning: torch.Tensor,
    temperature: float,
    pad_id: int,
    chunk: int = 256,
) -> torch.Tensor:
    """max(phi - phi(token t -> pad), 0) on reasoning tokens (N, T), batched over all perturbations (oar_p)."""
    answer = answer.to(batch.tokens.device)
    with torch.no_grad():
        base = _phi(gather_logprobs(completion_logits(model, batch, temperature), batch.tokens), answer)  # (N,)
        rows, cols = torch.nonzero(reasoning, as_tuple=True)
        scores = torch.zeros(reasoning.shape, dtype=torch.float32)
        for start in range(0, rows.numel(), chunk):
            r, c = rows[start : start + chunk], cols[start : start + chunk]
            sub = batch.rows(r.to(batch.input_ids.device))
            ids = sub.input_ids.clone()
            ids[torch.arange(r.numel()), batch.prompt_width + c.to(ids.device)] = pad_id
            perturbed = Batch(ids, sub.attention_mask, sub.position_ids, sub.tokens, sub.mask, sub.prompt_width)
            phi = _phi(gather_logprobs(completion_logits(model, perturbed, temperature), sub.tokens), answer[r])
            scores[r, c] = (base[r] - phi).clamp(min=0.0).float().cpu()
    return scores


SCORERS = {"gradient": gradient_scores, "perturbation": perturbation_scores}
