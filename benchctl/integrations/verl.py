"""benchctl's estimators as veRL advantage estimators: `algorithm.adv_estimator=benchctl_<name>`.

Turn on (veRL imports the module in every process that imports `verl`, the driver's TaskRunner included):

    VERL_USE_EXTERNAL_MODULES=benchctl.integrations.verl python -m verl.trainer.main_ppo \\
        algorithm.adv_estimator=benchctl_ha_dw +algorithm.benchctl.base=dr_grpo +algorithm.benchctl.lambda_scale=1.5

- Names: every name in `benchctl.estimators.registered_names()` at import time, as `benchctl_<name>`.  A
  third-party estimator module goes *before* this one in `VERL_USE_EXTERNAL_MODULES`, or calls `register_all()`
  again after registering.
- Hyperparameters: the mapping `algorithm.benchctl` (keys of `get_estimator`: the estimator's own fields, and
  for modifiers `base` and `base_params` as well).  `config=None`, or a config without `benchctl`, gives the
  estimator's defaults.  veRL's `norm_adv_by_std_in_grpo` / `epsilon` are not read: pick `benchctl_dr_grpo`
  or set `std` / `eps`.
- Calling convention (veRL `compute_advantage`): token_level_rewards (B, T), response_mask (B, T), index (B,)
  uids, config (the `algorithm` config) -> (advantages, returns), both (B, T) = the sequence advantage
  broadcast over response_mask.  The sequence reward is the sum of the token-level rewards.
- Groups: rows with the same uid form a group, in any order (veRL's balance_batch interleaves them); groups
  are taken in order of first appearance and rows in arrival order, so the (P, G) batch benchctl sees is
  the natural one.  Groups of unequal size are refused with an error naming the sizes: benchctl's estimators
  are defined on a (P, G) batch, and padding or splitting it would change batch-level statistics and step a
  stateful estimator more than once per training step.  veRL's `rollout.n` gives equal groups; filter whole
  groups (as DAPO's `filter_groups` does), never single responses.
- State (HA-DW anchor, AVSPO tau): one `Estimator` per (name, hyperparameters) lives in the process that
  calls the function (veRL's driver) for the whole run.  veRL offers no checkpoint hook for estimators, so
  importing this module wraps `RayPPOTrainer._save_checkpoint` / `_load_checkpoint` to also write / read
  `global_step_N/benchctl_estimators.json` (`STATE_FILE`); `SESSION.save(dir)` / `SESSION.load(dir)` do
  the same for other trainers.
- Inputs veRL's compute_advantage does not pass (it gives an estimator only rewards, mask, uid and config): RL-ZVP's
  per-token entropies (arXiv:2509.21880, `token_scores="entropy"`), DBB's stable prompt ids (arXiv:2603.18444,
  contract.md §1 `prompt_ids`; veRL's uid is new every step) and CoDaPO's log-probs (arXiv:2606.07950,
  `seq_logprob`).  veRL 0.9.1's RayPPOTrainer has them all in `_compute_old_log_prob(batch)`: the actor's forward
  there (`calculate_entropy=True` always, the rollout temperature, no gradient, before the update) returns
  `entropys` (logged as `actor/entropy`, then dropped by `fit`) and `old_log_probs` (B, T), and each row of `batch`
  carries its dataset row's `extra_info` ({index: ...}, which veRL's RLHFDataset reads from the parquet; `fit`
  moves the separate `index` column into the generation batch).  So importing this module wraps that method
  (`patch_old_log_prob`) to keep, for a `benchctl_*` estimator, the batch's `entropys`, `old_log_probs`, each
  row's extra_info.index (`dataset_index`) and its response_mask and uids in `SESSION`, at no extra forward.
  `fit` runs `_balance_batch` before that pass and reorders nothing between it and compute_advantage, so the rows
  are compute_advantage's; the estimator checks it: the kept uids must equal its index row for row, the (B, T)
  ones match its response_mask's shape with no response token outside the mask they were computed under, the
  prompt ids pair one to one with the uids (veRL's batch holds each dataset row once; RLHFDataset reads 0 for a
  row without extra_info.index), and the capture is used by one call only.  A trainer may pass `entropys=`,
  `prompt_ids=` (B,) or `old_log_probs=` / `log_probs=` (B, T) itself (CoDaPO's fork passes log_probs).  CoDaPO's
  seq_logprob is the mean of `old_log_probs` over each response's tokens, in float64.  Missing: bypass mode
  (`algorithm.rollout_correction.bypass_mode=true`) skips that forward, and veRL 0.9.1's default v1 trainer
  (`trainer.use_v1=true`: v1/trainer_base.py `PPOTrainer`) is not RayPPOTrainer: it calls the same
  compute_advantage, which passes none of them.  Set `trainer.use_v1=false` (`benchctl train --engine verl`
  does for every estimator needing them, from its declared inputs and token_scores); without them the estimator
  is refused in one line naming the keyword and both settings.  RL-ZVP's advantages are
  est.token_advantages(A, H, response_mask, degenerate) (B, T) on the rows with A != 0, 0 elsewhere.
- Not available here: OAR (`oar_g`, `oar_p`) needs per-token importance scores from the policy, which
  veRL's estimator interface does not pass; its functions are registered and raise an error naming this.
- Diagnostics: `SESSION.diagnostics()` and `SESSION.mechanisms()` (veRL's compute_advantage has no metrics return
  path).

Deviations from veRL's own estimators: benchctl's formulas (docs/contract.md §2), e.g. degenerate groups get exactly 0.0
and a group of one rollout is an ordinary (degenerate) group, where veRL's GRPO uses mean 0 / std 1.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.estimators import Estimator, get_estimator, registered_names
from benchctl.estimators._common import group_stats

PREFIX = "benchctl_"
CONFIG_KEY = "benchctl"  # algorithm.benchctl.<hyperparameter>
STATE_FILE = "benchctl_estimators.json"
ENTROPY = "entropy"  # the per-token scores veRL computes: the actor's `entropys`
# what the plug-in keeps from RayPPOTrainer._compute_old_log_prob, by the keyword a trainer may pass instead:
# (what it is, where in that pass's batch it comes from)
KEPT = {
    "entropys": ("the policy's per-token entropies (entropys=, (B, T))", "its `entropys`"),
    "old_log_probs": ("each response's token log-probs (old_log_probs= or log_probs=, (B, T))", "its `old_log_probs`"),
    "prompt_ids": (
        "a stable prompt id per response (prompt_ids=, (B,))",
        "each row's extra_info.index in its batch: write one per dataset row",
    ),
}
MISSING = (
    "{name} needs {what}, which veRL's compute_advantage does not pass; this plug-in keeps them from"
    " RayPPOTrainer._compute_old_log_prob ({where}), which this step did not run or which had none: set"
    " algorithm.rollout_correction.bypass_mode=false and trainer.use_v1=false, or pass {key}= from your trainer"
)


class EstimatorSession:
    """The run's estimators, one per (name, hyperparameters), and their cross-step state."""

    def __init__(self) -> None:
        self.estimators: dict[str, Estimator] = {}
        self.pending: dict[str, dict] = {}  # states loaded before their estimator was first called
        self.kept: dict | None = None  # the last old-log-prob pass: response_mask, uid and KEPT's inputs

    def keep(self, response_mask, uid=None, **inputs) -> None:
        """Keep what a batch's old-log-prob pass gave: any of KEPT's inputs (entropys, old_log_probs (B, T),
        prompt_ids (B,)), with the response_mask (B, T) and uids (B,) of the batch they belong to."""
        self.kept = {"response_mask": response_mask, "uid": uid, **inputs}

    def take(self) -> dict:
        """The kept inputs ({} when none), used once: never a later step's."""
        kept, self.kept = self.kept, None
        return kept or {}

    @staticmethod
    def key(name: str, params: dict) -> str:
        return f"{name}{json.dumps(params, sort_keys=True, default=str)}"

    def estimator(self, name: str, params: dict) -> Estimator:
        """The run's estimator for (name, params), built on first use (with any state loaded for it)."""
        key = self.key(name, params)
        if key not in self.estimators:
            est = get_estimator(name, **params)
            if key in self.pending:
                est.load_state_dict(self.pending.pop(key))
            self.estimators[key] = est
        return self.estimators[key]

    def state_dict(self) -> dict:
        return {key: est.state_dict() for key, est in self.estimators.items()} | dict(self.pending)

    def load_state_dict(self, data: dict) -> None:
        """Restore states; an estimator not yet built gets its state when first called."""
        for key, state in data.items():
            if key in self.estimators:
                self.estimators[key].load_state_dict(state)
            else:
                self.pending[key] = state

    def diagnostics(self) -> dict[str, dict[str, float]]:
        return {key: est.diagnostics() for key, est in self.estimators.items()}

    def mechanisms(self) -> dict[str, dict[str, float]]:
        """Each estimator's last-call evidence that its mechanism acted ({name: 1.0 or 0.0}, `Estimator.mechanisms`):
        what benchctl's trainer logs as `mechanism/<name>/acted`."""
        return {key: est.mechanisms() for key, est in self.estimators.items()}

    def save(self, folder: str) -> None:
        """Write the states to folder/STATE_FILE (temporary file, then rename)."""
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, STATE_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump(self.state_dict(), f)
        os.replace(path + ".tmp", path)

    def load(self, folder: str) -> bool:
        """Read folder/STATE_FILE if present; False when the checkpoint has none."""
        path = os.path.join(folder, STATE_FILE)
        if not os.path.exists(path):
            return False
        with open(path) as f:
            self.load_state_dict(json.load(f))
        return True

    def reset(self) -> None:
        self.estimators.clear()
        self.pending.clear()
        self.kept = None


