"""`--until-decided` beside AdaStop, and the design advisor's fixed design beside both (issue 41, item 4;
docs/report.md, "Planning a design").

On the same simulated per-seed scores: the level (null), the power and the mean seeds per arm of
* benchctl's group-sequential design (`benchctl matrix run --until-decided`: `report.sequential.SequentialDesign`,
  first wave 4 seeds, then 2 a wave up to 10, O'Brien-Fleming-type spending; a look rejects when its repeated
  confidence interval, `stats.crossed_estimate` on the per-seed differences, excludes 0: `report_sequential.py`'s
  rule for a claim without a stated effect);
* AdaStop (Mathieu et al. 2023, arXiv:2306.10882; `pip install adastop`, its `MultipleAgentsComparator`, two-sided,
  n = 2 seeds an interim, K = 5 interims: at most 10 seeds, alpha 0.05, beta 0, B permutations; `--ada-n 5
  --ada-k 2` the other split of 10 seeds), run in its own
  environment (`--adastop-python`, default /work/venv-adastop/bin/python) on the scores written to a .npz;
* the advisor's fixed design: the fewest seeds whose predicted mde (`design.predicted_mde` on the true seed
  variance, population fixed, alpha 0.05) is at most the scenario's effect, tested once with p < 0.05.

Scores [our generator]: arm and baseline per seed independent normal, each with sd sigma / sqrt(2), so the per-seed
difference has the testbed's seed sd sigma (AdaStop compares unpaired samples; the pairing changes nothing here).
Scenarios: the claims testbed's measured effects and spreads (`report_sequential.py`'s TESTBED, points: effect,
sigma = CI half-width x 2 / t(0.975, 3)) for HA-DW (-0.3, 0.31), AVSPO (-0.6, 0.44) and A-GRAE pass@1 (-1.1, 0.25),
and a null (0, 0.44).

    PYTHONPATH=. .venv/bin/python benchmarks/design_adastop.py --reps 500
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

T975_3 = 3.182446305284263  # t(0.975, 3): the testbed's intervals came from 4 seeds
SCENARIOS = (("null", 0.0, 0.7), ("ha_dw", -0.3, 0.5), ("avspo", -0.6, 0.7), ("a_grae pass@1", -1.1, 0.4))
MAX_SEEDS, ADA_N, ADA_K = 10, 2, 5


def adastop_side(path: str, b: int, n: int, k_max: int, alpha: float) -> None:
    """Run in AdaStop's environment: every replication of every scenario through the comparator; writes
    <path>.out.npz with reject (bool) and seeds (per arm) arrays of shape (scenarios, reps)."""
    from adastop import MultipleAgentsComparator

    data = np.load(path)
    arm, base = data["arm"], data["base"]  # (scenarios, reps, MAX_SEEDS)
    reject, seeds = np.zeros(arm.shape[:2], bool), np.zeros(arm.shape[:2], int)
    for i in range(arm.shape[0]):
        for r in range(arm.shape[1]):
            comp = MultipleAgentsComparator(n=n, K=k_max, B=b, alpha=alpha, seed=r)
            for k in range(k_max):
                m = n * (k + 1)
                comp.partial_compare({"arm": arm[i, r, :m], "base": base[i, r, :m]}, verbose=False)
                if comp.is_finished:
                    break
            reject[i, r] = list(comp.decisions.values())[0] in ("larger", "smaller")
            seeds[i, r] = comp.n_iters["arm"]
    np.savez(path + ".out.npz", reject=reject, seeds=seeds)


def benchctl_sequential(d: np.ndarray) -> tuple[bool, int]:
    """One replication through the looks (first 4, +2, max 10): (rejected, seeds used)."""
    from benchctl.report.sequential import SequentialDesign
    from benchctl.report.stats import crossed_estimate

    design = SequentialDesign(tuple(range(1, 5)), MAX_SEEDS, 2)
    for seeds, conf in zip(design.looks(), design.confidences(), strict=True):
        est = crossed_estimate(d[None, : len(seeds)], conf, "fixed")
        if est.low > 0 or est.high < 0:
            return True, len(seeds)
    return False, MAX_SEEDS


def advisor_seeds(effect: float, sigma: float) -> int | None:
    """The fewest seeds (3..64) whose predicted mde at alpha 0.05 (one comparison, population fixed) <= |effect|."""
    from benchctl.report.design import Components, predicted_mde

    c = Components("arm", "base", "t", 1, 4, 2, 1.0, 0.0, sigma**2, 0.0, 0.0, 0.0)
    for s in range(3, 65):
        if predicted_mde(c, s, 2, 1.0, 0.05, "fixed") <= abs(effect):
            return s
    return None


def _rate(x) -> str:
    x = np.asarray(x, float)
    return f"{100 * x.mean():.1f}% ({100 * np.sqrt(x.mean() * (1 - x.mean()) / len(x)):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--b", type=int, default=2000, help="AdaStop's permutations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ada-n", type=int, default=ADA_N, help="AdaStop's seeds an interim")
    parser.add_argument("--ada-k", type=int, default=ADA_K, help="AdaStop's interims")
    parser.add_argument("--ada-alpha", type=float, default=0.05, help="AdaStop's alpha (its measured level is higher)")
    parser.add_argument("--adastop-python", default="/work/venv-adastop/bin/python")
    parser.add_argument("--adastop-side", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.adastop_side:
        return adastop_side(args.adastop_side, args.b, args.ada_n, args.ada_k, args.ada_alpha)
    rng = np.random.default_rng(args.seed)
    sigmas = [hw * 2 / T975_3 for _, _, hw in SCENARIOS]
    shape = (len(SCENARIOS), args.reps, 64)  # AdaStop and the sequential design read the first MAX_SEEDS
    arm = np.stack([rng.normal(e, s / np.sqrt(2), shape[1:]) for (_, e, _), s in zip(SCENARIOS, sigmas)])
    base = rng.normal(0.0, 1.0, shape) * (np.array(sigmas) / np.sqrt(2))[:, None, None]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "scores.npz")
        np.savez(path, arm=arm, base=base)
        cmd = [args.adastop_python, __file__, "--adastop-side", path, "--b", str(args.b)]
        cmd += ["--ada-n", str(args.ada_n), "--ada-k", str(args.ada_k), "--ada-alpha", str(args.ada_alpha)]
        subprocess.run(cmd, check=True)
        ada = np.load(path + ".out.npz")
    ada_s = time.perf_counter() - start
    print(f"{args.reps} replications a scenario, seed {args.seed}; AdaStop n = {args.ada_n}, K = {args.ada_k}, "
          f"alpha {args.ada_alpha:g}, B = {args.b} ({ada_s:.0f} s)")  # fmt: skip
    print("| scenario (effect, seed sd; points) | benchctl --until-decided: rejects, mean seeds | AdaStop: rejects, "
          "mean seeds | advisor's fixed design: seeds, rejects |")  # fmt: skip
    print("|---|---|---|---|")
    from benchctl.report.stats import crossed_estimate

    for i, ((name, effect, _), sigma) in enumerate(zip(SCENARIOS, sigmas, strict=True)):
        seq = [benchctl_sequential((arm[i, r] - base[i, r])[:MAX_SEEDS]) for r in range(args.reps)]
        n_fix = advisor_seeds(effect, sigma) if effect else MAX_SEEDS  # the null: its level at MAX_SEEDS
        fixed = [crossed_estimate((arm[i, r] - base[i, r])[None, :n_fix], 0.95, "fixed").p_value < 0.05
                 for r in range(args.reps)] if n_fix else []  # fmt: skip
        fixed_cell = f"{n_fix}, {_rate(fixed)}" if fixed else "more than 64"
        print(f"| {name} ({effect:+.1f}, {sigma:.2f}) | {_rate([s[0] for s in seq])}, "
              f"{np.mean([s[1] for s in seq]):.2f} | {_rate(ada['reject'][i])}, {ada['seeds'][i].mean():.2f} | "
              f"{fixed_cell} |")  # fmt: skip
    print(f"{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
