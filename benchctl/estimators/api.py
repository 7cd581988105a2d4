"""The estimator contract (docs/contract.md §1): `get_estimator(...)` -> `Estimator` (conversion, validation, state)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from benchctl.errors import BenchctlError
from benchctl.estimators._common import acr_metrics
from benchctl.estimators._convert import check_inputs, to_bool, to_float64
from benchctl.estimators._state import state_from_json, state_to_json
from benchctl.estimators.registry import EstimatorSpec, get_spec


class Estimator:
    """One registered estimator (plus its base, for modifiers) with its hyperparameters and cross-step state.

    `advantages(rewards)` is one training step: rewards (P, G) numpy or torch -> same kind, dtype, device.
    """

    def __init__(self, spec: EstimatorSpec, params: Any, base: Estimator | None = None) -> None:
        self.spec, self.params, self.base = spec, params, base
        self._state: Any = None
        self._metrics: dict[str, Any] = {}
        self._rewards: np.ndarray | None = None  # last batch (float64 copy) for the lazy ACR diagnostics
        self._changed_base: bool | None = None  # a modifier's last step changed its base's advantages

    name = property(lambda self: self.spec.name)
    kind = property(lambda self: self.spec.kind)
    __repr__ = lambda self: f"Estimator({self.label}, {self.params})"  # noqa: E731
    label = property(lambda self: self.name if self.base is None else f"{self.name}(base={self.base.label})")
    min_group_size = property(lambda self: (self.base or self.spec).min_group_size)  # a modifier keeps degenerate A

    @property
    def loss_agg(self) -> str:
        """Default loss aggregation (contract.md §6); [our choice] modifiers inherit their base's (HA-DW, A-GRAE)."""
        return self.spec.loss_agg if self.spec.loss_agg is not None else self.base.loss_agg

    @property
    def token_scores(self) -> str | None:
        """Importance scores the trainer must pass to `token_advantages` ("gradient"/"perturbation"), or None."""
        owner = self._token_owner()
        return owner.spec.token_scores if owner is not None else None

    @property
    def inputs(self) -> frozenset[str]:
        """The inputs (contract.md §1) any layer of the chain declares: what a trainer must pass to `advantages`."""
        return frozenset(self.spec.inputs) | (self.base.inputs if self.base is not None else frozenset())

    def advantages(self, rewards: Any, **inputs: Any) -> Any:
        """rewards (P, G) -> advantages (P, G) of the same kind/dtype/device; advances the state by one step.
        `inputs` (optional, contract.md §1): prompt_ids (P,), seq_logprob (P, G) mean token log-prob per rollout."""
        r, back = to_float64(rewards, "rewards")
        check_rewards(r)
        adv, metrics, commits = self._chain(r, check_inputs(inputs, r.shape))
        for est, state in commits:  # commit only after every layer succeeded
            est._state = state
        self._metrics = metrics
        if self._rewards is None or self._rewards.shape != r.shape:
            self._rewards = np.empty_like(r)  # reused buffer: no (P, G) allocation per step
        np.copyto(self._rewards, r)
        return back(adv)

    def _chain(self, r: np.ndarray, inputs: dict) -> tuple[np.ndarray, dict, list]:
        extra = (inputs,) if self.spec.inputs else ()  # only estimators declaring inputs receive them
        if self.base is None:
            adv, state, metrics = self.spec.fn(r, self.params, self._state, *extra)
            self._changed_base = None
            return adv, dict(metrics), [(self, state)]
        base_adv, metrics, commits = self.base._chain(r, inputs)
        before = base_adv.copy()  # the modifier may write into its input
        adv, state, own = self.spec.fn(r, base_adv, self.params, self._state, *extra)
        self._changed_base = bool((np.abs(adv - before) > 1e-12).any())
        return adv, {**metrics, **own}, commits + [(self, state)]

    def mechanisms(self) -> dict[str, float]:
        """This step's evidence that each mechanism in the chain acted: {name: 1.0 or 0.0} for every estimator
        (this one, its base, ...) that declares one (`register_estimator(acted=, mechanism=)`), and for every
        modifier (which acted when it changed its base's advantages, unless it declares its own evidence); {}
        before the first step or for a method with no mechanism. The trainer logs `mechanism/<name>/acted`."""
        if self._rewards is None:
            return {}
        out, est = {}, self
        while est is not None:  # this step's metrics of the whole chain live on the outermost estimator
            if est.spec.acted is not None:
                out[est.name] = float(bool(est.spec.acted(self._metrics)))
            elif est.base is not None and est._changed_base is not None:
                out[est.name] = float(est._changed_base)
            est = est.base
        return out

    def diagnostics(self) -> dict[str, float]:
        """This step's internals (ACR, anchor, tau, omega, ...) as plain floats; {} before the first step."""
        if self._rewards is None:
            return {}
        out = acr_metrics(self._rewards)
        out.update({key: float(value) for key, value in self._metrics.items()})
        return out

    def state_dict(self) -> dict:
        """JSON-serialisable cross-step state (nested for modifiers)."""
        return {
            "estimator": self.name,
            "state": state_to_json(self._state),
            "base": None if self.base is None else self.base.state_dict(),
        }

    def load_state_dict(self, data: dict) -> None:
        """Restore the state saved by `state_dict` of an estimator with the same name (and base)."""
        if not isinstance(data, dict) or data.get("estimator") != self.name:
            found = data.get("estimator") if isinstance(data, dict) else type(data).__name__
            raise BenchctlError(f"state_dict is for estimator {found!r}, not {self.name!r}")
        state = state_from_json(self.spec, data.get("state"))
        if self.base is not None:
            self.base.load_state_dict(data.get("base"))
        self._state = state

    def token_advantages(self, seq_adv: Any, scores: Any, reasoning_mask: Any, degenerate: Any = None) -> Any:
        """Per-token advantages (N, T) = seq_adv (N,) x token weights (contract.md §7; weight 1 without OAR).

        scores (N, T) >= 0 on reasoning tokens (None allowed when `token_scores` is None); reasoning_mask (N, T): the
        tokens the scores cover; degenerate (N,) bool: the row's group has all rewards equal (RL-ZVP needs it).
        """
        seq, back = to_float64(seq_adv, "seq_adv")
        mask = to_bool(reasoning_mask, "reasoning_mask")
        if seq.ndim != 1 or mask.ndim != 2 or mask.shape[0] != seq.shape[0]:
            raise BenchctlError(f"seq_adv must be (N,) and reasoning_mask (N, T); got {seq.shape}, {mask.shape}")
        owner = self._token_owner()
        if owner is None:
            return back(np.repeat(seq[:, None], mask.shape[1], axis=1))  # (N, T)
        if scores is None:
            raise BenchctlError(f"{owner.name} needs per-token importance scores ({owner.spec.token_scores})")
        s, _ = to_float64(scores, "scores")
        if s.shape != mask.shape:
            raise BenchctlError(f"scores must have the mask's shape {mask.shape}; got {s.shape}")
        rows = (seq, degenerate) if owner.spec.token_rows else ()  # RL-ZVP shapes by sign and degenerate group
        weights = owner.spec.token_weights(s, mask, owner.params, *rows)  # (N, T)
        metrics = (owner.spec.token_metrics or token_weight_metrics)(weights, mask)  # this step's diagnostics
        self._metrics = {**self._metrics, **metrics}
        return back(seq[:, None] * weights)  # (N, T)

    def _token_owner(self) -> Estimator | None:
        est = self
        while est is not None and est.spec.token_weights is None:
            est = est.base
        return est