SESSION = EstimatorSession()


def params_from_config(config: Any) -> dict:
    """algorithm.benchctl as a plain dict ({} for config=None or no such key); DictConfig, dict or dataclass."""
    if config is None:
        return {}
    section = config.get(CONFIG_KEY) if hasattr(config, "get") else getattr(config, CONFIG_KEY, None)
    if section is None:
        return {}
    if not hasattr(section, "items"):
        raise BenchctlError(f"algorithm.{CONFIG_KEY} must be a mapping of hyperparameters; got {section!r}")
    return _plain(section)


def _plain(value: Any) -> Any:
    """OmegaConf containers / mappings / lists -> plain Python values."""
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def group_order(index: Any, batch: int) -> tuple[np.ndarray, int, int]:
    """Row order that lays the flat batch out as (P, G): groups by first appearance, rows in arrival order.

    Returns (order (P*G,), P, G); BenchctlError for groups of unequal size or a missing index.
    """
    if index is None:
        raise BenchctlError("benchctl estimators need veRL's group index (uid); none was passed")
    ids = np.asarray(index).reshape(-1)  # (B,)
    if ids.shape[0] != batch:
        raise BenchctlError(f"index has {ids.shape[0]} entries for a batch of {batch} responses")
    first: dict = {}
    group = np.fromiter((first.setdefault(u, len(first)) for u in ids.tolist()), dtype=np.intp, count=batch)  # (B,)
    sizes = np.bincount(group)  # (P,)
    if sizes.min() != sizes.max():
        shown = ", ".join(f"{size} x {count}" for size, count in zip(*np.unique(sizes, return_counts=True)))
        raise BenchctlError(
            f"groups of unequal size (responses x groups: {shown}); benchctl's estimators need "
            "(P, G) groups of one size: keep rollout.n fixed and filter whole groups"
        )
    return np.argsort(group, kind="stable"), len(sizes), int(sizes[0])


