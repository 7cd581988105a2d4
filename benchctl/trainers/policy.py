"""The policy's forward paths: completion logits or hidden states (the shared-prompt KV path included), token
log-probabilities and entropy, whole or in (position chunk x vocabulary) blocks.

Rows are packed (`benchctl.trainers.batch`) with the prompt left-padded and the completion right-padded, so every
completion starts at the same column `prompt_width` and the LM head runs only on the completion positions
(`logits_to_keep`); position ids count real tokens only, so a padded row sees exactly the positions vLLM gave it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchctl.trainers.batch import Batch, pieces


def completion_logits(
    model, batch: Batch, temperature: float, inputs_embeds: torch.Tensor | None = None, share_prompts: bool = True
) -> torch.Tensor:
    """Logits (N, T, V) / temperature predicting each completion token: `completion_forward` with the model's own
    LM head on the completion positions only (what `model(..., logits_to_keep=T + 1)` computes, bit for bit)."""
    logits = completion_forward(model, batch, model.get_output_embeddings(), inputs_embeds, share_prompts).float()
    softcap = getattr(model.config, "final_logit_softcapping", None)
    if softcap:  # Gemma 2's final soft-capping, as its forward applies it after the head
        logits = torch.tanh(logits / softcap) * softcap
    return logits / temperature


def completion_hidden(
    model, batch: Batch, inputs_embeds: torch.Tensor | None = None, share_prompts: bool = True
) -> torch.Tensor:
    """Final hidden states (N, T, D) at the positions that predict each completion token, without the LM head
    (`completion_forward` with no head): `completion_logits(...) == completion_hidden(...) @ lm_head_weight(model).T
    / temperature`, the head then applied in vocabulary chunks (`chunked_logprobs_entropy`)."""
    return completion_forward(model, batch, None, inputs_embeds, share_prompts)


def completion_forward(
    model, batch: Batch, head, inputs_embeds: torch.Tensor | None = None, share_prompts: bool = True
) -> torch.Tensor:
    """The one forward pass of the policy: the decoder (`model.get_decoder()`) over the packed rows, then `head`
    (the LM head module, or None for the hidden states) on the positions that predict each completion token:
    (N, T, V) or (N, T, D).

    Rows that share a prompt (`batch.prompt_index`: a group's G rows) share its forward pass [our choice]: each
    distinct prompt runs once with a KV cache, the cache is indexed out to its rows, and the completions run on
    top of it, so prompt tokens cost 1/G of a per-row forward. Causal attention makes a prompt's keys and values
    independent of what follows, so the outputs equal the per-row forward's (to float rounding) and autograd
    sums each row's gradient through the shared prompt (`tests/trainers/test_buckets.py`). The head runs on each
    decoder call's outputs as the model's own forward does, so the logits and their gradients are those of
    `model(...)` bit for bit."""
    head = head if head is not None else (lambda hidden: hidden)
    decoder = model.get_decoder()
    if share_prompts and inputs_embeds is None and batch.prompt_index is not None:
        unique, inverse = torch.unique(batch.prompt_index, return_inverse=True)
        if len(unique) < batch.tokens.shape[0]:
            return _shared_prompt_forward(decoder, head, batch, inverse, len(unique))
    t = batch.tokens.shape[1]
    kwargs = {"inputs_embeds": inputs_embeds} if inputs_embeds is not None else {"input_ids": batch.input_ids}
    out = decoder(attention_mask=batch.attention_mask, position_ids=batch.position_ids, use_cache=False, **kwargs)
    return head(out.last_hidden_state[:, -(t + 1) :, :])[:, :-1, :]  # position Lp-1+j predicts completion token j


def _shared_prompt_forward(decoder, head, batch: Batch, inverse: torch.Tensor, distinct: int) -> torch.Tensor:
    """`completion_forward` with one decoder pass per distinct prompt; inverse (N,) maps each row to its prompt in
    0..distinct-1."""
    lp, t, n = batch.prompt_width, batch.tokens.shape[1], batch.tokens.shape[0]
    first = torch.zeros(distinct, dtype=torch.long, device=inverse.device)
    first.scatter_(0, inverse, torch.arange(n, device=inverse.device))  # a row of each prompt (all identical)
    prompt = decoder(
        input_ids=batch.input_ids[first, :lp],
        attention_mask=batch.attention_mask[first, :lp],
        position_ids=batch.position_ids[first, :lp],
        use_cache=True,
    )
    parts = [head(prompt.last_hidden_state[:, -1:, :])[inverse]]  # (N, 1, .): the last prompt position -> token 0
    if t > 1:
        cache = prompt.past_key_values
        cache.batch_select_indices(inverse)  # (distinct, ...) -> (N, ...), differentiable indexing
        tail = decoder(
            input_ids=batch.input_ids[:, lp : lp + t - 1],
            attention_mask=batch.attention_mask[:, : lp + t - 1],
            position_ids=batch.position_ids[:, lp : lp + t - 1],
            past_key_values=cache,
            use_cache=True,
        )  # completion token j predicts token j + 1
        parts.append(head(tail.last_hidden_state))
    return torch.cat(parts, dim=1)  # (N, T, .)


def gather_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[token] per position (N, T), via logsumexp (no (N, T, V) log-softmax kept)."""
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (N, T)
    return picked - torch.logsumexp(logits, dim=-1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) per position (N, T), without keeping a (N, T, V) probability tensor alive."""
    logz = torch.logsumexp(logits, dim=-1, keepdim=True)  # (N, T, 1)
    return logz.squeeze(-1) - (torch.softmax(logits, dim=-1) * logits).sum(dim=-1)


# ---- bounded memory: log-probs/entropy in token chunks, micro-batches by token budget (docs/gpu.md) -----------


def lm_head_weight(model) -> torch.Tensor:
    """The (V, D) output-embedding weight with logits = hidden @ W.T; the same Parameter as the input embedding
    when the model ties them (Qwen2.5 up to 3B), so its gradient collects both uses. Refuses heads that are not
    a plain bias-free linear map (logit soft-capping, a bias), which the chunked path would get wrong."""
    from benchctl.errors import BenchctlError

    head = model.get_output_embeddings()
    softcap = getattr(model.config, "final_logit_softcapping", None)
    if getattr(head, "bias", None) is not None or softcap:
        raise BenchctlError(f"{type(model).__name__}: the LM head has a bias or soft-capping; use completion_logits")
    return head.weight


def _logprob_entropy_chunk(
    hidden: torch.Tensor, weight: torch.Tensor, tokens: torch.Tensor, temperature: float, sum_sq: bool = False
) -> tuple[torch.Tensor, ...]:
    """(c, D) hidden, (c,) tokens -> log-prob (c,) and entropy (c,) from one (c, V) fp32 logits block; with
    `sum_sq`, also sum_v pi_v^2 (c,) from the same probabilities."""
    logits = (hidden @ weight.t()).float() / temperature  # (c, V)
    logz = torch.logsumexp(logits, dim=-1)  # (c,)
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (c,)
    probs = torch.softmax(logits, dim=-1)  # (c, V)
    entropy = logz - (probs * logits).sum(dim=-1)  # (c,)
    return (picked - logz, entropy, probs.pow(2).sum(dim=-1)) if sum_sq else (picked - logz, entropy)


def chunked_logprobs_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float,
    chunk_tokens: int = 1024,
    sum_sq: bool = False,
) -> tuple[torch.Tensor, ...]:
    """Token log-probs and entropies (N, T) of logits = hidden @ weight.T / temperature, never holding more than
    `chunk_tokens` x V logits: equal to `gather_logprobs(logits, tokens)` and `token_entropy(logits)` of
    the full (N, T, V) logits, to float rounding; with `sum_sq`, also sum_v pi_v^2 (N, T).

    hidden (N, T, D), weight (V, D) (`lm_head_weight`), tokens (N, T). The N*T positions are flattened and cut
    into chunks of `chunk_tokens` (the last one shorter); each chunk runs under `torch.utils.checkpoint`
    (non-reentrant) when a gradient is wanted, so the forward keeps only its (c,) outputs and the backward
    recomputes the chunk's logits: peak memory ~ a few chunk x V fp32 blocks instead of N x T x V (the veRL/Liger
    "fused linear + log-prob" idea in plain torch). Gradients reach `hidden` and `weight`; entropy is
    differentiable too."""
    n, t, d = hidden.shape
    flat_h, flat_tok = hidden.reshape(n * t, d), tokens.reshape(n * t)  # (N*T, D), (N*T,)
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    blocks = []
    for start in range(0, n * t, chunk_tokens):
        args = (flat_h[start : start + chunk_tokens], weight, flat_tok[start : start + chunk_tokens], temperature)
        if grad:
            blocks.append(torch.utils.checkpoint.checkpoint(_logprob_entropy_chunk, *args, sum_sq, use_reentrant=False))
        else:
            blocks.append(_logprob_entropy_chunk(*args, sum_sq))
    if not blocks:  # no tokens
        empty = hidden.new_zeros((n, t), dtype=torch.float32)
        return (empty,) * (3 if sum_sq else 2)
    return tuple(torch.cat(parts).reshape(n, t) for parts in zip(*blocks))


# ---- the policy's statistics of a batch: one forward, or no-grad over pieces --------------------------------

STATS = ("logprobs", "entropy", "sum_sq")


@dataclass(frozen=True)
class ForwardStats:
    """Per completion token (N, T): log pi(y_t), and when asked for, the entropy of pi and sum_v pi_v^2 (else
    None). With pi(y_t), sum_sq gives the squared norm of the score's logit gradient, |e_y - pi|^2 = 1 - 2 pi(y_t) +
    sum_v pi_v^2 (veRL's W-score of the variance proxy, `metrics.variance_proxy`)."""

    logprobs: torch.Tensor
    entropy: torch.Tensor | None = None
    sum_sq: torch.Tensor | None = None


def forward_stats(
    model,
    batch: Batch,
    temperature: float,
    *,
    want: tuple[str, ...] = ("logprobs",),
    chunk: int | None = None,
    inputs_embeds: torch.Tensor | None = None,
) -> ForwardStats:
    """The policy's statistics `want` (of `STATS`) of the completion tokens of `batch`, from one forward, with
    gradient when grad is enabled: from the full (N, T, V) logits (`completion_logits`), or with `chunk`, from the
    hidden states times the LM head in blocks of that many positions (`chunked_logprobs_entropy`, whose entropy
    comes at no cost and is always returned), never holding (N, T, V) logits. `inputs_embeds` (N, L, D) replace the
    token embeddings (the OAR gradient scores). The trainer's one forward: `--micro-batch-tokens` picks `chunk`."""
    if unknown := set(want) - set(STATS):
        raise ValueError(f"unknown statistics {sorted(unknown)}; choose from {STATS}")
    sum_sq = "sum_sq" in want
    if chunk:
        hidden = completion_hidden(model, batch, inputs_embeds=inputs_embeds)  # (N, T, D)
        stats = chunked_logprobs_entropy(hidden, lm_head_weight(model), batch.tokens, temperature, chunk, sum_sq)
        return ForwardStats(*stats)
    logits = completion_logits(model, batch, temperature, inputs_embeds=inputs_embeds)  # (N, T, V)
    return ForwardStats(
        gather_logprobs(logits, batch.tokens),
        token_entropy(logits) if "entropy" in want else None,
        torch.softmax(logits, dim=-1).pow(2).sum(dim=-1) if sum_sq else None,
    )


def piecewise_stats(
    model,
    batch: Batch,
    temperature: float,
    *,
    want: tuple[str, ...] = ("logprobs",),
    micro_batch_tokens: int | None = None,
    chunk: int | None = None,
    max_rows: int | None = None,
) -> ForwardStats:
    """`forward_stats` of every row without gradient, one forward per piece (`batch.pieces`: token-budget
    micro-batches with `micro_batch_tokens`, else length buckets of at most `max_rows` rows, each trimmed of its
    padding columns): (N, T) each, 0 in the columns a piece trimmed away, padding tokens inside a piece as the
    forward gave them (mask them where they matter)."""
    out = {name: batch.mask.new_zeros(batch.mask.shape) for name in want}  # (N, T) each
    with torch.no_grad():
        for index, piece in pieces(batch, micro_batch_tokens, max_rows):
            stats = forward_stats(model, piece, temperature, want=want, chunk=chunk)
            width = piece.tokens.shape[1]
            for name in want:
                out[name][index, :width] = getattr(stats, name)
    return ForwardStats(**out)


def sequence_logprobs(model, batch: Batch, temperature: float, chunk: int = 256) -> torch.Tensor:
    """Token log-probs (N, T) without gradient (old/reference policy), 0 on padding; rows in `length_buckets`
    of at most `chunk` rows, each trimmed of its padding columns."""
    return piecewise_stats(model, batch, temperature, max_rows=chunk).logprobs * batch.mask


def chunked_sequence_logprobs(
    model, batch: Batch, temperature: float, micro_batch_tokens: int = 16384, chunk_tokens: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """`sequence_logprobs` with bounded memory, and the entropies: token log-probs and entropies (N, T) without
    gradient, 0 on padding, the rows in `token_budget_split` micro-batches and the vocabulary in `chunk_tokens`
    chunks, so no (rows x T x V) logits exist (`sequence_logprobs` forwards up to 256 rows' full logits)."""
    stats = piecewise_stats(
        model,
        batch,
        temperature,
        want=("logprobs", "entropy"),
        micro_batch_tokens=micro_batch_tokens,
        chunk=chunk_tokens,
    )
    return stats.logprobs * batch.mask, stats.entropy * batch.mask
