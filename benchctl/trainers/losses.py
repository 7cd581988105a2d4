"""The policy loss, as pure torch functions: loss aggregations (docs/contract.md §6), the clipped surrogate with
decoupled low/high clip (PPO, arXiv:1707.06347 Eq. 7; DAPO clip-higher, arXiv:2503.14476 Eq. 10), GSPO's sequence
ratio (arXiv:2507.18071 Eq. 7) and the k3 KL estimator (Schulman 2020; DeepSeekMath arXiv:2402.03300 Eq. 4).

Shapes: N rollouts (rows) x T completion tokens; `mask` (N, T) is 1.0 on real completion tokens.
An aggregation is written as per-token weights W (N, T) with loss = sum(W * l): the weights are computed once
over every row of a mini-batch, so rows whose per-token loss is exactly 0 (zero advantage, no KL) can be left
out of the forward pass without changing the loss or its gradient (`select_rows`).
"""

from __future__ import annotations

import torch


def aggregation_weights(mask: torch.Tensor, mode: str, nondegenerate: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """Per-token weights W (N, T) such that sum(W * l) is the aggregated loss (docs/contract.md §6).

    seq-mean-token-mean (GRPO, arXiv:2402.03300 Eq. 3): (1/N) sum_i (1/|o_i|) sum_t l_it.
    token-mean (DAPO, arXiv:2503.14476 Eq. 8): sum_it l_it / sum_i |o_i|.
    seq-mean-token-sum-norm (Dr.GRPO, arXiv:2503.20783 §3.2): sum_it l_it / (N x max_tokens) [our choice: the
      generation budget `max_tokens` is the "max response length" constant, as in the authors' code].
    token-mean-nondegenerate (DGPO, arXiv:2601.20614): token mean over rows of non-degenerate groups only.
    """
    n = mask.shape[0]
    if mode == "seq-mean-token-mean":
        lengths = mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # (N, 1)
        return mask / (lengths * n)
    if mode == "token-mean":
        return mask / mask.sum().clamp(min=1.0)
    if mode == "seq-mean-token-sum-norm":
        return mask / float(n * max_tokens)
    if mode == "token-mean-nondegenerate":
        kept = mask * nondegenerate.to(mask.dtype)[:, None]  # (N, T)
        return kept / kept.sum().clamp(min=1.0)
    raise ValueError(f"unknown loss aggregation {mode!r}")


def log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """log pi/pi_old per token (N, T); `sequence` (GSPO Eq. 7): the length-normalised sequence log ratio
    (1/|o_i|) sum_t log(pi/pi_old), broadcast over the row's tokens (its gradient flows to every token)."""
    diff = (logp - old_logp) * mask  # (N, T)
    if level == "token":
        return diff
    seq = diff.sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # (N, 1)
    return seq.expand_as(diff)


def clipped_surrogate(
    log_r: torch.Tensor, adv: torch.Tensor, clip_low: float, clip_high: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token PPO loss max(-A r, -A clip(r, 1 - clip_low, 1 + clip_high)) (N, T), and the masks of tokens
    where the low / high clip is binding (A < 0 and r < 1 - clip_low; A > 0 and r > 1 + clip_high)."""
    ratio = torch.exp(log_r)  # (N, T)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    low = (adv < 0) & (ratio < 1.0 - clip_low)
    high = (adv > 0) & (ratio > 1.0 + clip_high)
    return torch.maximum(unclipped, clipped), low, high


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token: exp(ref - logp) - (ref - logp) - 1 >= 0 (N, T)."""
    delta = ref_logp - logp
    return torch.exp(delta) - delta - 1.0


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    ratio: str = "token",
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict]:
    """Aggregated loss sum(W * (l_pg + kl_coef * kl)) and its metrics (tensors; the caller converts once).

    logp (N, T) carries the gradient; old_logp, adv, weights, mask (N, T) and ref_logp are constants.
    """
    pg, low, high = clipped_surrogate(log_ratio(logp, old_logp, mask, ratio), adv, clip_low, clip_high)
    per_token = pg
    tokens = mask.sum().clamp(min=1.0)
    metrics = {
        "loss/pg": (weights * pg).sum().detach(),
        "policy/clip_low": (low * mask).sum() / tokens,
        "policy/clip_high": (high * mask).sum() / tokens,
    }
    if kl_coef > 0.0 and ref_logp is not None:
        kl = k3_kl(logp, ref_logp)
        per_token = pg + kl_coef * kl
        metrics["policy/kl"] = ((kl * mask).sum() / tokens).detach()
    loss = (weights * per_token).sum()
    metrics["loss/total"] = loss.detach()
    return loss, metrics


def combine_metrics(parts: list[tuple[dict, float]]) -> dict[str, float]:
    """The metrics of one `policy_loss` call over all rows from calls over buckets of them: `(metrics, tokens)`
    per bucket. `loss/*` are sums over rows (added); the rest are token means (weighted by tokens)."""
    tokens = sum(n for _, n in parts)
    out: dict[str, float] = {}
    for metrics, n in parts:
        for key, value in metrics.items():
            share = 1.0 if key.startswith("loss/") else n / max(tokens, 1.0)
            out[key] = out.get(key, 0.0) + float(value) * share
    return out


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) per position (N, T), without keeping a (N, T, V) probability tensor alive."""
    logz = torch.logsumexp(logits, dim=-1, keepdim=True)  # (N, T, 1)
    return logz.squeeze(-1) - (torch.softmax(logits, dim=-1) * logits).sum(dim=-1)


def active_rows(token_adv: torch.Tensor, mask: torch.Tensor, kl_coef: float) -> torch.Tensor:
    """Rows whose loss can be non-zero: some real token with a non-zero advantage, or any row when KL is on.

    A row with A = 0 on every token has l_pg = max(-0 r, -0 clip(r)) = 0 and zero gradient, so leaving it out
    of the forward pass changes neither the loss nor the gradient (the weights W are computed over all rows).
    """
    if kl_coef > 0.0:
        return torch.ones(token_adv.shape[0], dtype=torch.bool, device=token_adv.device)
    return ((token_adv != 0) & (mask > 0)).any(dim=1)  # (N,)
