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
- Inputs (contract.md §1): `dbb` needs `prompt_ids=` (B,) stable prompt ids and `codapo` needs `old_log_probs=` /
  `log_probs=` (B, T); veRL's compute_advantage passes neither, so they run only under a trainer that does (CoDaPO's
  fork passes log_probs) and are refused otherwise with a line naming what is missing.
- Token entropies (`rl_zvp`, arXiv:2509.21880; `token_scores="entropy"`): veRL 0.9.1's RayPPOTrainer computes the
  policy's entropy at every response token in `_compute_old_log_prob` (`calculate_entropy=True` always, the rollout
  temperature, no gradient, before the update: what benchctl's trainer gives rl_zvp), logs their mean as
  `actor/entropy`, then `fit` drops them (`old_log_prob.batch.pop("entropys")`) before `compute_advantage`, which
  passes an estimator only rewards, mask, uid and config; no config flag keeps them.  So importing this module also
  wraps `RayPPOTrainer._compute_old_log_prob` to keep that batch's `entropys` (B, T) in `SESSION` when the
  estimator is a `benchctl_*` one, at no extra forward, and the estimator takes them, checked against its
  response_mask (same shape, no token outside the mask they were computed under) and used once.  A trainer may pass
  `entropys=` (B, T) itself.  Missing: bypass mode (`algorithm.rollout_correction.bypass_mode=true`) skips that
  forward, and veRL 0.9.1's default v1 trainer (`trainer.use_v1=true`: v1/trainer_base.py `PPOTrainer`) is not
  RayPPOTrainer: it writes `entropy` to its TransferQueue but its `_compute_advantage` reads only uid, masks,
  scores, log-probs and values.  Set `trainer.use_v1=false` (`benchctl train --engine verl` does for rl_zvp); the
  error says so.  The advantages are
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
MISSING_ENTROPIES = (
    "{name} needs the policy's per-token entropies (entropys=, (B, T)), which veRL's compute_advantage does not pass;"
    " this plug-in keeps those RayPPOTrainer._compute_old_log_prob computes, which this step did not run: set"
    " algorithm.rollout_correction.bypass_mode=false and trainer.use_v1=false, or pass entropys= from your trainer"
)


class EstimatorSession:
    """The run's estimators, one per (name, hyperparameters), and their cross-step state."""

    def __init__(self) -> None:
        self.estimators: dict[str, Estimator] = {}
        self.pending: dict[str, dict] = {}  # states loaded before their estimator was first called
        self.entropies: tuple | None = None  # (entropys (B, T), response_mask (B, T)) of the last old-log-prob pass

    def keep_entropies(self, entropies, response_mask) -> None:
        """Keep a batch's per-token entropies (B, T) and the response mask they were computed under."""
        self.entropies = (entropies, response_mask)

    def take_entropies(self, name: str, response_mask):
        """The kept entropies (B, T) for a batch with this response_mask, used once; BenchctlError when none were
        kept or they belong to another batch (other shape, or a response token outside their mask)."""
        kept, self.entropies = self.entropies, None
        if kept is None:
            raise BenchctlError(MISSING_ENTROPIES.format(name=PREFIX + name))
        entropies, mask = kept
        if tuple(entropies.shape) != tuple(response_mask.shape) or bool(((response_mask > 0) & ~(mask > 0)).any()):
            raise BenchctlError(
                f"{PREFIX}{name}: the kept per-token entropies {tuple(entropies.shape)} are not this batch's"
                f" {tuple(response_mask.shape)}; pass entropys= from your trainer"
            )
        return entropies

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
        self.entropies = None


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
    est = SESSION.estimator(name, params_from_config(config))
    if est.token_scores not in (None, ENTROPY):
        raise BenchctlError(
            f"{PREFIX}{name} needs per-token {est.token_scores} scores from the policy, which "
            "veRL's advantage-estimator interface does not pass; use benchctl's trainer"
        )
    scores = token_level_rewards.sum(dim=-1)  # (B,) sequence rewards
    order, p, g = group_order(index, scores.shape[0])
    rows = _as_index(order, scores)  # (P*G,)
    inputs = estimator_inputs(est, kwargs, rows, response_mask, p, g)
    entropies = None
    if est.token_scores == ENTROPY:  # before the estimator's step: a refusal leaves its state as it was
        entropies = kwargs.get("entropys")
        entropies = SESSION.take_entropies(name, response_mask) if entropies is None else entropies
    grouped = scores[rows].reshape(p, g)  # (P, G)
    adv_pg = est.advantages(grouped, **inputs)  # (P, G), the dtype/device of the rewards
    seq = scores.new_empty(scores.shape)  # (B,)
    seq[rows] = adv_pg.reshape(-1)
    if entropies is None:
        advantages = seq.unsqueeze(-1) * response_mask  # (B, T)
        return advantages, advantages
    degenerate = np.empty(scores.shape[0], dtype=bool)  # (B,) the row's group has all rewards equal
    degenerate[order] = np.repeat(group_stats(grouped.detach().double().cpu().numpy()).degenerate, g)
    advantages = token_advantages(est, seq, entropies, response_mask, degenerate)
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


