"""The policy-loss registry: built-ins and plug-ins register here with `@register_loss` (as estimators do).

Signature: fn(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params) -> (loss, metrics)
with (N, T) tensors, `log_prob` carrying the gradient, `loss_agg_mode` a docs/contract.md §6 mode or (N, T) weights
(`benchctl.losses.aggregation`), `params` the loss's frozen dataclass; `loss` is a 0-d tensor, `metrics` 0-d detached
tensors under `loss/` and `policy/` (the caller converts them once per step, style §18).
"""

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.estimators.registry import LOSS_AGGS

SIGNATURE = ("log_prob", "old_log_prob", "advantages", "response_mask", "loss_agg_mode", "params")
_REGISTRY: dict[str, "LossSpec"] = {}


@dataclass(frozen=True)
class LossSpec:
    """One registered loss: its pure function, its parameter dataclass and the aggregation its paper uses."""

    name: str
    fn: Callable
    params: type  # frozen dataclass of hyperparameters (every field has metadata["help"])
    loss_agg: str | None  # the paper's aggregation (docs/contract.md §6); None = the estimator's default
    # True: with one update per batch (pi = pi_old, every ratio 1) its gradient is `gpg`'s, so its own mechanism
    # (clip, gate, mask) acts only with several mini-batches or epochs; False: it acts on-policy too (or is gpg)
    inert_on_policy: bool
    acted: Callable | None = None  # metrics -> bool: its mechanism acted in this update (`Loss.mechanisms`)
    mechanism: str | None = None  # what `acted` checks, one line


def register_loss(
    name: str, *, params: type, loss_agg: str | None = None, inert_on_policy: bool = True, **traits
) -> Callable:
    """Decorator registering `fn` under `name`; re-registering the same function is a no-op. `traits`: `acted`
    (update metrics -> bool) and `mechanism` (one line), as estimators declare them."""

    def decorate(fn: Callable) -> Callable:
        if tuple(inspect.signature(fn).parameters) != SIGNATURE:
            raise BenchctlError(f"loss {name!r}: a loss must have signature ({', '.join(SIGNATURE)})")
        if not (dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen):
            raise BenchctlError(f"loss {name!r}: params must be a frozen dataclass")
        if loss_agg is not None and loss_agg not in LOSS_AGGS:
            raise BenchctlError(f"loss_agg={loss_agg!r} is not valid; choose one of: {', '.join(LOSS_AGGS)}")
        if (old := _REGISTRY.get(name)) is not None and old.fn is not fn:
            raise BenchctlError(f"loss {name!r} is already registered to {old.fn.__module__}.{old.fn.__name__}")
        _REGISTRY[name] = LossSpec(name, fn, params, loss_agg, inert_on_policy, **traits)
        return fn

    return decorate


def get_spec(name: str) -> LossSpec:
    try:  # UnknownNameError lists the valid names
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownNameError("loss", str(name), _REGISTRY) from None


def registered_names() -> list[str]:
    return list(_REGISTRY)  # registration order, built-ins first


def unregister_loss(name: str) -> None:
    del _REGISTRY[get_spec(name).name]  # a plug-in (tests, notebooks); UnknownNameError when not registered
