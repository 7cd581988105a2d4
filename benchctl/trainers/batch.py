"""Rollouts as tensors: `Batch` (prompt left-padded, completion right-padded, so every completion starts at
column `prompt_width`), packing, length buckets and token-budget micro-batches: the pieces a batch is forwarded in
(`pieces`). Used by the forward paths (`benchctl.trainers.policy`), the update and the OAR scorers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Batch:
    """Packed rows. input_ids/attention_mask/position_ids (N, Lp + T); tokens/mask (N, T) completion part."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    tokens: torch.Tensor
    mask: torch.Tensor
    prompt_width: int
    prompt_index: torch.Tensor | None = None  # (N,) rows with the same prompt share a value (a group's G rows)

    def rows(self, index: torch.Tensor) -> Batch:
        """The sub-batch of rows `index` (1-D long tensor)."""
        return Batch(
            self.input_ids[index],
            self.attention_mask[index],
            self.position_ids[index],
            self.tokens[index],
            self.mask[index],
            self.prompt_width,
            None if self.prompt_index is None else self.prompt_index[index],
        )

    def trim(self) -> Batch:
        """The same rows without the columns that are padding in every row: the prompt's leading ones and the
        completion's trailing ones (completion width T' = the longest completion here, at least 1). Completions
        still start at one column and positions are unchanged, so each row's logits are those of the full batch;
        (N, T) tensors that go with this batch are sliced `[:, :T']`."""
        attn = self.attention_mask
        start = int((attn[:, : self.prompt_width].sum(dim=0) == 0).sum())  # leading all-padding columns
        width = max(1, int(self.mask.sum(dim=1).max())) if self.mask.numel() else 1
        end = self.prompt_width + width
        return Batch(
            self.input_ids[:, start:end],
            attn[:, start:end],
            self.position_ids[:, start:end],
            self.tokens[:, :width],
            self.mask[:, :width],
            self.prompt_width - start,
            self.prompt_index,
        )


# Padding tokens worth one more forward/backward call [our choice]: below it the fixed cost of a call (Python,
# kernel dispatch, small GEMMs) outweighs the padding a split saves; measured on the tiny and 25M models on CPU.
BUCKET_OVERHEAD_TOKENS = 256


def length_buckets(batch: Batch, overhead: int = BUCKET_OVERHEAD_TOKENS) -> list[torch.Tensor]:
    """Rows of `batch` split into buckets (1-D index tensors, every row in exactly one) that minimise the
    tokens the forward/backward computes: sum over buckets of distinct prompts x widest prompt (each prompt is
    forwarded once, `completion_logits`) + rows x longest completion + `overhead` per bucket. Rows are sorted by
    completion length and cut into contiguous runs by dynamic programming (O(N^2) on N rows). The loss is a sum
    over rows (docs/contract.md §6 weights are computed over the whole mini-batch), so summing the buckets' losses and
    gradients gives the full batch's up to float rounding."""
    prompt = batch.attention_mask[:, : batch.prompt_width].sum(dim=1).cpu().numpy()  # (N,) real prompt tokens
    completion = batch.mask.sum(dim=1).clamp(min=1).cpu().numpy()  # (N,)
    n = len(prompt)
    group = np.arange(n) if batch.prompt_index is None else batch.prompt_index.cpu().numpy()  # (N,)
    order = np.lexsort((group, prompt, completion))  # ascending completion length, then prompt, then group
    p, c, g = prompt[order], completion[order], group[order]
    best, cut = np.zeros(n + 1), np.zeros(n + 1, dtype=int)  # best[j]: min cost of rows [0, j); cut: last start
    last, newest = np.zeros(n, dtype=int), {}  # last[k] = 1 when row k is its prompt's last row among [0, j)
    for j in range(1, n + 1):
        if g[j - 1] in newest:
            last[newest[g[j - 1]]] = 0
        newest[g[j - 1]], last[j - 1] = j - 1, 1
        distinct = np.cumsum(last[:j][::-1])[::-1]  # distinct[i] = distinct prompts among rows [i, j)
        widest = np.maximum.accumulate(p[:j][::-1])[::-1]  # widest[i] = max prompt over rows [i, j)
        cost = best[:j] + distinct * widest + (j - np.arange(j)) * c[j - 1] + overhead  # last bucket from i
        cut[j] = int(np.argmin(cost))
        best[j] = cost[cut[j]]
    bounds, j = [], n
    while j > 0:
        bounds.append((cut[j], j))
        j = cut[j]
    device = batch.tokens.device
    return [torch.as_tensor(order[i:j].copy(), device=device) for i, j in reversed(bounds)]


