"""benchctl's estimators inside TRL: `BenchctlGRPOTrainer`, TRL's `GRPOTrainer` with `estimator=`.

    from benchctl.integrations.trl import BenchctlGRPOTrainer
    trainer = BenchctlGRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...), train_dataset=...,
                                  estimator="ha_dw", estimator_params={"base": "dr_grpo", "lambda_scale": 1.5})

TRL 1.x has no advantage hook (huggingface/trl issues 4525, 7291): it computes advantages inline in
`_generate_and_score_completions`.  The narrowest override is used: `_calculate_rewards` keeps the rewards it
gathered from every process, and after TRL's own step the advantages it returns (and the ones it logs) are
replaced by `estimator.advantages(rewards (P, G))`, then sliced to this process as TRL slices its own.

- Rewards: the weighted sum of the reward functions (`reward_weights`), as TRL's default
  `multi_objective_aggregation="sum_then_normalize"`; "normalize_then_sum" is refused.  TRL's `scale_rewards`
  is not used (the estimator decides); `loss_type` stays TRL's own axis (benchctl's `est.loss_agg` is the
  estimator's default aggregation: seq-mean-token-mean = TRL "grpo", token-mean = "dapo",
  seq-mean-token-sum-norm = "dr_grpo").  A completion that every reward function scored None is an error.
- Groups: TRL lays out each prompt's `num_generations` completions contiguously, so rewards.view(-1, G).
- State: one estimator per trainer; every process computes the same advantages from the same gathered
  rewards, so its state stays identical everywhere.  Evaluation uses a copy, so it does not advance the
  state.  Saved as `checkpoint-N/benchctl_estimator.json` and restored by `train(resume_from_checkpoint=...)`.
- Inputs (contract.md §1): prompt_ids = a hash of each prompt (DBB's per-prompt history), seq_logprob = the mean
  per-token log-prob of each completion when TRL computed one (vLLM's sampling log-probs, else the old policy's;
  CoDaPO's confidence), gathered from every process.
- Token entropies (RL-ZVP, arXiv:2509.21880; `token_scores="entropy"`): the policy's entropy H_t at each sampled
  completion token (TRL's fused LM head at the rollout temperature, no gradient), before the update, as benchctl's
  trainer gives them (benchctl.trainers.scores.entropy_scores).  When TRL runs its old-policy forward in
  `_generate_and_score_completions` (vLLM with importance-sampling correction, TRL's default there, or generation
  and optimizer steps misaligned) its entropies are kept from that forward: no extra cost.  Otherwise one extra
  no-grad forward of the completions: the cost of TRL's old-log-prob forward (0.38x the update's forward +
  backward, benchmarks/trl_zvp_entropy.py).  The advantages are then (N, T) token advantages,
  est.token_advantages(A, H, completion mask x tool mask, degenerate) on the rows with A != 0 (0 elsewhere, as
  benchctl's trainer), which TRL's loss takes as they are; the logged `advantages` stay the sequence ones.  Shaped
  share: `benchctl/zvp_shaped_frac` (this process's rows).
- Logs: the estimator's diagnostics as `benchctl/<name>` in TRL's metrics (averaged per logging step).
- Not available: OAR (`oar_g`, `oar_p`), which needs per-token importance scores TRL does not compute.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from typing import Any

import torch
from trl import GRPOTrainer
from trl.models.utils import disable_gradient_checkpointing

from benchctl.errors import BenchctlError
from benchctl.estimators import Estimator, get_estimator
from benchctl.estimators._common import group_stats

STATE_FILE = "benchctl_estimator.json"
METRIC_PREFIX = "benchctl/"
ENTROPY = "entropy"  # the one kind of per-token score TRL computes (its fused LM head's `entropy` output)
FORWARD_KEYS = (  # what TRL's _compute_loss passes its policy forward besides the ids and masks
    "pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes", "num_tiles",
    "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids",
)  # fmt: skip


def trl_estimator(estimator: str | Estimator, params: dict | None) -> Estimator:
    """A name (+ hyperparameters, `get_estimator` keywords) or a ready `Estimator`; OAR is refused."""
    if isinstance(estimator, Estimator):
        if params:
            raise BenchctlError("estimator_params apply to an estimator name, not to a ready Estimator")
        est = estimator
    else:
        est = get_estimator(estimator, **(params or {}))
    if est.token_scores not in (None, ENTROPY):
        raise BenchctlError(
            f"{est.name} needs per-token {est.token_scores} scores that TRL's GRPOTrainer does "
            "not compute; use benchctl's trainer"
        )
    return est


class BenchctlGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer whose advantages are benchctl's `estimator` (a name or an `Estimator`)."""

    def __init__(
        self, *args: Any, estimator: str | Estimator = "grpo", estimator_params: dict | None = None, **kwargs: Any
    ) -> None:
        self.estimator = trl_estimator(estimator, estimator_params)
        super().__init__(*args, **kwargs)
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise BenchctlError(
                "BenchctlGRPOTrainer needs multi_objective_aggregation='sum_then_normalize'; "
                f"got {self.multi_objective_aggregation!r}"
            )
        self._benchctl_rewards: torch.Tensor | None = None
        self._benchctl_entropies: torch.Tensor | None = None  # (N_local, T) kept from TRL's old-policy forward
        self._benchctl_capture = False

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._benchctl_rewards = rewards_per_func  # (N_all, F), gathered from every process
        return rewards_per_func

    def _get_per_token_logps_and_entropies(self, model, *args, compute_entropy=False, **kwargs):
        """TRL's forward; while `_benchctl_capture` is on, the first no-grad policy forward of a generation batch
        (TRL's old-policy log-probs, which it runs before the reference's) also keeps its entropies."""
        keep = self._benchctl_capture and model is self.model and not torch.is_grad_enabled()
        self._benchctl_capture &= not keep  # only the first one
        logps, entropies, aux = super()._get_per_token_logps_and_entropies(
            model, *args, compute_entropy=compute_entropy or keep, **kwargs
        )
        if keep:
            self._benchctl_entropies = entropies
        return logps, entropies if compute_entropy else None, aux

    def _generate_and_score_completions(self, inputs):
        wants_entropy = self.estimator.token_scores == ENTROPY
        self._benchctl_entropies, self._benchctl_capture = None, wants_entropy
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._benchctl_capture = False
        mode = "train" if self.model.training else "eval"
        group = self.num_generations if mode == "train" else self.num_generations_eval
        est = self.estimator if mode == "train" else copy.deepcopy(self.estimator)
        rewards = self._sequence_rewards()  # (N_all,)
        inputs = self._estimator_inputs(inputs, output, group)  # prompt ids (DBB), mean log-probs (CoDaPO)
        adv = est.advantages(rewards.view(-1, group), **inputs).reshape(-1)  # (P, G) -> (N_all,)
        local = output["advantages"].shape[0]
        start = self.accelerator.process_index * local
        mine = adv[start : start + local]  # (N_local,)
        if wants_entropy:
            degenerate = group_stats(rewards.view(-1, group).double().cpu().numpy()).degenerate  # (P,)
            flags = torch.as_tensor(degenerate).repeat_interleave(group)[start : start + local]  # (N_local,)
            mine = self._token_advantages(est, mine, output, flags, mode)  # (N_local, T)
        output["advantages"] = mine.to(output["advantages"].dtype)
        self._replace_logged_advantages(adv)
        for key, value in est.diagnostics().items():
            self._metrics[mode][METRIC_PREFIX + key].append(value)
        for name, acted in est.mechanisms().items():  # as benchctl's trainer logs them
            self._metrics[mode][f"mechanism/{name}/acted"].append(acted)
        return output

    def _token_advantages(self, est: Estimator, adv: torch.Tensor, output: dict, degenerate, mode: str):
        """A_t (N_local, T) of this process's rows: est.token_advantages of the rows with A != 0 (as benchctl's
        trainer: a row with A = 0 has A_t = 0), from the policy's entropy at each completion token
        (`completion_entropies`) over the completion mask (times TRL's tool mask: the policy did not sample tool
        output)."""
        mask = output["completion_mask"] * output["tool_mask"] if "tool_mask" in output else output["completion_mask"]
        entropies = self.completion_entropies(output, mode).detach()  # (N_local, T)
        out = adv.new_zeros(mask.shape)  # (N_local, T)
        rows = (adv != 0).nonzero().view(-1)  # (n,)
        if rows.numel():
            pick = rows.cpu().numpy()
            out[rows] = est.token_advantages(adv[rows], entropies[rows], mask[rows].bool(), degenerate.numpy()[pick])
        return out

    def completion_entropies(self, output: dict, mode: str) -> torch.Tensor:
        """The policy's entropy (N_local, T) at each completion token of `output`, at TRL's temperature, no gradient:
        the ones TRL's old-policy forward computed in this generation batch when it ran one, else one forward as
        TRL's `_compute_loss` runs it (same inputs, same fused head), without gradient."""
        if self._benchctl_entropies is not None and "old_per_token_logps" in output:
            return self._benchctl_entropies
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        size = self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size
        extra = {key: output.get(key) for key in FORWARD_KEYS}
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            _, entropies, _ = super()._get_per_token_logps_and_entropies(
                self.model, ids, mask, output["completion_ids"].size(1), batch_size=size, compute_entropy=True, **extra
            )
        return entropies

    def _estimator_inputs(self, inputs, output, group: int) -> dict:
        """prompt_ids (P,) (a hash of each prompt) and, when TRL computed per-token log-probs, seq_logprob (P, G):
        every process's rows in the order `_calculate_rewards` gathered the rewards."""
        keys = [int(hashlib.sha1(str(x["prompt"]).encode()).hexdigest()[:15], 16) for x in inputs]  # < 2^60
        gathered = self.accelerator.gather(torch.tensor(keys, device=self.accelerator.device))  # (N_all,)
        ids = [str(k) for k in gathered.view(-1, group)[:, 0].tolist()]  # (P,)
        logps = output.get("sampling_per_token_logps", output.get("old_per_token_logps"))  # (N_local, T) or None
        if logps is None:
            return {"prompt_ids": ids}  # CoDaPO then uses confidence 1 (estimators/codapo.py)
        mask = output["completion_mask"].to(logps.dtype)  # (N_local, T)
        mean = (logps * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # (N_local,)
        return {"prompt_ids": ids, "seq_logprob": self.accelerator.gather(mean).view(-1, group)}

    def _sequence_rewards(self) -> torch.Tensor:
        per_func = self._benchctl_rewards  # (N_all, F)
        unscorable = torch.isnan(per_func).all(dim=1)  # (N_all,)
        if unscorable.any():
            row = int(unscorable.nonzero()[0, 0])
            raise BenchctlError(
                f"completion {row}: every reward function returned None; benchctl's estimators "
                "need a reward for every completion"
            )
        return (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1)

    def _replace_logged_advantages(self, adv: torch.Tensor) -> None:
        """TRL logs the advantages it computed; log ours instead (its last len(adv) entries)."""
        logged = self._logs["advantages"]
        for _ in range(min(len(adv), len(logged))):
            logged.pop()
        logged.extend(adv.tolist()[-logged.maxlen :] if logged.maxlen else adv.tolist())

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{self.state.global_step}")
            with open(os.path.join(folder, STATE_FILE), "w") as f:
                json.dump(self.estimator.state_dict(), f)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        path = os.path.join(checkpoint, STATE_FILE) if checkpoint is not None else None
        if path is not None and os.path.exists(path):
            with open(path) as f:
                self.estimator.load_state_dict(json.load(f))
