"""`simulate symmetry`: group- and sample-level advantage symmetry (A-GRAE arXiv:2602.05548 §3, Thm. 2).

For every group size G and every empirical success rate p_hat = c/G (c = 0..G) the canonical binary
group with c correct rollouts is fed to each estimator and we report sum |A| over correct rollouts, over
wrong rollouts, their total (the group's update magnitude), and the net sum sum A (= C of Theorem 1,
zero for zero-sum estimators). Closed forms beside them: GRPO with population std
2G sqrt(p(1-p)) (Eq. 10), Hard-Focused G sqrt(1-p), Easy-Focused G sqrt(p) (Table 1b, gamma = 0.5),
DGPO G (MathForge, docs/contract.md §2, question weight 1).

Batch context [our choice]: `single` feeds each group alone as its own batch with a fresh estimator
(DGPO's question weight is then 1, A-GRAE's omega = p_hat, HA-DW's first anchor = p_hat); `pooled` feeds
all G+1 groups of one G together (omega = 0.5, DGPO weights softmax over the pooled means).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchctl.lab.common import check_choice, check_group_sizes, opt
from benchctl.lab.result import LabResult, config_dict
from benchctl.lab.specs import EstimatorSpec, canonical_groups, parse_estimators
from benchctl.lab.theory import grpo_total_magnitude

DEFAULT_SYMMETRY = "grpo(std=population),grpo,dr_grpo,pos_dominant,neg_dominant,hard_focused,easy_focused,dgpo"


@dataclass(frozen=True)
class SymmetryConfig:
    """Configuration of `simulate symmetry`."""

    estimators: str = opt(DEFAULT_SYMMETRY, "estimators: name or name(key=val,...), comma separated")
    G: tuple[int, ...] = opt((8,), "group sizes; p_hat runs over c/G for c = 0..G")
    context: str = opt("single", "batch context: single (one group per call) or pooled (all c in one call)")


def group_advantages(spec: EstimatorSpec, G: int, context: str) -> np.ndarray:
    """(G+1, G) advantages of the canonical groups c = 0..G under the chosen batch context."""
    groups = canonical_groups(G)  # (G+1, G)
    if context == "pooled":
        return np.asarray(spec.make().advantages(groups), dtype=float)
    return np.vstack([np.asarray(spec.make().advantages(groups[c : c + 1]), dtype=float) for c in range(G + 1)])


def _rows(spec: EstimatorSpec, G: int, context: str) -> list[dict]:
    adv = group_advantages(spec, G, context)  # (G+1, G)
    correct = canonical_groups(G).astype(bool)  # (G+1, G)
    p_hat = np.arange(G + 1) / G  # (G+1,)
    mixed = (p_hat > 0) & (p_hat < 1)
    pos = np.where(correct, np.abs(adv), 0.0).sum(axis=1)  # (G+1,)
    neg = np.where(~correct, np.abs(adv), 0.0).sum(axis=1)
    theory = {
        "theory_grpo_pop": grpo_total_magnitude(p_hat, G),
        "theory_hard_focused": np.where(mixed, G * np.sqrt(1 - p_hat), 0.0),
        "theory_easy_focused": np.where(mixed, G * np.sqrt(p_hat), 0.0),
        "theory_dgpo": np.where(mixed, float(G), 0.0),
    }
    rows = []
    for c in range(G + 1):
        row = {
            "estimator": spec.label,
            "G": G,
            "c": c,
            "p_hat": float(p_hat[c]),
            "context": context,
            "sum_abs_correct": float(pos[c]),
            "sum_abs_wrong": float(neg[c]),
            "total": float(pos[c] + neg[c]),
            "net": float(adv[c].sum()),
        }
        row.update({k: float(v[c]) for k, v in theory.items()})
        rows.append(row)
    return rows


def run_symmetry(config: SymmetryConfig) -> LabResult:
    """Sum |A| over correct vs wrong rollouts and the group's total magnitude, per estimator, G and p_hat."""
    check_group_sizes(config.G)
    check_choice("context", config.context, ("single", "pooled"))
    specs = parse_estimators(config.estimators)
    rows = [row for spec in specs for G in config.G for row in _rows(spec, G, config.context)]
    notes = [
        "p_hat = c/G is the group's empirical success rate (A-GRAE Thm. 2 is stated for it)",
        f"batch context: {config.context} ("
        + ("each group alone, fresh estimator" if config.context == "single" else "all c=0..G groups in one call")
        + ")",
        "Theorem 2 (2G sqrt(p(1-p))) assumes GRPO with the population std; grpo's default std is the sample std"
        " (veRL/TRL), which multiplies every advantage by sqrt((G-1)/G)",
    ]
    return LabResult("symmetry", config_dict(config), rows, notes=notes)