def compute_advantages(name: str, token_level_rewards, response_mask, index=None, config=None, **kwargs) -> tuple:
    """veRL's estimator call for benchctl estimator `name`; (B, T) tensors in, (advantages, returns) out."""
    kept = SESSION.take()  # this batch's old-log-prob pass: used by this call only, refused or not
    est = SESSION.estimator(name, params_from_config(config))
    if est.token_scores not in (None, ENTROPY):
        raise BenchctlError(
            f"{PREFIX}{name} needs per-token {est.token_scores} scores from the policy, which "
            "veRL's advantage-estimator interface does not pass; use benchctl's trainer"
        )
    scores = token_level_rewards.sum(dim=-1)  # (B,) sequence rewards
    order, p, g = group_order(index, scores.shape[0])
    rows = _as_index(order, scores)  # (P*G,)
    given = {key: passed_or_kept(name, key, kwargs, kept, response_mask, index) for key in row_inputs(est)}
    inputs = estimator_inputs(name, given, rows, response_mask, p, g)  # before the step: a refusal keeps the state
    grouped = scores[rows].reshape(p, g)  # (P, G)
    adv_pg = est.advantages(grouped, **inputs)  # (P, G), the dtype/device of the rewards
    seq = scores.new_empty(scores.shape)  # (B,)
    seq[rows] = adv_pg.reshape(-1)
    if "entropys" not in given:
        advantages = seq.unsqueeze(-1) * response_mask  # (B, T)
        return advantages, advantages
    degenerate = np.empty(scores.shape[0], dtype=bool)  # (B,) the row's group has all rewards equal
    degenerate[order] = np.repeat(group_stats(grouped.detach().double().cpu().numpy()).degenerate, g)
    advantages = token_advantages(est, seq, given["entropys"], response_mask, degenerate)
    return advantages, advantages


