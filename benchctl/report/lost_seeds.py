"""Seeds a comparison was asked for and did not get, so that a failed cell is marked where its loss shows.

Rule [our choice]: the seeds *expected* of a comparison (an arm against its baseline, or a claim) are the seeds
the inputs list for both sides, whatever the status of their runs (a matrix index lists every cell, failed or
not), since a comparison pairs runs by seed; the report's `--where` applies. A seed is *lost* when it is expected
and not among the seeds the comparison used: a run of it failed, is still pending or running, or (done) holds no
evaluation of that task. Each lost seed says why: `s4 failed` (the arm's run), `s4 failed (baseline grpo)`, `s4
failed (both)`, `s4 not evaluated`. The tables then read `3 of 4 seeds: s4 failed` (`seeds_mark`).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

DONE = "done"


def seed_status(runs: pd.DataFrame) -> dict[float, str]:
    """{seed: status} of `runs` (a seed with any done run is done; NaN seeds read -1, as `stats.seed_matrix`)."""
    if runs is None or runs.empty or "seed" not in runs:
        return {}
    status = runs["status"] if "status" in runs else pd.Series(DONE, index=runs.index)
    out: dict[float, str] = {}
    for seed, state in zip(runs["seed"].fillna(-1), status, strict=True):
        out[seed] = DONE if out.get(seed) == DONE else str(state)
    return out


def _seed_text(seed) -> str:
    return f"s{int(seed)}" if float(seed).is_integer() else f"s{seed}"


def lost_seeds(arm: pd.DataFrame, base: pd.DataFrame | None, used: Iterable, baseline: str) -> tuple[int, str]:
    """(seeds expected, the lost ones and why, '; '-joined, '' when none is lost) of a comparison whose arm and
    baseline runs (any status) are `arm` and `base` and which used the seeds `used` (module docstring); `base`
    None: an arm's own pass@k, which expects every seed of its runs."""
    a, used = seed_status(arm), set(used)
    b = {seed: DONE for seed in a} if base is None else seed_status(base)
    expected = (set(a) & set(b)) | used
    lost = []
    for seed in sorted(expected - used):
        arm_state, base_state = a.get(seed, DONE), b.get(seed, DONE)
        if arm_state != DONE and base_state != DONE:
            why = arm_state + " (both)" if arm_state == base_state else f"{arm_state}, baseline {base_state}"
        elif arm_state != DONE:
            why = arm_state
        elif base_state != DONE:
            why = f"{base_state} (baseline {baseline})"
        else:
            why = "not evaluated"
        lost.append(f"{_seed_text(seed)} {why}")
    return len(expected), "; ".join(lost)


def seeds_mark(seeds: int, expected: int, lost: str) -> str:
    """`3 of 4 seeds: s4 failed` when the comparison has fewer seeds than expected, else ''."""
    if pd.isna(expected) or seeds >= expected:
        return ""
    return f"{int(seeds)} of {int(expected)} seeds" + (f": {lost}" if lost else "")