def pack(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    pad_id: int,
    device: torch.device | str = "cpu",
) -> Batch:
    """Prompt i (left-padded) + completion i (right-padded) per row."""
    n = len(prompts)
    lp = max(len(p) for p in prompts)
    t = max(1, max(len(c) for c in completions))
    ids = torch.full((n, lp + t), pad_id, dtype=torch.long)  # (N, Lp + T)
    attn = torch.zeros((n, lp + t), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        ids[i, lp - len(p) : lp] = torch.tensor(p, dtype=torch.long)
        ids[i, lp : lp + len(c)] = torch.tensor(c, dtype=torch.long)
        attn[i, lp - len(p) : lp + len(c)] = 1
    position = (attn.cumsum(dim=1) - 1).clamp(min=0)  # (N, Lp + T): real-token positions
    tokens = ids[:, lp:]  # (N, T)
    mask = attn[:, lp:].to(torch.float32)  # (N, T)
    seen: dict[tuple, int] = {}
    index = torch.tensor([seen.setdefault(tuple(p), len(seen)) for p in prompts], dtype=torch.long)  # (N,)
    to = lambda x: x.to(device)  # noqa: E731
    return Batch(to(ids), to(attn), to(position), to(tokens), to(mask), lp, to(index))


def token_budget_split(batch: Batch, micro_batch_tokens: int, overhead: int = BUCKET_OVERHEAD_TOKENS):
    """Micro-batches (1-D row-index tensors, every row in exactly one): `length_buckets(batch, overhead)`, each
    bucket cut into contiguous runs of its (length-sorted) rows whose rows x padded width (widest real prompt +
    longest completion among them, the width `Batch.trim` leaves) stays <= `micro_batch_tokens`. A row wider
    than the budget alone gets a micro-batch of its own (a row is never split).

    The policy loss is a sum over rows with weights computed over the whole mini-batch
    (`benchctl.losses.aggregation`), so the micro-batches' losses and gradients add up to the mini-batch's; this only
    bounds the activations of one forward/backward, whatever the number of rows per step."""
    if micro_batch_tokens < 1:
        raise ValueError(f"micro_batch_tokens must be >= 1, got {micro_batch_tokens}")
    prompt = batch.attention_mask[:, : batch.prompt_width].sum(dim=1).tolist()  # (N,) real prompt tokens
    completion = batch.mask.sum(dim=1).clamp(min=1).long().tolist()  # (N,)
    out = []
    for bucket in length_buckets(batch, overhead):
        start, widest_p, widest_c = 0, 0, 0
        rows = bucket.tolist()
        for k, row in enumerate(rows):
            p, c = max(widest_p, prompt[row]), max(widest_c, completion[row])
            if k > start and (k - start + 1) * (p + c) > micro_batch_tokens:
                out.append(bucket[start:k])
                start, p, c = k, prompt[row], completion[row]
            widest_p, widest_c = p, c
        out.append(bucket[start:])
    return out


def pieces(
    batch: Batch, micro_batch_tokens: int | None = None, max_rows: int | None = None
) -> Iterator[tuple[torch.Tensor, Batch]]:
    """The forwards `batch` is cut into, in order: (row index (n,), those rows trimmed of their padding columns)
    per piece; token-budget micro-batches (`token_budget_split`) with `micro_batch_tokens`, else length buckets
    (`length_buckets`), each cut into runs of at most `max_rows` rows when given; no piece for an empty batch."""
    if micro_batch_tokens:
        index = token_budget_split(batch, micro_batch_tokens)
    else:
        buckets = length_buckets(batch)
        index = [run for bucket in buckets for run in torch.split(bucket, max_rows)] if max_rows else buckets
    for rows in index:
        yield rows, batch.rows(rows).trim()


def sampled_logprobs(samples, batch: Batch) -> torch.Tensor:
    """The engine's log-probability of each sampled token (N, T) of `samples` (engine.Sample, packed as `batch`),
    0 on padding."""
    out = torch.zeros(batch.tokens.shape, dtype=torch.float32)
    for i, x in enumerate(samples):
        if x.logprobs:
            out[i, : len(x.logprobs)] = torch.tensor(x.logprobs, dtype=torch.float32)
    return out.to(batch.tokens.device)