def token_advantages(est: Estimator, seq, entropies, response_mask, degenerate: np.ndarray):
    """A_t (B, T) = est.token_advantages on the rows with A != 0 (A_t = 0 elsewhere, as benchctl's trainer leaves
    them), masked by response_mask; seq (B,) sequence advantages, entropies (B, T), degenerate (B,) bool."""
    out = seq.new_zeros(response_mask.shape)  # (B, T)
    live = (seq != 0).nonzero().view(-1)  # (n,)
    if live.numel():
        mask = response_mask[live] > 0  # (n, T)
        shaped = est.token_advantages(seq[live], entropies[live], mask, degenerate[live.cpu().numpy()])
        out[live] = shaped.to(out.device)
    return out * response_mask


def row_inputs(est: Estimator) -> list[str]:
    """The row-level inputs (KEPT's keys) est needs: prompt_ids (B,) for `prompt_ids`, old_log_probs (B, T) for
    `seq_logprob` (contract.md §1, declared by any layer), entropys (B, T) for `token_scores="entropy"`."""
    wanted = [("prompt_ids" in est.inputs, "prompt_ids"), ("seq_logprob" in est.inputs, "old_log_probs")]
    return [key for want, key in wanted + [(est.token_scores == ENTROPY, "entropys")] if want]


