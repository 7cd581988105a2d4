"""Rollout correction: per-token weights that correct the policy gradient for the mismatch between the engine
that sampled the rollouts (vLLM, the behaviour policy pi_infer) and the trainer's own forward of the same
weights (pi_train = the old policy's log-probs before the update), as veRL, TRL and IcePop do (docs/gpu.md).

With rho_t = pi_train(y_t) / pi_infer(y_t) (token) and rho_seq = prod_t rho_t (sequence), the modes are

    none     w = 1                                   (no correction; the mismatch metrics are still computed)
    tis      w_t = clip(rho_t, low, high)            token truncated IS (TIS). TRL `token_truncate`;
                                                     veRL `rollout_is="token"` (upper bound only)
    seq-tis  w = clip(rho_seq, low, high)            sequence truncated IS. TRL `sequence_truncate`; veRL
                                                     `rollout_is="sequence"`
    mis      w_t = rho_t 1[low <= rho_t <= high]     token masked IS (MIS). TRL `token_mask`
    seq-mis  w = rho_seq 1[low <= rho_seq <= high]   sequence masked IS. TRL `sequence_mask` (TRL's default)
    rs       keep_t = 1[low <= rho_t <= high]        token rejection. veRL `rollout_rs="token_k1"`
    seq-rs   keep = 1[low <= rho_seq <= high]        sequence rejection. veRL `rollout_rs="seq_sum_k1"`
    geo-rs   keep = 1[low <= rho_geo <= high]        rho_geo = exp(mean_t log rho_t). veRL `rollout_rs="seq_mean_k1"`
    icepop   w_t = rho_t 1[alpha <= rho_t <= beta]   IcePop (Ring-1T, arXiv:2510.18855 §2.1, M(k) of its
                                                     objective): `mis` with alpha = 0.5, beta = 5.0; veRL
                                                     `rollout_is="token"`, `rollout_is_threshold="0.5_5.0"`

Rejection (rs, seq-rs, geo-rs) removes tokens from the loss, it does not reweight them: `correction(...).keep` is 0
on a rejected token, and the caller aggregates with `mask * keep`, so a rejected token leaves the loss
normaliser (token-mean), its row's length (seq-mean-token-mean) and the KL term, as veRL 0.9.1 does
(`compute_rollout_correction_and_add_to_batch` sets `batch["response_mask"]` to the rejection's
`modified_response_mask`; its rows still count in the sequence count, `global_batch_size` = the mini-batch's rows).
`correction_weights` (the older call) folds keep into the weights, which only zeroes the rejected tokens' advantages.

Bounds. Ours act on rho itself in every mode, low <= rho <= high. veRL 0.9.1's k1 rejection options act on
-log rho: `rollout_rs_threshold="L_U"` keeps log L <= -log rho <= log U, i.e. 1/U <= rho <= 1/L. The mapping is
ours (low, high) = veRL "{1/high}_{1/low}"; a single veRL threshold U keeps 1/U <= rho <= U, our default
(low = 1/high) with high = U. veRL 0.9.1 clamps log rho_t to +-20 per token before the sum / mean; so do we here.

References: TRL 1.16 `trl/trainer/grpo_trainer.py` (`_generate_and_score_completions`, the
`vllm_importance_sampling_*` block) and `grpo_config.py`; veRL 0.9.1 (pip `verl==0.9.1`)
`verl/trainer/ppo/rollout_corr_helper.py` (`compute_rollout_correction_weights`, `compute_rollout_rejection_mask`,
`compute_rollout_correction_and_add_to_batch`, `compute_offpolicy_metrics`); "When Speed Kills Stability" (Liu,
Li et al. 2025, richardli.xyz/rl-collapse); Yao et al. 2025, "Your efficient RL framework secretly brings you
off-policy RL training" (TIS). The weights are detached: they change the measure, not the objective (veRL's docs
§3.2.2).

Deviations [our choice]: log rho is clamped to +-20 before exp (veRL's SAFETY_BOUND; TRL does not clamp), which
changes nothing but weights below e^-20 of an unbounded-below `mis`; padding tokens get weight 0 (TRL gives them
exp(0) = 1, which its loss then masks); NaN engine log-probs count as no mismatch (TRL's `nan_to_num`); geo-rs
divides by max(|o_i|, 1) where veRL divides by |o_i| + 1e-8 (only a rho within ~1e-8 of a bound can differ).
Defaults of the bounds: `tis`/`seq-tis` (none, 2.0) as veRL's `rollout_is_threshold`; `mis`/`seq-mis` (none,
3.0) as TRL's `vllm_importance_sampling_clip_min/max`; `rs`/`seq-rs`/`geo-rs` (1/high, 2.0): veRL 0.9.1 has no
default `rollout_rs_threshold` (it must be given); its seq_sum_k1 preset "0.5_2.0" is ours, its seq_mean_k1
presets' "0.999_1.001" is geo-rs with low=1/1.001, high=1/0.999 (ours stays 2.0, the earlier value); `icepop` (0.5,
5.0), the IcePop report's alpha/beta as we read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from benchctl.errors import BenchctlError

SAFETY_BOUND = 20.0  # |log rho| cap before exp (veRL's SAFETY_BOUND)

# mode -> (level, kind, default low, default high); low "inverse" = 1 / high
MODES: dict[str, tuple[str, str, float | str | None, float | None]] = {
    "none": ("token", "none", None, None),
    "tis": ("token", "truncate", None, 2.0),
    "seq-tis": ("sequence", "truncate", None, 2.0),
    "mis": ("token", "mask", None, 3.0),
    "seq-mis": ("sequence", "mask", None, 3.0),
    "rs": ("token", "reject", "inverse", 2.0),
    "seq-rs": ("sequence", "reject", "inverse", 2.0),
    "geo-rs": ("geometric", "reject", "inverse", 2.0),
    "icepop": ("token", "mask", 0.5, 5.0),
}


@dataclass(frozen=True)
class RolloutCorrection:
    """`--rollout-correction MODE [--rollout-correction-low X] [--rollout-correction-high Y]`."""

    mode: str = field(
        default="none",
        metadata={"help": "none | tis | seq-tis | mis | seq-mis | rs | seq-rs | geo-rs | icepop (module docstring)"},
    )
    low: float | None = field(default=None, metadata={"help": "lower bound on the ratio; None: the mode's default"})
    high: float | None = field(default=None, metadata={"help": "upper bound on the ratio; None: the mode's default"})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BenchctlError(f"rollout correction {self.mode!r} is not valid; choose one of: {', '.join(MODES)}")
        low, high = self.bounds()
        if low is not None and low < 0 or high is not None and high <= 0:
            raise BenchctlError(f"rollout correction bounds must be low >= 0 < high, got low={low}, high={high}")
        if low is not None and high is not None and low > high:
            raise BenchctlError(f"rollout correction low={low} is above high={high}")

    def bounds(self) -> tuple[float | None, float | None]:
        """(low, high) after the mode's defaults; None = unbounded on that side."""
        _, _, default_low, default_high = MODES[self.mode]
        high = self.high if self.high is not None else default_high
        low = self.low if self.low is not None else default_low
        if low == "inverse":
            low = 1.0 / high
        return low, high


