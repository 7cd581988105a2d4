"""`simulate bias`: expected advantage of a correct / wrong rollout given a non-degenerate group.

Ground truth (HA-DW arXiv:2601.08521 §2, Eq. 2-6, Lemma 2): rewards r ~ Bernoulli(p), true advantage
A = r - p (Eq. 4). Normalised estimators aim at a different scale, so every row also carries the
population-normalised target (r - p) / sqrt(p(1-p)) [our choice: what GRPO's advantage would be with the
true mean and the true population std]. "any" = a uniformly random rollout of the group: for A = r - p,
E[A | S] = E[p_hat | S] - p, so the "any" bias of `dr_grpo` (A_hat = r - p_hat, E[A_hat | S] = 0) equals
Lemma 2's closed form, reported in column `lemma2` for every row.

Paths. exact: for estimators probed stateless and group-local, E[. | S] is a finite sum over c = 1..G-1
correct with Binomial(G, p) weights, one canonical group per c fed to the estimator. mc: batches of
`batch_prompts` groups at p; degenerate groups stay in the batch (they move batch-level quantities such
as ACR or A-GRAE's omega) but are excluded from the conditional averages; standard errors treat batches as
independent units (ratio estimator). Stateful estimators: `state=fresh` builds a new estimator per batch
(first-call behaviour); `state=carry` runs one estimator through all batches of a cell (stationary regime).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchctl.errors import check_range
from benchctl.lab.common import DEFAULT_P, check_choice, check_group_sizes, check_p_grid, generator, opt
from benchctl.lab.intervals import ratio_mean_se
from benchctl.lab.result import LabResult, config_dict
from benchctl.lab.specs import EstimatorSpec, outcome_advantages, parse_estimators, probe
from benchctl.lab.theory import binomial_pmf, conditional_bias

OUTCOMES = ("correct", "wrong", "any")
EXPECTATION_KEYS = (
    "adv_correct",
    "adv_correct_se",
    "adv_wrong",
    "adv_wrong_se",
    "adv_any",
    "adv_any_se",
    "adv_correct_uncond",
    "adv_wrong_uncond",
)


@dataclass(frozen=True)
class BiasConfig:
    """Configuration of `simulate bias`."""

    estimators: str = opt("grpo,dr_grpo", "estimators: name or name(key=val,...), comma separated")
    G: tuple[int, ...] = opt((8,), "group sizes")
    p: tuple[float, ...] = opt(DEFAULT_P, "success probabilities in (0, 1)")
    method: str = opt("exact", "exact (finite sum over c; MC fallback for stateful / batch-coupled) or mc")
    groups: int = opt(20000, "Monte Carlo: groups drawn per (estimator, G, p) cell")
    batch_prompts: int = opt(64, "Monte Carlo: groups per estimator call (the batch context)")
    state: str = opt("fresh", "Monte Carlo, stateful estimators: fresh estimator per batch, or carry one")
    seed: int = opt(0, "seed of the Monte Carlo generator")


def _validate(config: BiasConfig) -> tuple[EstimatorSpec, ...]:
    check_group_sizes(config.G)
    check_p_grid(config.p)
    check_choice("method", config.method, ("exact", "mc"))
    check_choice("state", config.state, ("fresh", "carry"))
    check_range("groups", config.groups, 100, 10_000_000)
    check_range("batch_prompts", config.batch_prompts, 1, 100_000)
    return parse_estimators(config.estimators)


def exact_expectations(spec: EstimatorSpec, G: int, p: float) -> dict[str, float]:
    """E[A_hat | S, outcome] and E[A_hat | outcome] as exact Binomial sums over c (group-local estimators)."""
    a_pos, a_neg = outcome_advantages(spec, G)  # (G+1,) each
    c = np.arange(G + 1)
    w = binomial_pmf(c, G, p)  # (G+1,)
    pos = np.where(c > 0, c * np.nan_to_num(a_pos), 0.0)  # sum of correct advantages in group c
    neg = np.where(c < G, (G - c) * np.nan_to_num(a_neg), 0.0)
    s = (c > 0) & (c < G)
    out = {
        "adv_correct": (w * pos)[s].sum() / (w * c)[s].sum(),
        "adv_wrong": (w * neg)[s].sum() / (w * (G - c))[s].sum(),
        "adv_any": (w * (pos + neg))[s].sum() / (G * w[s].sum()),
        "adv_correct_uncond": (w * pos).sum() / (G * p),
        "adv_wrong_uncond": (w * neg).sum() / (G * (1 - p)),
    }
    out.update({f"adv_{k}_se": 0.0 for k in OUTCOMES})
    return {k: float(v) for k, v in out.items()}


def mc_expectations(spec: EstimatorSpec, G: int, p: float, config: BiasConfig, key: tuple) -> dict[str, float]:
    """Monte Carlo E[A_hat | S, outcome] with delta-method standard errors over independent batches."""
    rng = generator(config.seed, *key)
    n_batches = max(2, math.ceil(config.groups / config.batch_prompts))
    sums = np.zeros((n_batches, 10))  # per batch: (num, den) for correct, wrong, any, correct_all, wrong_all
    carried = spec.make()
    for b in range(n_batches):
        rewards = (rng.random((config.batch_prompts, G)) < p).astype(np.float64)  # (B, G)
        est = carried if config.state == "carry" else spec.make()
        adv = np.asarray(est.advantages(rewards), dtype=float)  # (B, G)
        c = rewards.sum(axis=1)  # (B,)
        nd = ((c > 0) & (c < G))[:, None]  # (B, 1)
        right, wrong = rewards == 1.0, rewards == 0.0  # (B, G)
        sums[b] = [
            (adv * right * nd).sum(),
            (right * nd).sum(),
            (adv * wrong * nd).sum(),
            (wrong * nd).sum(),
            (adv * nd).sum(),
            G * nd.sum(),
            (adv * right).sum(),
            right.sum(),
            (adv * wrong).sum(),
            wrong.sum(),
        ]
    out = {}
    for i, name in enumerate(("correct", "wrong", "any", "correct_uncond", "wrong_uncond")):
        mean, se = ratio_mean_se(sums[:, 2 * i], sums[:, 2 * i + 1])
        out[f"adv_{name}"] = mean
        if name in OUTCOMES:
            out[f"adv_{name}_se"] = se
    return out


def _targets(p: float, G: int) -> dict[str, float]:
    """True advantages: raw r - p and normalised (r - p)/sqrt(p(1-p)); 'any' is E[r - p | S]."""
    any_true = float(conditional_bias(p, G))
    scale = math.sqrt(p * (1 - p))
    raw = {"correct": 1 - p, "wrong": -p, "any": any_true}
    out = {f"true_{k}": v for k, v in raw.items()}
    out.update({f"true_{k}_norm": v / scale for k, v in raw.items()})
    return out


def _row(spec: EstimatorSpec, G: int, p: float, method: str, state: str, exp: dict[str, float]) -> dict:
    row = {
        "estimator": spec.label,
        "G": G,
        "p": p,
        "method": method,
        "state": state,
        "p_nondegenerate": float(1 - (1 - p) ** G - p**G),
    }
    row.update({key: exp[key] for key in EXPECTATION_KEYS})  # same columns on both paths
    row.update(_targets(p, G))
    for k in OUTCOMES:
        row[f"bias_{k}"] = row[f"true_{k}"] - row[f"adv_{k}"]
        row[f"bias_{k}_norm"] = row[f"true_{k}_norm"] - row[f"adv_{k}"]
    row["lemma2"] = float(conditional_bias(p, G))
    return row


def run_bias(config: BiasConfig) -> LabResult:
    """Expected advantages given S for every (estimator, G, p), beside the true and Lemma-2 values."""
    specs = _validate(config)
    rows, notes = [], []
    for i, spec in enumerate(specs):
        for j, G in enumerate(config.G):
            traits = probe(spec, G)
            exact = config.method == "exact" and traits.exact_ok
            state = "n/a" if not traits.stateful else config.state
            for k, p in enumerate(config.p):
                exp = exact_expectations(spec, G, p) if exact else mc_expectations(spec, G, p, config, (i, j, k))
                rows.append(_row(spec, G, p, "exact" if exact else "mc", state, exp))
            note = _note(spec, traits, exact, config)
            if note not in notes:  # one note per estimator and path, whatever the G
                notes.append(note)
    notes.append(
        "true advantage: r - p (HA-DW Eq. 4); *_norm: (r - p)/sqrt(p(1-p)) [our choice for normalised "
        "estimators]; 'any' = random rollout, so bias_any of dr_grpo = Lemma 2 (column lemma2)"
    )
    return LabResult("bias", config_dict(config), rows, notes=notes)


def _note(spec: EstimatorSpec, traits, exact: bool, config: BiasConfig) -> str:
    if exact:
        return f"{spec.label}: exact Binomial sum over c=1..G-1 (probed stateless, group-local)"
    why = [w for w, on in (("stateful", traits.stateful), ("batch-coupled", not traits.group_local)) if on]
    ctx = f"batches of {config.batch_prompts} groups at the same p, ~{config.groups} groups per cell"
    st = {"fresh": "fresh estimator per batch", "carry": "one estimator carried through the batches"}[config.state]
    reason = f" ({', '.join(why)})" if why else ""
    return f"{spec.label}: Monte Carlo{reason}: {ctx}; {st if traits.stateful else 'stateless'}; SE over batches"