def passed_or_kept(name: str, key: str, kwargs: dict, kept: dict, response_mask, index):
    """Input `key` (KEPT) as the trainer passed it (old_log_probs: or CoDaPO's log_probs), else as kept from this
    batch's old-log-prob pass; BenchctlError when neither, or when the kept one is another batch's (other uids in
    another order, other shape, or a response token outside the mask it was computed under)."""
    passed = kwargs.get(key)
    passed = kwargs.get("log_probs") if passed is None and key == "old_log_probs" else passed
    if passed is not None:
        return passed
    if kept.get(key) is None:
        what, where = KEPT[key]
        raise BenchctlError(MISSING.format(name=PREFIX + name, what=what, where=where, key=key))
    value, mask, uid = kept[key], kept["response_mask"], kept["uid"]
    uids = np.asarray(index).reshape(-1)  # (B,)
    same = uid is None or np.array_equal(np.asarray(uid).reshape(-1), uids)
    if key == "prompt_ids":
        same = same and len(value) == len(uids)
    else:
        same = same and tuple(value.shape) == tuple(response_mask.shape)
        same = same and not bool(((response_mask > 0) & ~(mask > 0)).any())
    if not same:
        raise BenchctlError(
            f"{PREFIX}{name}: the kept {key} {tuple(np.shape(value))} are not this batch's"
            f" {tuple(response_mask.shape)} (another step's, or its rows reordered); pass {key}= from your trainer"
        )
    if key == "prompt_ids":
        one_id_per_group(name, np.asarray(value).reshape(-1), uids)
    return value


def one_id_per_group(name: str, ids: np.ndarray, uids: np.ndarray) -> None:
    """BenchctlError unless the kept prompt ids (B,) pair one to one with the batch's uids (B,): veRL's batch holds
    each dataset row once, so a shared id is RLHFDataset's index 0 for rows without extra_info.index."""
    pairs, prompts, groups = (len(set(x)) for x in (zip(ids.tolist(), uids.tolist()), ids.tolist(), uids.tolist()))
    if not pairs == prompts == groups:
        raise BenchctlError(
            f"{PREFIX}{name} needs one prompt id per group, distinct across the batch's groups; the kept index has"
            f" {prompts} distinct for {groups} groups: give each dataset row its own extra_info.index (veRL's"
            " RLHFDataset uses 0 where it is missing), or pass prompt_ids="
        )


def estimator_inputs(name: str, given: dict, rows, response_mask, p: int, g: int) -> dict:
    """prompt_ids (P,) / seq_logprob (P, G) (contract.md §1) from the row-level inputs `given` (`row_inputs`):
    prompt_ids (B,) -> the id of each group's first row, old_log_probs (B, T) -> each response's mean token
    log-prob, in float64."""
    out = {}
    if "prompt_ids" in given:
        ids = np.asarray(given["prompt_ids"]).reshape(-1)[np.asarray(rows.cpu())].reshape(p, g)  # (P, G) grouped
        out["prompt_ids"] = ids[:, 0].tolist()
    if "old_log_probs" in given:
        logp, mask = given["old_log_probs"].double(), response_mask.double()  # (B, T): veRL's are float32
        mean = (logp * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)  # (B,) 0 for an empty response
        out["seq_logprob"] = mean[rows].reshape(p, g)
    return out


def _as_index(order: np.ndarray, like):
    import torch

    return torch.as_tensor(order, device=like.device)


_FUNCTIONS: dict[str, Callable] = {}  # one function object per name, so registering again is a no-op


def estimator_fn(name: str) -> Callable:
    """The function registered with veRL as `benchctl_<name>`."""
    if name not in _FUNCTIONS:

        def fn(token_level_rewards, response_mask, index=None, config=None, **kwargs):
            return compute_advantages(name, token_level_rewards, response_mask, index, config, **kwargs)

        fn.__name__ = fn.__qualname__ = PREFIX + name
        fn.__doc__ = f"benchctl estimator {name!r} (`benchctl estimators show {name}`), veRL's calling convention."
        _FUNCTIONS[name] = fn
    return _FUNCTIONS[name]


