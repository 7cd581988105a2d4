"""ScaleRL compute curves: known parameters are recovered from synthetic curves, CIs come from the seeds, and the
comparison orders arms by asymptote, then by midpoint."""

import numpy as np
import pandas as pd
import pytest

from benchctl.report.compute import compare_fits, compute_fits, fit_curve, scalerl_curve

TOKENS = np.array([0, 2_000, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000])


def _curves(arm: str, a: float, b: float, c_mid: float, seeds: int, noise: float, r0: float = 0.1, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    rows = []
    for seed in range(seeds):
        offset = rng.normal(0, noise)  # a run-level shift: seeds differ as training runs do
        for c in TOKENS:
            score = scalerl_curve(np.array([c]), r0, a, b, c_mid)[0]
            score = r0 if c == 0 else score + offset + rng.normal(0, noise / 2)
            rows.append({"arm": arm, "eval_task": "arith", "seed": seed, "tokens": c, "score": score})
    return pd.DataFrame(rows)


def test_the_curve_starts_at_r0_is_halfway_at_the_midpoint_and_tends_to_the_asymptote():
    r = scalerl_curve(np.array([0, 1e4, 1e12]), 0.1, 0.7, 1.5, 1e4)
    assert r == pytest.approx([0.1, 0.4, 0.7], abs=1e-6)


def test_known_parameters_are_recovered_from_a_noiseless_curve():
    c = TOKENS[1:].astype(float)
    fit = fit_curve(c, scalerl_curve(c, 0.1, 0.65, 1.3, 15_000), r0=0.1)
    assert (fit.a, fit.b, fit.c_mid) == pytest.approx((0.65, 1.3, 15_000), rel=1e-3)
    free = fit_curve(c, scalerl_curve(c, 0.1, 0.65, 1.3, 15_000))
    assert (free.r0, free.a, free.b, free.c_mid) == pytest.approx((0.1, 0.65, 1.3, 15_000), rel=1e-2, abs=1e-3)


def test_seed_bootstrap_intervals_cover_the_truth_and_the_fits_table_has_the_columns():
    fits, reps = compute_fits(_curves("grpo", 0.6, 1.5, 20_000, seeds=5, noise=0.02), resamples=200)
    row = fits.iloc[0]
    assert row.seeds == 5 and row.points == 5 * 7
    assert row.asymptote_low <= 0.6 <= row.asymptote_high
    assert row.midpoint_low <= 20_000 <= row.midpoint_high
    assert row.efficiency_low <= 1.5 <= row.efficiency_high
    assert row.asymptote == pytest.approx(0.6, abs=0.03)
    assert len(reps[("grpo", "arith")]) >= 150
    assert {"asymptote_low", "efficiency_high", "midpoint"} <= set(fits.columns)


def test_one_seed_gets_an_estimate_but_no_interval():
    fits, _ = compute_fits(_curves("grpo", 0.6, 1.5, 20_000, seeds=1, noise=0.01))
    assert np.isfinite(fits.iloc[0].asymptote) and np.isnan(fits.iloc[0].asymptote_low)


def test_arms_are_compared_on_the_asymptote_then_at_equal_asymptote_on_the_midpoint():
    curves = pd.concat(
        [
            _curves("grpo", 0.5, 1.5, 20_000, seeds=5, noise=0.01, rng_seed=1),
            _curves("higher", 0.7, 1.5, 20_000, seeds=5, noise=0.01, rng_seed=2),
            _curves("sooner", 0.5, 1.5, 5_000, seeds=5, noise=0.01, rng_seed=3),
            _curves("same", 0.5, 1.5, 20_000, seeds=5, noise=0.01, rng_seed=4),
        ]
    )
    fits, reps = compute_fits(curves, resamples=200)
    verdicts = (
        compare_fits(fits, reps, [("higher", "grpo"), ("sooner", "grpo"), ("same", "grpo")])
        .set_index("arm")["verdict"]
        .to_dict()
    )
    assert verdicts == {"higher": "higher asymptote", "sooner": "same asymptote, sooner", "same": "indistinguishable"}
