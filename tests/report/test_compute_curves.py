"""ScaleRL compute curves: known parameters are recovered from synthetic curves, CIs come from the seeds (the
delete-one-seed jackknife of the pooled fit) and cover the truth at about their level on geometric and linear
cadences (C_mid's lower end and A's interval reaching as far as the profile likelihood allows), an asymptote past the
budget is not identified (printed as a lower limit, never compared) while one seed's
slow curve does not disqualify its arm, and the comparison orders arms by asymptote, then by midpoint."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchctl.report.compute import (
    NOT_RESOLVED,
    Fit,
    compare_fits,
    compute_fits,
    fit_arm,
    fit_curve,
    jackknife,
    midpoint_profile,
    profile_asymptote,
    profile_midpoint_low,
    scalerl_curve,
    t_interval,
)
from benchctl.report.render import compute_view

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


def test_per_seed_t_intervals_cover_the_truth_and_the_fits_table_has_the_columns():
    fits, reps = compute_fits(_curves("grpo", 0.6, 1.5, 20_000, seeds=5, noise=0.02))
    row = fits.iloc[0]
    assert row.seeds == 5 and row.points == 5 * 7
    assert row.asymptote_low <= 0.6 <= row.asymptote_high
    assert row.midpoint_low <= 20_000 <= row.midpoint_high
    assert row.efficiency_low <= 1.5 <= row.efficiency_high
    assert row.asymptote == pytest.approx(0.6, abs=0.03)
    assert reps[("grpo", "arith")].shape == (5, 3)  # one (A, B, C_mid) per seed
    assert {"asymptote_low", "efficiency_high", "midpoint", "max_tokens"} <= set(fits.columns)
    assert bool(row.asymptote_identified) and row.max_tokens == TOKENS[-1]


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
    fits, reps = compute_fits(curves)
    verdicts = (
        compare_fits(fits, reps, [("higher", "grpo"), ("sooner", "grpo"), ("same", "grpo")])
        .set_index("arm")["verdict"]
        .to_dict()
    )
    assert verdicts == {"higher": "higher asymptote", "sooner": "same asymptote, sooner", "same": "indistinguishable"}


def _seed_curves(rng, arm: str, seeds: int, a: float = 0.6, c_mid: float = 20_000, noise: float = 0.03, tokens=TOKENS):
    """Seeds with their own curves (A_s, B_s, C_s spread around the arm's A, B, C_mid) and evaluation noise at
    `tokens` (step 0 first): the generator of benchmarks/report_compute_coverage.py."""
    rows = []
    for seed in range(seeds):
        a_s, b_s, c_s = a + rng.normal(0, 0.03), 1.5 * np.exp(rng.normal(0, 0.1)), c_mid * np.exp(rng.normal(0, 0.2))
        score = np.r_[0.1, scalerl_curve(tokens[1:], 0.1, a_s, b_s, c_s)] + rng.normal(0, noise, len(tokens))
        rows += [
            {"arm": arm, "eval_task": "arith", "seed": seed, "tokens": c, "score": v} for c, v in zip(tokens, score)
        ]
    return pd.DataFrame(rows)


def test_an_asymptote_whose_midpoint_lies_past_the_budget_is_not_identified_printed_or_compared():
    rng = np.random.default_rng(3)
    curves = pd.concat([_seed_curves(rng, "grpo", 5, c_mid=2_000_000), _seed_curves(rng, "drgrpo", 5, 0.5, 20_000)])
    fits, per_seed = compute_fits(curves)
    fits = fits.set_index("arm", drop=False)
    assert not fits.loc["grpo", "asymptote_identified"] and fits.loc["drgrpo", "asymptote_identified"]
    verdict = compare_fits(fits.reset_index(drop=True), per_seed, [("drgrpo", "grpo")])["verdict"].iloc[0]
    assert verdict == NOT_RESOLVED == "asymptote not resolved at this budget"
    view = compute_view(fits.reset_index(drop=True), pd.DataFrame()).set_index("arm")
    assert view.loc["grpo", "A (asymptote, %)"].startswith(">= ")  # a lower limit, never a point
    assert 0.05 < fits.loc["grpo", "asymptote_low"] < 0.2  # where the seeds got at the budget (about 0.11), at least
    assert view.loc["grpo", "C_mid (tokens)"].startswith("> 160,000") or "[" in view.loc["grpo", "C_mid (tokens)"]
    assert not view.loc["drgrpo", "A (asymptote, %)"].startswith(">=")


def test_an_asymptote_on_the_clip_is_not_identified():
    rng = np.random.default_rng(4)
    fits, _ = compute_fits(_seed_curves(rng, "grpo", 5, a=1.0, c_mid=20_000))  # seeds' A near or past 1
    assert not fits.iloc[0]["asymptote_identified"]


LINEAR = np.r_[0, np.linspace(20_000, 160_000, 8)]  # every 20,000 tokens: the first evaluation at C_mid


@pytest.mark.parametrize("tokens", [TOKENS, LINEAR], ids=["geometric", "linear"])
def test_intervals_cover_at_about_their_level_and_identical_curves_are_rarely_called_apart(tokens):
    """A small-scale run of the coverage benchmark (30 replications; the full figures: docs/report.md)."""
    rng = np.random.default_rng(5)
    hits, calls = np.zeros(3), 0
    for _ in range(30):
        curves = pd.concat([_seed_curves(rng, "grpo", 5, tokens=tokens), _seed_curves(rng, "same", 5, tokens=tokens)])
        fits, per_seed = compute_fits(curves)
        row = fits.set_index("arm").loc["grpo"]
        hits += [
            row[f"{n}_low"] <= t <= row[f"{n}_high"]
            for n, t in (("asymptote", 0.6), ("efficiency", 1.5), ("midpoint", 20_000))
        ]
        verdict = compare_fits(fits, per_seed, [("same", "grpo")])["verdict"].iloc[0]
        calls += verdict in ("higher asymptote", "lower asymptote")
    assert (hits >= 25).all()  # >= 83% of 30 (95% nominal; P(< 25 | 95%) ~ 1%)
    assert calls <= 4


def test_one_seed_whose_curve_is_still_rising_at_the_budget_does_not_disqualify_its_arm():
    """A seed whose own midpoint lies past the budget is information about the arm's C_mid, not a veto: nine seeds
    at C_mid 20,000 and one at 400,000 (its own fit alone: past the 160,000 budget) are identified."""
    rng = np.random.default_rng(6)
    curves = pd.concat([_seed_curves(rng, "grpo", 9), _seed_curves(rng, "grpo", 1, c_mid=400_000).assign(seed=9)])
    alone = curves[curves["seed"] == 9]
    assert fit_curve(alone["tokens"].to_numpy(), alone["score"].to_numpy(), 0.1).c_mid > 160_000
    row = compute_fits(curves)[0].iloc[0]
    assert row.seeds == 10 and bool(row.asymptote_identified)
    assert row.midpoint_high <= row.max_tokens


def test_jackknife_replicates_average_to_the_pooled_fit_and_spread_as_the_jackknife_variance():
    full = Fit(0.6, 1.5, 20_000.0, 0.1, 0.01)
    theta = np.array([[0.58, 1.4, 18_000.0], [0.61, 1.6, 21_000.0], [0.62, 1.5, 23_000.0], [0.6, 1.45, 19_000.0]])
    reps = jackknife(full, [Fit(a, b, c, 0.1, 0.01) for a, b, c in theta])
    log_reps, log_theta = (
        np.column_stack([reps[:, 0], np.log(reps[:, 1:])]),
        np.column_stack([theta[:, 0], np.log(theta[:, 1:])]),
    )
    assert log_reps.mean(0) == pytest.approx([0.6, np.log(1.5), np.log(20_000)])
    s = len(theta)
    jack_var = (s - 1) / s * ((log_theta - log_theta.mean(0)) ** 2).sum(0)
    assert log_reps.var(0, ddof=1) / s == pytest.approx(jack_var)
    assert jackknife(full, [*[Fit(a, b, c, 0.1, 0.01) for a, b, c in theta[:3]], Fit(*[np.nan] * 5)]).shape == (0, 3)


def test_a_curve_sharper_than_the_efficiency_range_is_not_identified():
    """A step (B = 40) fits with B pinned at the top of its search range: the shape, hence C_mid, is not resolved."""
    rng = np.random.default_rng(7)
    rows = [
        {"arm": "step", "eval_task": "arith", "seed": seed, "tokens": c, "score": v + rng.normal(0, 0.005)}
        for seed in range(5)
        for c, v in zip(TOKENS, scalerl_curve(TOKENS, 0.1, 0.5, 40.0, 30_000))
    ]
    row = compute_fits(pd.DataFrame(rows))[0].iloc[0]
    assert row.efficiency == pytest.approx(10.0, rel=1e-3) and not row.asymptote_identified


LINEAR_5 = np.r_[0, np.linspace(32_000, 160_000, 5)]  # every 32,000 tokens: every evaluation past C_mid


@pytest.mark.parametrize("r0", [0.1, None], ids=["r0 fixed", "r0 fitted"])
def test_the_profile_interval_of_the_asymptote_matches_a_brute_force_scan_of_the_sse(r0):
    """The closed form A_hat +- sqrt((threshold - SSE) / curvature) against SSE minimised over (R0,) B, C_mid at
    each A of a fine grid: the same interval to within the scan's step."""
    rng = np.random.default_rng(8)
    points = _seed_curves(rng, "grpo", 3, tokens=LINEAR_5)
    c, r = points["tokens"].to_numpy(float), points["score"].to_numpy(float)
    profile = midpoint_profile(c, r, r0, fit_curve(c, r, r0))
    low, high = profile_asymptote(profile, 0.95, 80_000)
    keep = c > 0
    c, r = c[keep], r[keep]
    log_b = np.linspace(np.log(0.2), np.log(10.0), 61)[:, None, None]
    s = 1 / (1 + np.exp(np.clip(np.exp(log_b) * (np.log(profile.c_mid)[None, :, None] - np.log(c)), -50, 50)))
    t = stats.t.ppf(0.975, profile.dof)
    allowed = profile.c_mid <= 80_000
    inside = []
    for a in np.linspace(0, 1, 2001):
        base = r0 if r0 is not None else ((r - a * s) * (1 - s)).sum(-1) / ((1 - s) ** 2).sum(-1)
        base = np.asarray(base)[..., None] if r0 is None else base
        sse = ((base * (1 - s) + a * s - r) ** 2).sum(-1)[:, allowed]
        inside.append(sse.min() <= profile.sse_min * (1 + t * t / profile.dof))
    scan = np.linspace(0, 1, 2001)[np.array(inside)]
    assert (low, high) == pytest.approx((scan.min(), scan.max()), abs=1e-3)


def test_the_midpoint_reaches_down_as_far_as_the_profile_allows_when_every_evaluation_lies_past_it():
    """Evaluated on the rise, the profile bounds C_mid from below near the fit; with every evaluation past C_mid the
    points barely bound it from below, and the fits table's lower end goes down with the profile while the upper
    end (which decides identification) stays the jackknife's."""
    rng = np.random.default_rng(9)
    reach = {}
    for name, tokens in (("rise", TOKENS), ("past", LINEAR_5)):
        points = _seed_curves(rng, "grpo", 3, tokens=tokens)
        arm = fit_arm(points)
        row = compute_fits(points)[0].iloc[0]
        _, jk_low, jk_high = t_interval(np.log(arm.replicates[:, 2]), 0.95)
        assert row.midpoint_low == pytest.approx(min(np.exp(jk_low), profile_midpoint_low(arm.profile, 0.95)))
        assert row.midpoint_high == pytest.approx(np.exp(jk_high))
        reach[name] = arm.pooled.c_mid / profile_midpoint_low(arm.profile, 0.95)
    assert reach["past"] > 2 * reach["rise"]


def test_three_seeds_evaluated_past_the_midpoint_cover_c_mid_and_a_at_about_their_level():
    """A small-scale run of the benchmark's hardest regime (5 linear evaluations, 3 seeds; 40 replications):
    the jackknife alone covered C_mid and A about 91% there (docs/report.md)."""
    rng = np.random.default_rng(10)
    hits = np.zeros(3)
    for _ in range(40):
        row = compute_fits(_seed_curves(rng, "grpo", 3, tokens=LINEAR_5, noise=0.035))[0].iloc[0]
        hits += [
            row[f"{n}_low"] <= t <= row[f"{n}_high"]
            for n, t in (("asymptote", 0.6), ("efficiency", 1.5), ("midpoint", 20_000))
        ]
    assert (hits >= 35).all()  # >= 87.5% of 40 (95% nominal; P(< 35 | 95%) ~ 1.4%)
