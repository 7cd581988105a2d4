"""`simulate collapse`: probability of degenerate groups and the expected advantage-collapse rate (ACR).

A group of G binary rollouts at success probability p is all-wrong with probability (1-p)^G and
all-correct with p^G (HA-DW arXiv:2601.08521 Eq. 32); the ACR of a batch (AVSPO arXiv:2605.21125, docs/contract.md §4)
is the fraction of degenerate groups, so E[ACR] = (1-p)^G + p^G and, for i.i.d. prompts, the batch ACR
is Binomial(B, E[ACR]) / B (standard deviation `acr_sd`). With prompt difficulties p ~ Beta(a, b):
E[(1-p)^G] = B(a, b+G)/B(a, b), E[p^G] = B(a+G, b)/B(a, b). `oversample` = 1 / P(S) is the expected
number of groups DAPO's dynamic sampling draws per kept (non-degenerate) group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchctl.errors import BenchctlError, check_range
from benchctl.lab.common import check_choice, check_group_sizes, check_p_grid, generator, opt
from benchctl.lab.result import LabResult, config_dict
from benchctl.lab.theory import all_correct_probability, all_wrong_probability, beta_moment_degenerate

COLLAPSE_P = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


@dataclass(frozen=True)
class CollapseConfig:
    """Configuration of `simulate collapse`."""

    G: tuple[int, ...] = opt((4, 8, 16), "group sizes")
    p: tuple[float, ...] = opt(COLLAPSE_P, "success probabilities in [0, 1] (point prompt distributions)")
    beta: tuple[float, float] | None = opt(None, "also prompts with p ~ Beta(a, b), given as (a, b)")
    batch: int = opt(256, "prompts per batch (for the batch-ACR standard deviation and Monte Carlo)")
    method: str = opt("exact", "exact closed forms, or mc: closed forms plus a Monte Carlo check")
    batches: int = opt(400, "Monte Carlo: batches per cell")
    seed: int = opt(0, "seed of the Monte Carlo generator")


def _validate(config: CollapseConfig) -> None:
    check_group_sizes(config.G, low=1)
    check_p_grid(config.p, open_interval=False)
    check_choice("method", config.method, ("exact", "mc"))
    check_range("batch", config.batch, 1, 1_000_000)
    check_range("batches", config.batches, 2, 1_000_000)
    if config.beta is not None and (len(config.beta) != 2 or min(config.beta) <= 0):
        raise BenchctlError(f"beta={config.beta!r} must be two positive numbers a,b")


def _mc(config: CollapseConfig, G: int, dist: tuple, key: tuple) -> dict[str, float]:
    """Simulated batch ACR (mean and SE over batches) and all-wrong / all-correct fractions."""
    rng = generator(config.seed, *key)
    shape = (config.batches, config.batch)
    p = np.full(shape, dist[1]) if dist[0] == "point" else rng.beta(dist[1], dist[2], size=shape)  # (N, B)
    c = rng.binomial(G, p)  # (N, B) correct rollouts per group
    wrong, right = (c == 0).mean(axis=1), (c == G).mean(axis=1)  # (N,) per-batch fractions
    acr = wrong + right
    return {
        "mc_acr": float(acr.mean()),
        "mc_acr_se": float(acr.std(ddof=1) / math.sqrt(len(acr))),
        "mc_all_wrong": float(wrong.mean()),
        "mc_all_correct": float(right.mean()),
    }


def _row(config: CollapseConfig, G: int, dist: tuple, key: tuple) -> dict:
    if dist[0] == "point":
        label, mean_p = f"p={dist[1]:g}", dist[1]
        wrong, right = float(all_wrong_probability(dist[1], G)), float(all_correct_probability(dist[1], G))
    else:
        label, mean_p = f"beta({dist[1]:g},{dist[2]:g})", dist[1] / (dist[1] + dist[2])
        wrong, right = (float(v) for v in beta_moment_degenerate(dist[1], dist[2], G))
    deg = wrong + right
    row = {
        "dist": label,
        "p": float(mean_p),
        "G": G,
        "p_all_wrong": wrong,
        "p_all_correct": right,
        "p_degenerate": deg,
        "expected_acr": deg,
        "acr_sd": math.sqrt(deg * (1 - deg) / config.batch),
        "oversample": 1.0 / (1.0 - deg) if deg < 1 else math.inf,
    }
    nan = {"mc_acr": math.nan, "mc_acr_se": math.nan, "mc_all_wrong": math.nan, "mc_all_correct": math.nan}
    row.update(_mc(config, G, dist, key) if config.method == "mc" else nan)
    return row


def run_collapse(config: CollapseConfig) -> LabResult:
    """Degenerate-group probabilities and expected ACR for each G over the p grid (and a Beta prior)."""
    _validate(config)
    dists = [("point", float(p)) for p in config.p]
    if config.beta is not None:
        dists.append(("beta", float(config.beta[0]), float(config.beta[1])))
    rows = [_row(config, G, dist, (j, k)) for j, G in enumerate(config.G) for k, dist in enumerate(dists)]
    notes = [
        f"expected ACR = P(degenerate) = (1-p)^G + p^G; acr_sd for a batch of {config.batch} i.i.d. prompts",
        "oversample = 1/P(S): groups drawn per kept group under DAPO dynamic sampling",
    ]
    if config.method == "mc":
        notes.append(f"mc_*: {config.batches} simulated batches of {config.batch} prompts; SE over batches")
    return LabResult("collapse", config_dict(config), rows, notes=notes)
