"""Registry rules (style.md item 4) and third-party plug-ins appearing wherever built-ins do."""

from dataclasses import dataclass

import numpy as np
import pytest

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.estimators import (
    estimator_info,
    get_estimator,
    list_estimators,
    register_estimator,
    registered_names,
    unregister_estimator,
)
from benchctl.estimators._common import hp


@dataclass(frozen=True)
class HalfParams:
    scale: float = hp(0.5, "multiplier of the base advantage")


def halve(rewards, base_adv, params, state):
    """Half: multiply the base advantage by a constant (a test plug-in).

    Reference: arXiv:2402.03300 (test fixture, contract.md §3).
    Formula: A' = scale * A
    Shapes: rewards (P, G), base_adv (P, G) -> (P, G).
    Deviations: none.
    """
    return base_adv * params.scale, None, {"half_scale": params.scale}


@pytest.fixture()
def plugin():
    register_estimator("test_half", kind="modifier", params=HalfParams)(halve)
    yield "test_half"
    unregister_estimator("test_half")


def test_plugin_appears_in_listing_info_and_get_estimator(plugin):
    assert plugin in registered_names() and plugin in [info.name for info in list_estimators()]
    info = estimator_info(plugin)
    assert info.kind == "modifier" and info.formula == "A' = scale * A" and info.reference == "arXiv:2402.03300"
    est = get_estimator(plugin, base="dr_grpo", scale=0.25)
    rewards = np.array([[1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(est.advantages(rewards), 0.25 * get_estimator("dr_grpo").advantages(rewards))
    assert est.diagnostics()["half_scale"] == 0.25 and est.loss_agg == "seq-mean-token-sum-norm"


def test_plugin_can_be_the_base_of_a_builtin_modifier(plugin):
    est = get_estimator("ha_dw", base=plugin, c0=0.5)
    assert est.label == "ha_dw(base=test_half(base=grpo))"
    assert np.isfinite(est.advantages(np.array([[1.0, 0.0, 0.0, 0.0]]))).all()


def test_reregistering_the_same_function_is_a_no_op(plugin):
    register_estimator(plugin, kind="modifier", params=HalfParams)(halve)
    assert registered_names().count(plugin) == 1


def test_duplicate_name_with_a_different_function_is_an_error(plugin):
    def other(rewards, base_adv, params, state):
        return base_adv, None, {}

    with pytest.raises(BenchctlError, match="already registered"):
        register_estimator(plugin, kind="modifier", params=HalfParams)(other)
    with pytest.raises(BenchctlError, match="already registered"):
        register_estimator("grpo", kind="modifier", params=HalfParams)(other)


def test_unknown_name_lists_every_registered_name():
    with pytest.raises(UnknownNameError) as err:
        get_estimator("gpro")
    assert err.value.choices == sorted(registered_names())
    with pytest.raises(UnknownNameError):
        unregister_estimator("gpro")


def test_registration_enforces_the_signature_of_its_kind_and_frozen_params():
    def base_like(rewards, params, state):
        return rewards, None, {}

    with pytest.raises(BenchctlError, match=r"signature \(rewards, base_adv, params, state\)"):
        register_estimator("test_bad", kind="modifier", params=HalfParams)(base_like)

    @dataclass
    class Mutable:
        x: float = hp(1.0, "x")

    with pytest.raises(BenchctlError, match="frozen dataclass"):
        register_estimator("test_bad", kind="base", params=Mutable)(base_like)
    with pytest.raises(BenchctlError, match="kind='other'"):
        register_estimator("test_bad", kind="other", params=HalfParams)(base_like)
    with pytest.raises(BenchctlError, match="loss_agg='sum'"):
        register_estimator("test_bad", kind="base", params=HalfParams, loss_agg="sum")(base_like)
    assert "test_bad" not in registered_names()


def test_every_registered_estimator_has_one_of_the_two_signatures():
    import inspect

    from benchctl.estimators.registry import KINDS, get_spec

    for name in registered_names():
        spec = get_spec(name)
        want = KINDS[spec.kind] + (("inputs",) if spec.inputs else ())  # an estimator taking per-call inputs
        assert tuple(inspect.signature(spec.fn).parameters) == want, name


def test_an_estimators_inputs_are_those_every_layer_of_its_chain_declares():
    assert get_estimator("grpo").inputs == frozenset()
    assert get_estimator("dbb").inputs == {"prompt_ids"}
    assert get_estimator("codapo").inputs == {"seq_logprob"}
    assert get_estimator("codapo", base="dbb").inputs == {"seq_logprob", "prompt_ids"}