def register_all() -> list[str]:
    """Register every benchctl estimator not yet known to veRL; returns the veRL names now registered."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    for name in registered_names():
        if ADV_ESTIMATOR_REGISTRY.get(PREFIX + name) is not estimator_fn(name):
            register_adv_est(PREFIX + name)(estimator_fn(name))
    return [PREFIX + name for name in registered_names()]


def _wrap(trainer_cls: type | None, method: str, wrapper: Callable[[Callable], Callable]) -> bool:
    """Replace `trainer_cls.<method>` (default: veRL's RayPPOTrainer) by `wrapper(original)`, once: a method already
    wrapped (marked `_benchctl`) is left as it is. False when veRL's trainer is missing."""
    if trainer_cls is None:
        try:
            from verl.trainer.ppo.ray_trainer import RayPPOTrainer as trainer_cls
        except ImportError:
            return False
    original = getattr(trainer_cls, method)
    if not getattr(original, "_benchctl", False):
        wrapped = functools.wraps(original)(wrapper(original))
        wrapped._benchctl = True
        setattr(trainer_cls, method, wrapped)
    return True


def patch_checkpoints(trainer_cls: type | None = None) -> bool:
    """Make veRL's trainer save/load the session with its checkpoints; False when its trainer is missing."""

    def saving(save):
        def _save_checkpoint(self, *args, **kwargs):
            out = save(self, *args, **kwargs)
            SESSION.save(os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}"))
            return out

        return _save_checkpoint

    def loading(load):
        def _load_checkpoint(self, *args, **kwargs):
            out = load(self, *args, **kwargs)
            folder = checkpoint_folder(self.config.trainer, getattr(self, "global_steps", 0))
            if folder is not None:
                SESSION.load(folder)
            return out

        return _load_checkpoint

    return _wrap(trainer_cls, "_save_checkpoint", saving) and _wrap(trainer_cls, "_load_checkpoint", loading)


def checkpoint_folder(trainer_config: Any, global_steps: int) -> str | None:
    """The global_step_N folder veRL's _load_checkpoint resumed from, or None when it started from scratch."""
    if trainer_config.get("resume_mode") == "disable" or not global_steps:
        return None
    if trainer_config.get("resume_mode") == "resume_path":
        folder = trainer_config.get("resume_from_path")
    else:
        folder = os.path.join(trainer_config.get("default_local_dir"), f"global_step_{global_steps}")
    return os.path.abspath(folder)


def patch_old_log_prob(trainer_cls: type | None = None) -> bool:
    """Make veRL's trainer keep, for a benchctl estimator, what its old-log-prob pass sees and gives that
    compute_advantage does not pass on (`SESSION.keep`): the batch's `entropys` (B, T), which `fit` drops next,
    `old_log_probs` (B, T), each row's dataset index (B,) as prompt ids (`dataset_index`), with the batch's
    response_mask and uids.
    False when its trainer is missing."""

    def keeping(compute):
        def _compute_old_log_prob(self, batch, *args, **kwargs):
            out = compute(self, batch, *args, **kwargs)
            old = out[0] if isinstance(out, tuple) else out  # (old_log_prob, mfu) in 0.9.1
            if str(self.config.algorithm.adv_estimator).startswith(PREFIX):
                tensors, rows = old.batch.keys(), batch.non_tensor_batch
                inputs = {key: old.batch[key] for key in ("entropys", "old_log_probs") if key in tensors}
                SESSION.keep(batch.batch["response_mask"], rows.get("uid"), prompt_ids=dataset_index(rows), **inputs)
            return out

        return _compute_old_log_prob

    return _wrap(trainer_cls, "_compute_old_log_prob", keeping)


def dataset_index(rows: dict):
    """(B,) each row's dataset index from a veRL batch's non_tensor_batch: its `extra_info`'s "index" (kept by
    `fit`, which moves the dataset's own `index` column into the generation batch), else an `index` column; None
    when a row has neither (RLHFDataset would read 0 for it)."""
    info = rows.get("extra_info")
    if info is None:
        return rows.get("index")
    ids = [row.get("index") if isinstance(row, dict) else None for row in info]
    return None if any(i is None for i in ids) else np.array(ids, dtype=object)


register_all()
patch_checkpoints()
patch_old_log_prob()
