"""HA-DW's anchor tracks the model's accuracy by default; Eq. 10 as written freezes (`benchctl simulate anchor`)."""

import numpy as np
import pytest

from benchctl.estimators import get_estimator
from benchctl.lab.anchor import AnchorConfig, run_anchor


def _row(result, trajectory, gain):
    return next(r for r in result.rows if r["trajectory"] == trajectory and r["gain"] == gain)


def test_the_default_anchor_ends_within_003_of_the_last_ten_accuracies_on_a_rising_accuracy():
    result = run_anchor(AnchorConfig(seeds=50))
    row = _row(result, "rising", "constant")
    assert row["within_0.03"] == 1.0 and abs(row["gap"]) < 0.03 and not row["frozen"]


def test_eq_10_as_written_is_reported_frozen_its_gain_collapsing_to_zero():
    result = run_anchor(AnchorConfig(seeds=50))
    for trajectory in ("rising", "noisy"):
        row = _row(result, trajectory, "anchor_std")
        assert row["frozen"] and row["eta_end"] < 1e-6
    assert _row(result, "rising", "anchor_std")["gap"] < -0.08  # left behind by 0.1 of rising accuracy


def test_the_estimators_default_anchor_follows_binary_batches_whose_accuracy_rises():
    rng = np.random.default_rng(0)
    est, accs = get_estimator("ha_dw"), []
    for t in range(60):
        p = 0.18 + 0.12 * t / 59
        rewards = (rng.random((64, 8)) < p).astype(float)
        est.advantages(rewards)
        accs.append(rewards.mean())
    assert est.diagnostics()["anchor"] == pytest.approx(np.mean(accs[-10:]), abs=0.03)
    assert get_estimator("ha_dw").params.gain == "constant"
