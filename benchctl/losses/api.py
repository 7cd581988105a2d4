"""`get_loss(name, **params)` -> `Loss`, `parse_loss("NAME(k=v,...)")`, and read-only descriptions for the CLI.

The spec syntax is the estimators' (`benchctl.lab.specs`): `ppo_clip`, `ppo_clip(clip_high=0.28, c=3)`; values
are typed by the loss's parameter dataclass as `benchctl.estimators.settings` types them (int, float, true/false,
none).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any

from benchctl.errors import BenchctlError
from benchctl.estimators.info import ARXIV, HyperParam, doc_fields
from benchctl.losses._common import k3_kl, token_mean
from benchctl.losses.aggregation import aggregate
from benchctl.losses.registry import LossSpec, get_spec, registered_names

_SPEC = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class Loss:
    """One registered loss with its hyperparameters: `loss(log_prob, old_log_prob, advantages, mask, agg)`."""

    spec: LossSpec
    params: Any  # the spec's frozen parameter dataclass

    name = property(lambda self: self.spec.name)
    fn = property(lambda self: self.spec.fn)
    loss_agg = property(lambda self: self.spec.loss_agg)  # the paper's aggregation; None = the estimator's

    @property
    def label(self) -> str:
        """`name` or `name(k=v,...)` with the values that differ from the defaults (parses back to this loss)."""
        fields = dataclasses.fields(self.params)
        changed = [
            f"{f.name}={_text(getattr(self.params, f.name))}"
            for f in fields
            if getattr(self.params, f.name) != f.default
        ]
        return f"{self.name}({','.join(changed)})" if changed else self.name

    def mechanisms(self, metrics: dict) -> dict[str, float]:
        """{name: 1.0 or 0.0}: whether the loss's own mechanism acted, from an update's metrics (`loss/*`,
        `policy/*`); {} for a loss that declares none. The trainer logs it as `mechanism/<name>/acted`."""
        return {self.name: float(bool(self.spec.acted(metrics)))} if self.spec.acted is not None else {}

    def __call__(
        self, log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, *, kl_coef=0.0, ref_log_prob=None
    ):
        """(loss, metrics): the loss plus kl_coef x the k3 KL to the reference (Schulman 2020; veRL's low_var_kl,
        TRL's beta term) under the same aggregation. The trainer's one registry call, with `loss_agg_mode` the
        (N, T) weights `aggregation_weights` gives over the whole mini-batch and `response_mask` the tokens left
        after a rollout correction's rejection; metrics are 0-d detached tensors (`loss/*` add over micro-batches,
        `policy/*` are token means: `benchctl.trainers.metrics.combine_metrics`)."""
        loss, metrics = self.spec.fn(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, self.params)
        if kl_coef > 0.0 and ref_log_prob is not None:
            kl = k3_kl(log_prob, ref_log_prob)  # (N, T)
            loss = loss + kl_coef * aggregate(kl, response_mask, loss_agg_mode)
            metrics = {**metrics, "policy/kl": token_mean(kl, response_mask)}
        return loss, {**metrics, "loss/total": loss.detach()}


def _typed(key: str, text: str, annotation: str) -> Any:
    """One `key=value` value typed by its field's annotation ("float", "float | None", "bool", "int", "str")."""
    low = text.strip().lower()
    if "None" in annotation and low in ("none", "null"):
        return None
    kind = next((k for k in ("bool", "int", "float") if k in annotation), None)
    if kind == "bool" and low in ("true", "false"):
        return low == "true"
    try:
        return {"int": int, "float": float}[kind](text) if kind in ("int", "float") else text
    except ValueError:
        raise BenchctlError(f"{key}={text!r} is not a valid {kind}") from None


def _text(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def get_loss(name: str, **params: Any) -> Loss:
    """Build a loss; unknown name or hyperparameter, or a bad value -> BenchctlError naming the valid ones."""
    spec = get_spec(name)
    valid = [f.name for f in dataclasses.fields(spec.params)]
    if unknown := [k for k in params if k not in valid]:
        raise BenchctlError(
            f"unknown hyperparameter {unknown[0]!r} for loss {name}; valid: {', '.join(valid) or 'none'}"
        )
    try:
        return Loss(spec, spec.params(**params))
    except TypeError as exc:
        raise BenchctlError(f"loss {name}: {exc}") from None


def parse_loss(text: str) -> Loss:
    """`"ppo_clip(clip_high=0.28, c=3)"` -> get_loss("ppo_clip", clip_high=0.28, c=3.0)."""
    match = _SPEC.match(text or "")
    if match is None:
        raise BenchctlError(f"cannot parse loss {text!r}; expected NAME or NAME(key=value,...)")
    spec = get_spec(match.group(1))
    types = {f.name: str(f.type) for f in dataclasses.fields(spec.params)}
    params: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in (match.group(2) or "").split(","))):
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise BenchctlError(f"bad hyperparameter {pair!r} in {text!r}; expected key=value")
        params[key] = _typed(key, value.strip().strip("'\""), types.get(key, ""))
    return get_loss(spec.name, **params)


@dataclass(frozen=True)
class LossInfo:
    name: str
    description: str  # first docstring line
    reference: str  # first arXiv id of the Reference field
    hyperparameters: tuple[HyperParam, ...]
    loss_agg: str | None  # the paper's aggregation; None = the estimator's
    inert_on_policy: bool
    formula: str
    source: str  # the full Reference field
    notes: tuple[str, ...]  # deviations and [our choice] decisions


def loss_info(name: str) -> LossInfo:
    """Everything `benchctl losses show NAME` prints; UnknownNameError for an unknown name."""
    spec = get_spec(name)
    fields = doc_fields(inspect.getdoc(spec.fn) or "")
    params = tuple(HyperParam(f.name, f.default, f.metadata.get("help", "")) for f in dataclasses.fields(spec.params))
    module_doc = inspect.cleandoc(getattr(sys.modules.get(spec.fn.__module__), "__doc__", None) or "")
    notes = [" ".join(p.split()) for p in module_doc.split("\n\n") if "[our choice]" in p]
    notes += [f"Deviations: {fields['Deviations']}"] if fields.get("Deviations") else []
    notes += [f"{hp.name}: {hp.help}" for hp in params if "[our choice]" in hp.help]
    found = ARXIV.search(fields.get("Reference", ""))
    return LossInfo(
        name=spec.name,
        description=fields["description"],
        reference=found.group(0) if found else "",
        hyperparameters=params,
        loss_agg=spec.loss_agg,
        inert_on_policy=spec.inert_on_policy,
        formula=fields.get("Formula", ""),
        source=fields.get("Reference", ""),
        notes=tuple(dict.fromkeys(notes)),
    )


def list_losses() -> list[LossInfo]:
    """Every registered loss (built-ins first, then plug-ins in registration order)."""
    return [loss_info(name) for name in registered_names()]


__all__ = ["Loss", "LossInfo", "get_loss", "list_losses", "loss_info", "parse_loss"]
