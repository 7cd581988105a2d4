"""The estimator registry: built-ins and third-party plug-ins register here with `@register_estimator`.

Base signature:      fn(rewards (P, G) float64, params, state) -> (advantages (P, G), new_state, metrics)
Modifier signature:  fn(rewards, base_adv (P, G) float64, params, state) -> (advantages, new_state, metrics)
"""

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from benchctl.errors import BenchctlError, UnknownNameError

KINDS = {"base": ("rewards", "params", "state"), "modifier": ("rewards", "base_adv", "params", "state")}
INPUTS = ("prompt_ids", "seq_logprob")  # optional per-call inputs (contract.md §1): `advantages(rewards, **inputs)`
LOSS_AGGS = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm", "token-mean-nondegenerate")
_REGISTRY: dict[str, "EstimatorSpec"] = {}


@dataclass(frozen=True)
class EstimatorSpec:
    """One registered estimator: its pure function and everything the `Estimator` wrapper needs."""

    name: str
    kind: str  # "base" | "modifier"
    fn: Callable
    params: type  # frozen dataclass of hyperparameters (every field has metadata["help"])
    state: type | None  # dataclass of cross-step state, None when stateless
    loss_agg: str | None  # contract.md §6; None for modifiers = inherit the base's
    token_weights: Callable | None = None  # (scores, mask, params) -> (N, T) weights; OAR only (contract.md §7)
    token_scores: str | None = None  # which importance scores the trainer must supply ("gradient", "perturbation")
    token_rows: bool = False  # token_weights also takes each row's sequence advantage and degenerate flag (RL-ZVP)
    token_metrics: Callable | None = None  # (weights, mask) -> this step's token diagnostics; None: OAR's
    min_group_size: int = 2  # smallest G the advantage is defined (non-vacuous) for; 1 = no group statistics needed
    degenerate_only: bool = False  # acts only on degenerate groups (all rewards equal), e.g. AVSPO's augmentation
    acted: Callable | None = None  # metrics -> bool: its mechanism acted this step (`Estimator.mechanisms`)
    mechanism: str | None = None  # what `acted` checks, one line; None: no mechanism beyond the formula
    inputs: tuple[str, ...] = ()  # per-call inputs beyond rewards (INPUTS); fn then takes a last `inputs` dict


def register_estimator(
    name: str, *, kind: str, params: type, state: type | None = None, loss_agg: str | None = None, **traits
) -> Callable:
    """Decorator registering `fn` under `name`; re-registering the same function is a no-op. `traits`: the optional
    fields of `EstimatorSpec` (token_weights, token_scores, min_group_size, degenerate_only, acted, mechanism)."""

    def decorate(fn: Callable) -> Callable:
        if kind not in KINDS:
            raise BenchctlError(f"kind={kind!r} is not valid; choose one of: {', '.join(KINDS)}")
        want = KINDS[kind] + (("inputs",) if traits.get("inputs") else ())
        if tuple(inspect.signature(fn).parameters) != want:
            raise BenchctlError(f"estimator {name!r}: a {kind} must have signature ({', '.join(want)})")
        if not (dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen):
            raise BenchctlError(f"estimator {name!r}: params must be a frozen dataclass")
        agg = loss_agg if loss_agg is not None or kind == "modifier" else LOSS_AGGS[0]
        if agg is not None and agg not in LOSS_AGGS:
            raise BenchctlError(f"loss_agg={agg!r} is not valid; choose one of: {', '.join(LOSS_AGGS)}")
        if (old := _REGISTRY.get(name)) is not None and old.fn is not fn:
            raise BenchctlError(f"estimator {name!r} is already registered to {old.fn.__module__}.{old.fn.__name__}")
        _REGISTRY[name] = EstimatorSpec(name, kind, fn, params, state, agg, **traits)
        return fn

    return decorate


def get_spec(name: str) -> EstimatorSpec:
    try:  # UnknownNameError lists the valid names
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownNameError("estimator", str(name), _REGISTRY) from None


def registered_names() -> list[str]:
    return list(_REGISTRY)  # registration order, built-ins first


def unregister_estimator(name: str) -> None:
    del _REGISTRY[get_spec(name).name]  # a plug-in (tests, notebooks); UnknownNameError when not registered