def _unit_log_ratio(log_rho: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """log rho per token (N, T), or the row's sum / mean broadcast as (N, 1)."""
    if level == "token":
        return log_rho
    total = (log_rho * mask).sum(dim=1, keepdim=True)  # (N, 1)
    if level == "sequence":
        return total
    return total / mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # geometric: the mean


@dataclass(frozen=True)
class Correction:
    """What a rollout correction does to the policy loss; every tensor (N, T) and detached."""

    weights: torch.Tensor  # multiplies the per-token loss (the trainer: the token advantages); 0 on padding
    keep: torch.Tensor  # 0.0 on a token a rejection mode removed, 1.0 elsewhere: aggregate with `mask * keep`
    metrics: dict[str, torch.Tensor]  # 0-d tensors, `rollout_corr/*`; the caller converts once per step


def correction(
    train_logp: torch.Tensor, infer_logp: torch.Tensor, mask: torch.Tensor, cfg: RolloutCorrection
) -> Correction:
    """The correction of rows `mask` (N, T): IS weights (tis, seq-tis, mis, seq-mis, icepop; 1 on real tokens
    otherwise) and the keep mask of the rejection modes (rs, seq-rs, geo-rs; all 1 otherwise).

    train_logp (N, T): the trainer's log-probs of the sampled tokens before the update (pi_old); infer_logp
    (N, T): the engine's (processed, i.e. of the sampling distribution at the same temperature); mask (N, T).
    Rows outside `mask` (padding, rows the caller does not examine) keep 1: a row is only rejected on evidence."""
    level, kind, _, _ = MODES[cfg.mode]
    low, high = cfg.bounds()
    mask = mask.to(train_logp.dtype)
    log_rho = torch.nan_to_num((train_logp - infer_logp).detach(), nan=0.0) * mask  # (N, T)
    if kind == "reject":  # in log space, each token's log rho clamped first (veRL 0.9.1's k1 statistics)
        unit = _unit_log_ratio(log_rho.clamp(-SAFETY_BOUND, SAFETY_BOUND), mask, level)  # (N, T) or (N, 1)
        lo = -math.inf if not low else math.log(low)
        outside = (unit < lo) | (unit > math.log(high))
        keep = 1.0 - outside.to(mask.dtype).expand_as(mask) * mask  # (N, T)
        metrics = _metrics(log_rho, mask, keep * mask, outside.expand_as(mask), kind, level)
        return Correction(mask.clone(), keep, metrics)
    unit = _unit_log_ratio(log_rho, mask, level).clamp(-SAFETY_BOUND, SAFETY_BOUND)  # (N, T) or (N, 1)
    rho = torch.exp(unit)
    outside = (rho < (-math.inf if low is None else low)) | (rho > (math.inf if high is None else high))
    if kind == "none":
        w = torch.ones_like(rho)
    elif kind == "truncate":
        w = rho.clamp(min=low, max=high)
    else:  # mask
        w = rho.masked_fill(outside, 0.0)
    weights = w.expand_as(mask) * mask  # (N, T)
    metrics = _metrics(log_rho, mask, weights, outside.expand_as(mask), kind, level)
    return Correction(weights, torch.ones_like(mask), metrics)


def correction_weights(
    train_logp: torch.Tensor, infer_logp: torch.Tensor, mask: torch.Tensor, cfg: RolloutCorrection
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`correction(...)` as one weight tensor (N, T) = weights x keep, 0 on padding, and its metrics: the older
    call. A rejection then only zeroes the rejected tokens' advantages: they stay in the loss normaliser, the
    sequence lengths and the KL term, unlike veRL; to train like veRL 0.9.1 aggregate with `mask * keep`."""
    out = correction(train_logp, infer_logp, mask, cfg)
    return out.weights * out.keep, out.metrics


def _metrics(log_rho, mask, weights, outside, kind: str, level: str) -> dict[str, torch.Tensor]:
    """Mismatch KL (k1, k3), the fraction of tokens truncated / masked, the normalised ESS of the weights."""
    tokens = mask.sum().clamp(min=1.0)
    rho = torch.exp(log_rho.clamp(-SAFETY_BOUND, SAFETY_BOUND))  # (N, T)
    hit = (outside.to(mask.dtype) * mask).sum() / tokens
    zero = torch.zeros((), dtype=mask.dtype, device=mask.device)
    if level == "token":  # ESS over real tokens
        units = weights[mask > 0]
    else:  # over rows with a real token: one weight per sequence
        units = weights.sum(dim=1)[mask.sum(dim=1) > 0] / mask.sum(dim=1)[mask.sum(dim=1) > 0]
    ess = units.sum() ** 2 / (units.numel() * (units**2).sum()).clamp(min=1e-30)
    return {
        # KL(pi_infer || pi_train) from the engine's samples: k1 = E[-log rho], k3 = E[rho - 1 - log rho]
        "rollout_corr/kl_k1": (-log_rho * mask).sum() / tokens,
        "rollout_corr/kl_k3": ((rho - 1.0 - log_rho) * mask).sum() / tokens,
        "rollout_corr/ratio_mean": (rho * mask).sum() / tokens,
        "rollout_corr/ratio_max": rho.masked_fill(mask == 0, 0.0).max() if mask.any() else zero,
        "rollout_corr/truncated_frac": hit if kind == "truncate" else zero,
        "rollout_corr/masked_frac": hit if kind in ("mask", "reject") else zero,
        "rollout_corr/weight_mean": weights.sum() / tokens,
        "rollout_corr/ess": ess if units.numel() else zero,
    }


def mismatch_metrics(train_logp: torch.Tensor, infer_logp: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """The engine/trainer mismatch of some rows whatever the mode (the trainer logs it on `measure`'s rows):
    `rollout_corr/kl_k1`, `rollout_corr/kl_k3` (as `correction_weights`) and `rollout_corr/ratio_ess`, the
    normalised effective sample size of the token ratios rho_t themselves (1 when the engine and trainer agree;
    what plain token IS weights would leave), as floats."""
    _, m = correction_weights(train_logp, infer_logp, mask, RolloutCorrection())
    mask = mask.to(train_logp.dtype)
    log_rho = torch.nan_to_num((train_logp - infer_logp).detach(), nan=0.0).clamp(-SAFETY_BOUND, SAFETY_BOUND)
    rho = torch.exp(log_rho)[mask > 0]  # (tokens,)
    ess = (
        rho.sum() ** 2 / (rho.numel() * (rho**2).sum()).clamp(min=1e-30) if rho.numel() else torch.tensor(float("nan"))
    )
    out = {key: float(m[key]) for key in ("rollout_corr/kl_k1", "rollout_corr/kl_k3")}
    out["rollout_corr/ratio_ess"] = float(ess)
    return out
