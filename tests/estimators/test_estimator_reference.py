"""Every registered estimator equals its loop-form reference (estimator_reference.py) over several steps,
sizes, seeds, reward kinds, hyperparameter settings and bases; state evolves identically."""

import numpy as np
import pytest
from estimator_reference import REFERENCES, run_reference

from benchctl.estimators import get_estimator, registered_names
from benchctl.estimators.registry import get_spec

# Extra settings per estimator (the defaults are always tested); modifiers are also run on other bases.
SETTINGS = {
    "grpo": [{"std": "population"}, {"eps": 0.0}],
    "dgpo": [{"question_weighting": False}, {"temperature": 0.5}],
    "ngrpo": [{"n_virtual": 3, "virtual_reward": 0.5}],
    "w_reinforce": [{"lam": 1.0}],
    "passk": [{"k": 1}, {"k": 2}],
    "avspo": [{"virtual": "www", "std": "population"}, {"tau0": 0.1, "eta": 0.5}, {"gamma": 1.0, "tau0": 0.2}],
    "ha_dw": [{"update": "hard", "h": 3}, {"anchor": "fixed", "c0": 0.4}, {"c0": 0.2, "m": 3, "eta": 2.0}],
    "a_grae": [{"alpha": 0.5}, {"shift": False}, {"suppress": False}],
    "pos_dominant": [{"beta": 3.0}],
    "neg_dominant": [{"beta": 3.0}],
    "hard_focused": [{"gamma": 1.0}],
    "easy_focused": [{"gamma": 1.0}],
    "grpo_lead": [{"k": 3.0, "x0": 0.5}],
    "oar_g": [{"q": 0.9}],
    "oar_p": [{"q": 0.1}],
    "maxrl": [{"eps": 0.0}],
    "reinforce_pp_baseline": [{"eps": 0.0}],
    "batch_std": [{"std": "population"}, {"eps": 0.0}],
    "gpg": [{"alpha": "valid"}, {"alpha": "none", "f_norm": 2.0}],
    "krpo": [{"process_var": 0.1, "meas_var": 0.5, "init_mean": 0.5, "init_var": 2.0}],
    "bnpo": [{"max_weight": 2.0}],
    "jspo": [{"leave_one_out": False}, {"eps": 0.0}],
    "dbb": [{"discount": 1.0, "normalise": False}, {"discount": 0.25, "alpha0": 2.0, "beta0": 0.5}],
    "codapo": [{"weight_offset": 0.0}],
    "f_grpo": [{"gamma": 0.5}, {"gamma": 0.0}, {"gamma": 3.0}],
    "rl_zvp": [{"alpha": 0.5}],
}
OTHER_BASES = ["dr_grpo", "w_reinforce", "avspo"]  # zero-mean, no-baseline (non-zero degenerate rows), stateful


def reward_batches(seed, groups, g, binary, steps=4):
    """Batches with all-wrong, all-correct and mixed groups whose collapse rate changes from step to step."""
    rng = np.random.default_rng(seed)
    for step in range(steps):
        p = rng.choice([0.0, 1.0, 0.3, 0.7], size=groups, p=[0.1 + 0.1 * step, 0.1, 0.4 - 0.1 * step, 0.4])
        if binary:
            yield (rng.random((groups, g)) < p[:, None]).astype(float)  # (P, G)
        else:
            cont = np.round(rng.random((groups, g)), 3)  # (P, G) in [0, 1]
            yield np.where((p == 0.0)[:, None], 0.0, np.where((p == 1.0)[:, None], 1.0, cont))


def cases():
    for name in registered_names():
        kind = get_spec(name).kind
        for settings in [{}] + SETTINGS.get(name, []):
            yield pytest.param(name, settings, id=f"{name}-{settings}")
        if kind == "modifier":
            for base in OTHER_BASES:
                yield pytest.param(name, {"base": base}, id=f"{name}-base={base}")


@pytest.mark.parametrize("name,settings", list(cases()))
@pytest.mark.parametrize("groups,g,seed", [(12, 4, 0), (9, 8, 1), (20, 5, 2)])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "continuous"])
def test_matches_reference(name, settings, groups, g, seed, binary):
    assert name in REFERENCES, f"estimator {name!r} has no loop-form reference in estimator_reference.py"
    est = get_estimator(name, **settings)
    chain = [est.name] + ([est.base.name] if est.base is not None else [])
    if not binary and "passk" in chain:
        pytest.skip("passk needs binary rewards")
    states = {}
    for rewards in reward_batches(seed, groups, g, binary):
        expected = run_reference(est, rewards, states)
        np.testing.assert_allclose(est.advantages(rewards), expected, rtol=1e-9, atol=1e-12)


def test_every_registered_estimator_has_a_reference():
    missing = [name for name in registered_names() if name not in REFERENCES]
    assert not missing, f"add loop-form references for: {missing}"
