"""Estimator specs for the lab: parse `name(key=val,...)` lists, build estimators, probe their traits.

The lab only uses the public registry API (`benchctl.estimators.get_estimator`, docs/contract.md §1), so any registered
estimator works, third-party ones included. Syntax [our choice]: `--estimators "grpo,ha_dw(base=dr_grpo,
lambda_scale=1.5),grpo(std=population)"`; values parse as int, float, true/false, none, else string. The
same name may appear twice with different hyperparameters; the spec text is the row label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from benchctl.errors import BenchctlError

_SPEC = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator to simulate: registry name plus keyword hyperparameters (base= included)."""

    label: str
    name: str
    params: tuple[tuple[str, object], ...] = ()

    def make(self):
        """A fresh estimator instance (fresh cross-step state) from the registry."""
        from benchctl.estimators import get_estimator

        try:
            return get_estimator(self.name, **dict(self.params))
        except BenchctlError as exc:
            raise BenchctlError(f"estimator {self.label!r}: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise BenchctlError(f"estimator {self.label!r}: {exc}") from None


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            raise BenchctlError(f"unbalanced ')' in estimator list {text!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise BenchctlError(f"unbalanced '(' in estimator list {text!r}")
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _value(text: str):
    """Parse one hyperparameter value: int, float, bool, none, or a (possibly quoted) string."""
    raw = text.strip()
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw.strip("'\"")


def parse_estimators(text: str | tuple[str, ...]) -> tuple[EstimatorSpec, ...]:
    """Parse an estimator list and build each once, so unknown names / bad values fail early.

    Raises BenchctlError (one line, naming the valid choices via the registry) on any problem.
    """
    items = _split_top_level(text) if isinstance(text, str) else [s for t in text for s in _split_top_level(t)]
    if not items:
        raise BenchctlError("no estimators given; pass e.g. --estimators grpo,dr_grpo")
    specs = []
    for item in items:
        match = _SPEC.match(item)
        if match is None:
            raise BenchctlError(f"cannot parse estimator spec {item!r}; expected name or name(key=value,...)")
        params = []
        for pair in _split_top_level(match.group(2) or ""):
            key, sep, val = pair.partition("=")
            if not sep or not key.strip().isidentifier():
                raise BenchctlError(f"bad hyperparameter {pair!r} in {item!r}; expected key=value")
            params.append((key.strip(), _value(val)))
        spec = EstimatorSpec(label=item.replace(" ", ""), name=match.group(1), params=tuple(params))
        spec.make()
        specs.append(spec)
    return tuple(specs)


def canonical_groups(G: int) -> np.ndarray:
    """(G+1, G) binary rewards; row c holds c ones (correct) followed by G-c zeros."""
    return (np.arange(G)[None, :] < np.arange(G + 1)[:, None]).astype(np.float64)  # (G+1, G)


@dataclass(frozen=True)
class Traits:
    """What the lab needs to know about an estimator, measured by probing it (never by its name)."""

    stateful: bool  # output depends on earlier calls (HA-DW anchor, AVSPO tau, ...)
    group_local: bool  # a group's advantages depend only on that group's rewards (no batch coupling)
    zero_sum: bool  # every group's advantages sum to 0 (|sum| <= 1e-9 * G)

    @property
    def exact_ok(self) -> bool:
        """Conditional expectations are exact finite sums over c only for stateless group-local estimators."""
        return self.group_local and not self.stateful


def _state_text(est) -> str:
    state = est.state_dict() if hasattr(est, "state_dict") else {}
    return json.dumps(state, sort_keys=True, default=str)


@lru_cache(maxsize=256)
def probe(spec: EstimatorSpec, G: int) -> Traits:
    """Probe statefulness, batch coupling and the zero-sum property on canonical and random batches."""
    groups = canonical_groups(G)
    rng = np.random.default_rng(12345)
    other = (rng.random((7, G)) < 0.8).astype(np.float64)  # (7, G): a high-accuracy batch
    fresh = spec.make()
    base_state = _state_text(fresh)
    together = np.asarray(fresh.advantages(groups))  # (G+1, G)
    alone = np.vstack([np.asarray(spec.make().advantages(groups[c : c + 1])) for c in range(G + 1)])
    mixed = np.asarray(spec.make().advantages(np.vstack([groups, other])))[: G + 1]
    heavy = np.vstack([groups, np.zeros((2 * G, G)), np.ones((G, G))])  # (4G+1, G): mostly degenerate (high ACR)
    collapsed = np.asarray(spec.make().advantages(heavy))  # (4G+1, G)
    used = spec.make()
    for batch in (other, np.ones((3, G)), np.zeros((3, G)), other):
        used.advantages(batch)
    stateful = _state_text(used) != base_state or not np.allclose(used.advantages(groups), together)
    local = all(np.allclose(x, together, atol=1e-12) for x in (alone, mixed, collapsed[: G + 1]))
    sums = np.abs(np.concatenate([together.sum(axis=1), mixed.sum(axis=1), collapsed.sum(axis=1)]))
    return Traits(stateful=bool(stateful), group_local=bool(local), zero_sum=bool(sums.max() <= 1e-9 * G))


def outcome_advantages(spec: EstimatorSpec, G: int) -> tuple[np.ndarray, np.ndarray]:
    """Advantage of a correct and of a wrong rollout in a group with c correct, c = 0..G.

    Returns (a_pos, a_neg), each (G+1,): the mean over the correct (wrong) positions of canonical group c;
    NaN where the outcome cannot occur (a_pos[0], a_neg[G]). Meaningful for group-local stateless
    estimators, whose advantages depend on the group's rewards only.
    """
    adv = np.asarray(spec.make().advantages(canonical_groups(G)), dtype=float)  # (G+1, G)
    correct = canonical_groups(G).astype(bool)  # (G+1, G)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_pos = np.where(correct, adv, 0.0).sum(axis=1) / correct.sum(axis=1)
        a_neg = np.where(~correct, adv, 0.0).sum(axis=1) / (~correct).sum(axis=1)
    return a_pos, a_neg
