"""The effect of a group-sequential claim adjusted for where it stopped: the decision rule the paths follow is the
claims' own verdict, one look leaves the effect as it is, an upward stop after a first look is pulled towards
zero, and a `less` claim is the mirror image of a `greater` one."""

import numpy as np
import pytest

from benchctl.report.claims import EXCLUDED, Claim, verdict
from benchctl.report.sequential import SequentialDesign, t_boundary
from benchctl.report.stagewise import exits, stagewise_estimate, stagewise_note
from benchctl.report.stats import crossed_estimate


@pytest.mark.parametrize(
    "direction, margin, stated",
    [("greater", 0.0, None), ("less", 0.0, 0.3), ("at_least", 0.2, None), ("at_most", 0.1, 0.5), ("greater", 0, 0.4)],
)
def test_the_paths_exit_exactly_where_the_claims_verdict_decides(direction, margin, stated):
    rng = np.random.default_rng(3)
    centre, half = rng.normal(0, 0.5, 400), rng.uniform(0.01, 0.6, 400)
    got = exits(direction, margin, stated, centre - half, centre + half)
    code = {"holds": 1, "does not hold": -1, EXCLUDED: -1, "inconclusive": 0}
    want = [code[verdict(direction, lo, hi, 5, margin, stated)] for lo, hi in zip(centre - half, centre + half)]
    assert list(got) == want


def _row(values, design, claim_direction="greater"):
    """The claim's row at the first look that decides it (or the last), as sequential_claims makes it."""
    seeds = tuple(len(s) for s in design.looks())
    for k, n in enumerate(seeds):
        est = crossed_estimate(np.asarray(values, float)[None, :n], design.confidences()[k], "fixed")
        found = verdict(claim_direction, est.low, est.high, n)
        if found != "inconclusive" or k == len(seeds) - 1:
            return {"look": k + 1, "effect": est.mean, "low": est.low, "high": est.high, "seeds": n}, seeds


def _claim(**kw) -> Claim:
    return Claim(paper="0", claim="x", arm="a", baseline="b", metric="m", **kw)


def test_with_one_look_the_median_unbiased_estimate_is_the_looks_mean():
    design = SequentialDesign((1, 2, 3, 4), 4)
    row, seeds = _row([0.5, 1.2, 0.9, 1.6], design)
    median, _ = stagewise_estimate(row, _claim(), seeds, t_boundary(seeds, 4), 0.05)
    assert median == pytest.approx(row["effect"], abs=0.01)


def test_a_claim_that_holds_at_a_later_look_is_adjusted_towards_zero():
    design = SequentialDesign((1, 2, 3, 4), 8)
    values = [1.0, 0.2, 0.9, 0.5, 1.2, 0.8, 0.1, 0.3]  # inconclusive at 4 seeds, holds at 6
    row, seeds = _row(values, design)
    assert row["look"] == 2
    median, adjusted = stagewise_estimate(row, _claim(), seeds, t_boundary(seeds, 8), 0.05)
    assert 0 < adjusted < row["effect"] and 0 < median < row["effect"]
    assert "bias-adjusted" in stagewise_note({**row, "median_unbiased": median, "bias_adjusted": adjusted}, _claim())


def test_a_less_claim_is_adjusted_as_the_mirror_image_of_a_greater_one():
    design = SequentialDesign((1, 2, 3, 4), 8)
    values = np.array([1.0, 0.2, 0.9, 0.5, 1.2, 0.8, 0.1, 0.3])
    up, seeds = _row(values, design)
    down, _ = _row(-values, design, "less")
    crit = t_boundary(seeds, 8)
    greater = stagewise_estimate(up, _claim(), seeds, crit, 0.05)
    less = stagewise_estimate(down, _claim(direction="less"), seeds, crit, 0.05)
    assert less == pytest.approx(tuple(-v for v in greater), abs=1e-6)


def test_a_claim_not_decided_yet_or_with_a_premise_is_not_adjusted():
    design = SequentialDesign((1, 2, 3, 4), 8)
    seeds, crit = tuple(len(s) for s in design.looks()), t_boundary((4, 6, 8), 8)
    undecided = {"look": 1, "effect": 0.1, "low": -1.0, "high": 1.2, "seeds": 4}
    assert np.isnan(stagewise_estimate(undecided, _claim(), seeds, crit, 0.05)).all()
    decided = {"look": 2, "effect": 1.0, "low": 0.2, "high": 1.8, "seeds": 6}
    assert np.isnan(stagewise_estimate(decided, _claim(requires="x"), seeds, crit, 0.05)).all()


@pytest.mark.slow
def test_the_median_unbiased_root_by_bisection_is_the_grids_root():
    from benchctl.report.stagewise import _solve, _solve_increasing, p_function

    design = SequentialDesign((1, 2, 3, 4), 8)
    seeds = tuple(len(s) for s in design.looks())
    crit = t_boundary(seeds, 8)
    for k, mean, sd, way in ((1, 1.2, 0.8, 1), (2, 0.3, 1.0, 0), (0, 1.5, 0.3, 1), (1, -1.0, 0.7, -1)):
        observed = (k, mean, way)
        g = lambda mu, o=observed, sd=sd: p_function(mu, sd, o, (seeds, crit), _claim()) - 0.5  # noqa: E731
        se = sd / np.sqrt(seeds[k])
        assert _solve_increasing(g, mean, se) == pytest.approx(_solve(g, mean, se), abs=2e-3 * se)


def test_the_conditional_mean_of_a_first_look_stop_is_the_simulated_one():
    """The bias-adjusted estimate's model: E[look-1 mean | the claim holds at look 1] at a known sd, against a direct
    simulation of the design's first look (t interval on 3 df at the look's confidence)."""
    from scipy import stats

    from benchctl.report.stagewise import conditional_mean

    design = SequentialDesign((1, 2, 3, 4), 8)
    seeds = tuple(len(s) for s in design.looks())
    x = np.random.default_rng(11).normal(1.0, 1.0, (400_000, 4))  # (M, 4): delta = sd = 1
    mean, sd = x.mean(axis=1), x.std(axis=1, ddof=1)
    half = stats.t.ppf(0.5 + design.confidences()[0] / 2, 3) * sd / 2
    simulated = mean[mean - half > 0].mean()  # about 1.5: the inflation of a first-look stop
    modelled = conditional_mean(1.0, 1.0, (0, 1), (seeds, t_boundary(seeds, 8)), _claim())
    assert simulated > 1.4
    assert modelled == pytest.approx(simulated, abs=0.03)
