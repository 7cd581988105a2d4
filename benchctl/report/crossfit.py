"""The delete-one-seed jackknife of a cross-fitted setting choice: the variance of a number computed on runs whose
setting was chosen leave-one-seed-out (`report.tuning`), with the choice redone without each seed in turn.

A swept arm's per-seed values share the choice, so their variance as independent seeds is too small; the seeds
remain the independent units of the whole procedure (choose, then average), so its delete-one-seed jackknife is
the seed part of the variance (Quenouille 1956; Tukey 1958; Efron & Stein 1981, Ann. Statist. 9:586: it does not
understate the variance in expectation). The design and the measured level: `report.tuning`'s docstring and
docs/report.md, "Choosing a swept setting". Used by `report.stats` (the comparisons, an arm's own pass@k) and
`report.claims`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchctl.report.config import MIN_SEEDS

REFIT_COLUMNS = ["arm", "left_out", "seed", "eval_task", "k", "problem_id", "value"]


def delete_one_seed_frames(full: pd.DataFrame, refit: pd.DataFrame) -> dict:
    """The data of each delete-one-seed replicate of the whole procedure for one arm: {seed i of `full` (problems
    x seeds of the chosen runs): problems x the other seeds, each seed's column taken from the run that the choice
    made without seed i picks} (`refit`: REFIT_COLUMNS rows of this arm, task and k; a seed with no refit row, an
    arm not swept, keeps its column)."""
    wide = refit.pivot_table(index="problem_id", columns=["left_out", "seed"], values="value", aggfunc="mean")
    left_out = set(wide.columns.get_level_values(0)) if len(wide.columns) else set()
    out = {}
    for i in full.columns:
        kept = full.drop(columns=i)
        if i in left_out:
            redo = wide[i].reindex(index=full.index)  # problems x seeds, the runs chosen without seed i
            cols = [c for c in redo.columns if c in kept.columns]
            kept = kept.copy()
            kept.loc[:, cols] = redo[cols].to_numpy()
        out[i] = kept
    return out


def delete_one_seed_means(full: pd.DataFrame, refit: pd.DataFrame) -> pd.Series:
    """The statistic's delete-one-seed replicates for one arm: for each seed i of `full` (problems x seeds of the
    chosen runs), the mean over the problems and the other seeds when the setting is chosen without seed i
    (`delete_one_seed_frames`)."""
    frames = delete_one_seed_frames(full, refit)
    return pd.Series({i: float(np.nanmean(kept.to_numpy())) for i, kept in frames.items()}, dtype=float)


def jackknife_variance(replicates: np.ndarray) -> float:
    """Var of a statistic from its n delete-one replicates: (n - 1) / n * sum_i (theta_(i) - theta_(.))^2 (Tukey
    1958; Efron & Stein 1981, Ann. Statist. 9:586, Eq. 1.2). For a mean it is var(x) / n exactly."""
    n = len(replicates)
    return float((n - 1) / n * ((replicates - replicates.mean()) ** 2).sum())


def cross_fit_seed_variance(
    refits: pd.DataFrame | None, arm: str, base: str | None, task, k, a: pd.DataFrame, b: pd.DataFrame | None
) -> float | None:
    """The seed part of Var(diff) for a comparison whose arm or baseline was cross-fitted (module doc, "The
    test"): the delete-one-seed jackknife of the whole procedure, the choice included, over the comparison's seeds;
    a, b: problems x seeds of the chosen runs (b None: the arm's own mean). None when neither side was
    cross-fitted or there are fewer than MIN_SEEDS seeds (the plain variance applies)."""
    if refits is None or refits.empty or a.shape[1] < MIN_SEEDS:
        return None
    here = refits[(refits["eval_task"] == task) & (refits["k"] == k)]
    mine, theirs = here[here["arm"] == arm], here[here["arm"] == base]
    if mine.empty and theirs.empty:
        return None
    means = delete_one_seed_means(a, mine)
    if b is not None:
        means = means - delete_one_seed_means(b, theirs)
    return jackknife_variance(means.to_numpy())