def token_weight_metrics(weights: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """Rows (of N) whose token weights (N, T) are not all 1 (`reshaped_frac`), rows with no span (`no_span_frac`)."""
    reshaped = (np.abs(weights - 1.0) > 1e-9).any(axis=1)  # (N,)
    return {"reshaped_frac": float(reshaped.mean()), "no_span_frac": float((~mask.any(axis=1)).mean())}


def check_rewards(r: np.ndarray) -> None:
    """(P, G) with P, G >= 1 and finite values; BenchctlError names the first bad group."""
    if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] == 0:
        raise BenchctlError(f"rewards must be a non-empty 2-D (num_groups, G) array; got shape {r.shape}")
    finite = np.isfinite(r)
    if not finite.all():
        bad = int(np.flatnonzero(~finite.all(axis=1))[0])
        raise BenchctlError(f"rewards of group {bad} are not finite (NaN or inf): {r[bad].tolist()}")


def param_names(name: str) -> list[str]:
    """Hyperparameters `get_estimator(name, ...)` accepts: own fields, then (modifiers) the default base's."""
    spec = get_spec(name)
    own = [f.name for f in dataclasses.fields(spec.params)]
    return own if spec.kind == "base" else own + [n for n in param_names("grpo") if n not in own]


def get_estimator(
    name: str, *, base: str | Estimator | None = None, base_params: dict | None = None, **params: Any
) -> Estimator:
    """Build an estimator.  Modifiers take `base=` (a name, default "grpo", or an Estimator); keyword
    arguments a modifier does not own flow to its base; `base_params` sets base fields that share a name."""
    spec = get_spec(name)
    own_names = [f.name for f in dataclasses.fields(spec.params)]
    own = {k: params.pop(k) for k in list(params) if k in own_names}
    if spec.kind == "base":
        if base is not None or base_params:
            raise BenchctlError(f"{name} is a base estimator; base= applies to modifiers only")
        _no_unknown(name, params, own_names)
        return Estimator(spec, spec.params(**own))
    if isinstance(base, Estimator):
        if params or base_params:
            raise BenchctlError(f"{name}: give the hyperparameters of base={base.label} when building it")
        base_est = base
    else:
        base_name = "grpo" if base is None else base
        _no_unknown(f"{name}(base={base_name})", params, own_names + param_names(base_name))
        base_est = get_estimator(base_name, **{**params, **(base_params or {})})
    return Estimator(spec, spec.params(**own), base_est)


def _no_unknown(label: str, given: dict, valid: list[str]) -> None:
    if unknown := [k for k in given if k not in valid]:
        raise BenchctlError(f"unknown hyperparameter {unknown[0]!r} for {label}; valid: {', '.join(valid) or 'none'}")
