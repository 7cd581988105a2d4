"""Every method says whether it acted (`Estimator.mechanisms()`): the per-step evidence the trainer logs as
`mechanism/<name>/acted` and the report turns into `mechanism_acted_frac` (an arm under 5% is inert)."""

import numpy as np
import pytest

from benchctl.estimators import get_estimator, list_estimators

MIXED = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])


def test_a_method_without_a_mechanism_declares_none_and_nothing_is_logged_before_a_step():
    est = get_estimator("grpo")
    assert est.mechanisms() == {}
    est.advantages(MIXED)
    assert est.mechanisms() == {}


def test_avspo_acted_exactly_when_it_augmented_a_group():
    est = get_estimator("avspo")
    est.advantages(np.vstack([MIXED, np.ones((1, 4))]))  # ACR 0.25: below its threshold
    assert est.mechanisms() == {"avspo": 0.0} and est.diagnostics()["augmented"] == 0.0
    collapsed = np.vstack([MIXED[:1], np.ones((5, 4)), np.zeros((4, 4))])  # ACR 0.9
    est.advantages(collapsed)
    assert est.mechanisms() == {"avspo": est.diagnostics()["augmented"]} == {"avspo": 1.0}


def test_ha_dw_acted_when_its_anchor_moved():
    est = get_estimator("ha_dw")
    est.advantages(MIXED)
    first = est.mechanisms()["ha_dw"]
    est.advantages(np.array([[1.0, 1.0, 1.0, 0.0]] * 3))  # a different batch accuracy
    d = est.diagnostics()
    assert first == 0.0 and est.mechanisms()["ha_dw"] == float(abs(d["anchor"] - d["anchor_prior"]) > 1e-9)


def test_dgpo_acted_when_question_weights_differ():
    est = get_estimator("dgpo")
    est.advantages(MIXED)
    assert est.mechanisms() == {"dgpo": 1.0}
    est.advantages(np.array([[1.0, 0.0, 1.0, 0.0]] * 3))  # every question equally hard: equal weights
    assert est.mechanisms() == {"dgpo": 0.0}


@pytest.mark.parametrize("name", ["a_grae", "pos_dominant", "hard_focused", "grpo_lead"])
def test_a_modifier_acted_when_it_changed_its_bases_advantages(name):
    est = get_estimator(name)
    est.advantages(MIXED)
    assert est.mechanisms() == {name: 1.0}
    est.advantages(np.ones((3, 4)))  # all groups degenerate: nothing to change
    assert est.mechanisms() == {name: 0.0}


def test_a_chain_reports_every_mechanism_in_it():
    est = get_estimator("ha_dw", base="dgpo")
    est.advantages(MIXED)
    assert set(est.mechanisms()) == {"ha_dw", "dgpo"}


def test_every_declared_mechanism_is_described_for_the_docs():
    for info in list_estimators():
        if info.kind == "modifier":
            assert info.mechanism, info.name
    assert "augmented" in next(i for i in list_estimators() if i.name == "avspo").mechanism