def estimator_inputs(est: Estimator, kwargs: dict, rows, response_mask, p: int, g: int) -> dict:
    """prompt_ids / seq_logprob (contract.md §1) for an estimator that declares them, from what a veRL trainer passes:
    `prompt_ids` (B,) stable ids and `old_log_probs` (or CoDaPO's `log_probs`) (B, T). veRL's own compute_advantage
    passes neither (its uid is new every step), so such an estimator is refused there, naming what is missing."""
    needs, layer = set(), est
    while layer is not None:
        needs, layer = needs | set(layer.spec.inputs), layer.base
    out = {}
    if "prompt_ids" in needs:
        if kwargs.get("prompt_ids") is None:
            raise BenchctlError(
                f"{PREFIX}{est.name} needs a stable prompt id per group (prompt_ids=), which veRL's compute_advantage"
                " does not pass (its uid is new every step); use benchctl's trainer or the TRL plug-in"
            )
        ids = np.asarray(kwargs["prompt_ids"]).reshape(-1)[np.asarray(rows.cpu())]  # (P*G,) grouped
        out["prompt_ids"] = ids.reshape(p, g)[:, 0].tolist()
    if "seq_logprob" in needs:
        logp = kwargs.get("old_log_probs", kwargs.get("log_probs"))
        if logp is None:
            raise BenchctlError(
                f"{PREFIX}{est.name} needs each response's log-probs (old_log_probs= or log_probs=, (B, T)), which"
                " veRL's compute_advantage does not pass; CoDaPO's veRL fork (PR #7497) does"
            )
        mask = response_mask.to(logp.dtype)  # (B, T)
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


def patch_checkpoints(trainer_cls: type | None = None) -> bool:
    """Make veRL's trainer save/load the session with its checkpoints; False when its trainer is missing."""
    if trainer_cls is None:
        try:
            from verl.trainer.ppo.ray_trainer import RayPPOTrainer as trainer_cls
        except ImportError:
            return False
    if getattr(trainer_cls._save_checkpoint, "_benchctl", False):
        return True
    save, load = trainer_cls._save_checkpoint, trainer_cls._load_checkpoint

    @functools.wraps(save)
    def _save_checkpoint(self, *args, **kwargs):
        out = save(self, *args, **kwargs)
        SESSION.save(os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}"))
        return out

    @functools.wraps(load)
    def _load_checkpoint(self, *args, **kwargs):
        out = load(self, *args, **kwargs)
        folder = checkpoint_folder(self.config.trainer, getattr(self, "global_steps", 0))
        if folder is not None:
            SESSION.load(folder)
        return out

    _save_checkpoint._benchctl = _load_checkpoint._benchctl = True
    trainer_cls._save_checkpoint, trainer_cls._load_checkpoint = _save_checkpoint, _load_checkpoint
    return True


def checkpoint_folder(trainer_config: Any, global_steps: int) -> str | None:
    """The global_step_N folder veRL's _load_checkpoint resumed from, or None when it started from scratch."""
    if trainer_config.get("resume_mode") == "disable" or not global_steps:
        return None
    if trainer_config.get("resume_mode") == "resume_path":
        folder = trainer_config.get("resume_from_path")
    else:
        folder = os.path.join(trainer_config.get("default_local_dir"), f"global_step_{global_steps}")
    return os.path.abspath(folder)


def patch_entropies(trainer_cls: type | None = None) -> bool:
    """Make veRL's trainer keep each batch's per-token entropies for a benchctl estimator (`SESSION.keep_entropies`)
    before its `fit` drops them; False when its trainer is missing."""
    if trainer_cls is None:
        try:
            from verl.trainer.ppo.ray_trainer import RayPPOTrainer as trainer_cls
        except ImportError:
            return False
    if getattr(trainer_cls._compute_old_log_prob, "_benchctl", False):
        return True
    compute = trainer_cls._compute_old_log_prob

    @functools.wraps(compute)
    def _compute_old_log_prob(self, batch, *args, **kwargs):
        out = compute(self, batch, *args, **kwargs)
        old = out[0] if isinstance(out, tuple) else out  # (old_log_prob, mfu) in 0.9.1
        if str(self.config.algorithm.adv_estimator).startswith(PREFIX) and "entropys" in old.batch.keys():
            SESSION.keep_entropies(old.batch["entropys"], batch.batch["response_mask"])
        return out

    _compute_old_log_prob._benchctl = True
    trainer_cls._compute_old_log_prob = _compute_old_log_prob
    return True


register_all()
patch_checkpoints()
patch_entropies()
