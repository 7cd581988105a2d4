"""The loss registry keeps the estimator registry's conventions: one signature, frozen parameter dataclasses with
help text and checks, paper + equation in every docstring, `NAME(k=v)` specs that parse back from their label."""

import dataclasses
import inspect
import re
from dataclasses import dataclass

import pytest

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.losses import get_loss, loss_info, parse_loss, register_loss, registered_names, unregister_loss
from benchctl.losses.registry import SIGNATURE, get_spec

EXPECTED = {"ppo_clip", "gspo", "gspo_token", "cispo", "sapo", "dppo_tv", "dppo_kl", "gmpo", "clip_cov", "kl_cov"}
EXPECTED |= {"gpg", "dro", "luspo", "vespo"}  # the rest of veRL 0.9.1's register_policy_loss and TRL 1.16's loss_type


def test_every_loss_the_issue_and_the_references_name_is_registered():
    assert EXPECTED <= set(registered_names())


@pytest.mark.parametrize("name", registered_names())
def test_every_loss_has_the_one_signature_and_a_frozen_params_dataclass_with_help(name):
    spec = get_spec(name)
    assert tuple(inspect.signature(spec.fn).parameters) == SIGNATURE
    assert spec.params.__dataclass_params__.frozen
    assert all(f.metadata.get("help") for f in dataclasses.fields(spec.params))


@pytest.mark.parametrize("name", registered_names())
def test_every_docstring_cites_paper_and_equation_and_states_formula_shapes_deviations(name):
    doc = inspect.getdoc(get_spec(name).fn)
    assert re.search(r"arXiv:\d{4}\.\d{4,5}", doc) and re.search(r"Eq\.|§|equation numbers not checked", doc)
    info = loss_info(name)
    assert info.formula and info.reference
    assert all(key in doc for key in ("Formula:", "Shapes:", "Deviations:"))


@pytest.mark.parametrize("name", registered_names())
def test_label_parses_back_to_the_same_loss(name):
    fields = dataclasses.fields(get_spec(name).params)
    numeric = {f.name: 0.5 for f in fields if f.type in ("float", "float | None") and f.name not in ("c", "ub")}
    loss = get_loss(name, **numeric)
    again = parse_loss(loss.label)
    assert again.params == loss.params and again.name == name


def test_parse_types_values_by_the_dataclass_and_bad_input_names_the_choices():
    loss = parse_loss("ppo_clip(clip_high=0.28, c=3)")
    assert loss.params.c == 3.0 and isinstance(loss.params.c, float) and loss.label == "ppo_clip(clip_high=0.28,c=3.0)"
    assert parse_loss("cispo(clip_low=none)").params.clip_low is None
    with pytest.raises(UnknownNameError, match="choose one of: cispo"):
        parse_loss("ppo(clip_low=0.1)")
    with pytest.raises(BenchctlError, match="unknown hyperparameter 'eps' for loss ppo_clip; valid: clip_low"):
        parse_loss("ppo_clip(eps=0.1)")
    with pytest.raises(BenchctlError, match=r"c=1.0 is out of range"):
        get_loss("ppo_clip", c=1.0)
    with pytest.raises(BenchctlError, match="not a valid float"):
        parse_loss("ppo_clip(clip_low=wide)")
    with pytest.raises(BenchctlError, match="expected key=value"):
        parse_loss("ppo_clip(0.2)")


def test_a_plugin_registers_and_a_duplicate_name_with_another_function_is_refused():
    @dataclass(frozen=True)
    class Params:
        scale: float = dataclasses.field(default=2.0, metadata={"help": "test"})

    def doubled(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params):
        return (-advantages * log_prob * params.scale * response_mask).sum(), {}

    register_loss("doubled_for_test", params=Params)(doubled)
    try:
        register_loss("doubled_for_test", params=Params)(doubled)  # same function: a no-op
        assert get_loss("doubled_for_test", scale=3.0).params.scale == 3.0

        def other(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params):
            return doubled(log_prob, old_log_prob, advantages, response_mask, loss_agg_mode, params)

        with pytest.raises(BenchctlError, match="already registered"):
            register_loss("doubled_for_test", params=Params)(other)
    finally:
        unregister_loss("doubled_for_test")
    with pytest.raises(BenchctlError, match="signature"):
        register_loss("bad_for_test", params=Params)(lambda log_prob, advantages: None)


def test_the_package_imports_with_numpy_and_torch_only():
    """The veRL venv imports it beside veRL: no CLI, model or engine library comes with it."""
    import subprocess
    import sys

    code = "import sys, benchctl.losses; print(' '.join({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "torch" in loaded and not {"typer", "rich", "transformers", "vllm", "trl", "verl"} & set(loaded)
