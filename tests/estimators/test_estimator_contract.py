"""The contract of contract.md §1: numpy/torch in -> same kind out, state round trips, validation errors,
composition."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.estimators import get_estimator, registered_names


def batch(seed=0, groups=10, g=8):
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 1.0, 0.5], size=groups, p=[0.3, 0.2, 0.5])
    return (rng.random((groups, g)) < p[:, None]).astype(np.float64)  # (P, G) binary, some collapsed


@pytest.mark.parametrize("name", registered_names())
@pytest.mark.parametrize("np_dtype,torch_dtype", [(np.float32, torch.float32), (np.float64, torch.float64)])
def test_numpy_and_torch_give_identical_advantages_in_the_input_dtype(name, np_dtype, torch_dtype):
    rewards = batch()
    out_np = get_estimator(name).advantages(rewards.astype(np_dtype))
    out_torch = get_estimator(name).advantages(torch.tensor(rewards, dtype=torch_dtype))
    assert isinstance(out_np, np.ndarray) and out_np.dtype == np_dtype and out_np.shape == rewards.shape
    assert isinstance(out_torch, torch.Tensor) and out_torch.dtype == torch_dtype
    assert out_torch.device == torch.device("cpu")
    np.testing.assert_array_equal(out_torch.numpy(), out_np)


def test_integer_inputs_give_float_advantages_and_grad_tensors_are_detached():
    rewards = batch().astype(np.int64)
    assert get_estimator("grpo").advantages(rewards).dtype == np.float64
    assert get_estimator("grpo").advantages(torch.tensor(rewards)).dtype == torch.get_default_dtype()
    out = get_estimator("grpo").advantages(torch.tensor(batch(), requires_grad=True))
    assert not out.requires_grad


def test_importing_the_estimators_does_not_import_torch():
    code = "import sys, benchctl.estimators; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_inputs_are_not_modified():
    rewards = batch()
    before = rewards.copy()
    for name in registered_names():
        get_estimator(name).advantages(rewards)
    np.testing.assert_array_equal(rewards, before)


STATEFUL = [
    ("avspo", {"tau0": 0.2, "eta": 0.3}),
    ("ha_dw", {}),
    ("ha_dw", {"update": "hard", "h": 2}),
    ("ha_dw", {"base": "avspo"}),
    ("a_grae", {"base": "avspo"}),
]


@pytest.mark.parametrize("name,settings", [(n, {}) for n in registered_names()] + STATEFUL)
def test_state_round_trip_through_json_reproduces_later_steps_bit_exactly(name, settings):
    batches = [batch(seed) for seed in range(6)]
    original = get_estimator(name, **settings)
    for rewards in batches[:3]:
        original.advantages(rewards)
    saved = json.loads(json.dumps(original.state_dict()))
    resumed = get_estimator(name, **settings)
    resumed.load_state_dict(saved)
    for rewards in batches[3:]:
        np.testing.assert_array_equal(resumed.advantages(rewards), original.advantages(rewards))
    assert resumed.state_dict() == original.state_dict()


def test_same_inputs_and_same_state_give_same_outputs_without_hidden_state():
    a, b = get_estimator("ha_dw", base="avspo"), get_estimator("ha_dw", base="avspo")
    for seed in range(4):
        np.testing.assert_array_equal(a.advantages(batch(seed)), b.advantages(batch(seed)))


def test_load_state_dict_rejects_another_estimators_state_and_unknown_keys():
    with pytest.raises(BenchctlError, match="avspo"):
        get_estimator("ha_dw").load_state_dict(get_estimator("avspo").state_dict())
    bad = {"estimator": "avspo", "state": {"tau": 0.5}, "base": None}
    with pytest.raises(BenchctlError, match="prev_mean"):
        get_estimator("avspo").load_state_dict(bad)


def test_a_failing_step_leaves_every_layer_state_unchanged():
    est = get_estimator("a_grae", base="avspo")
    est.advantages(batch())
    saved = est.state_dict()
    with pytest.raises(BenchctlError, match=r"\[0, 1\]"):
        est.advantages(batch() * 2.0)
    assert est.state_dict() == saved


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rewards_are_rejected_naming_the_group(bad):
    rewards = batch()
    rewards[3, 2] = bad
    with pytest.raises(BenchctlError, match="group 3"):
        get_estimator("grpo").advantages(rewards)


@pytest.mark.parametrize("name", ["a_grae", "hard_focused", "easy_focused", "w_reinforce", "passk"])
def test_estimators_needing_unit_interval_rewards_say_so(name):
    rewards = batch()
    rewards[4, 0] = 1.5
    with pytest.raises(BenchctlError, match=rf"{name} needs .*group 4"):
        get_estimator(name).advantages(rewards)


def test_passk_rejects_non_binary_rewards_and_k_above_g():
    with pytest.raises(BenchctlError, match="binary"):
        get_estimator("passk").advantages(np.full((2, 4), 0.5) + np.eye(2, 4) * 0.1)
    with pytest.raises(BenchctlError, match=r"k=4 is out of range for G=3.*\[1, 3\]"):
        get_estimator("passk").advantages(np.eye(3))


@pytest.mark.parametrize("shape", [(4,), (0, 4), (3, 0), (2, 3, 4)])
def test_rewards_must_be_a_non_empty_matrix(shape):
    with pytest.raises(BenchctlError, match="2-D"):
        get_estimator("grpo").advantages(np.zeros(shape))


BAD_VALUES = [
    ("grpo", {"std": "mad"}, "choose one of: sample, population"),
    ("grpo", {"eps": -1.0}, r"valid: \[0.0, 1.0\]"),
    ("dgpo", {"temperature": 0.0}, r"valid: \(0.0, inf\]"),
    ("ngrpo", {"n_virtual": 0}, r"valid: \[1, 1024\]"),
    ("w_reinforce", {"lam": -0.1}, r"valid: \[0.0, inf\]"),
    ("passk", {"k": 0}, r"valid: \[1, inf\]"),
    ("avspo", {"tau0": 0.95}, r"tau0=0.95 is out of range; valid: \[0.1, 0.9\]"),
    ("avspo", {"virtual": "x"}, "stratified, www"),
    ("ha_dw", {"lambda_scale": 0}, r"valid: \(0.0, inf\]"),
    ("ha_dw", {"m": 1}, r"valid: \[2, 100000\]"),
    ("ha_dw", {"c0": 1.5}, r"valid: \[0.0, 1.0\]"),
    ("a_grae", {"alpha": 2.0}, r"valid: \(0.0, 1.0\]"),
    ("grpo_lead", {"x0": -1.0}, r"valid: \[0.0, 1.0\]"),
    ("oar_g", {"q": 2.0}, r"valid: \[0.0, 1.0\]"),
    ("pos_dominant", {"beta": float("nan")}, "finite number"),
    ("hard_focused", {"gamma": "big"}, "finite number"),
    ("a_grae", {"shift": 1}, "true or false"),
]


@pytest.mark.parametrize("name,settings,message", BAD_VALUES)
def test_bad_hyperparameter_values_name_the_valid_range(name, settings, message):
    with pytest.raises(BenchctlError, match=message):
        get_estimator(name, **settings)


def test_unknown_names_and_hyperparameters_list_the_valid_choices():
    with pytest.raises(UnknownNameError, match="grpo_lead, ha_dw"):
        get_estimator("grpo_leed")
    with pytest.raises(UnknownNameError):
        get_estimator("ha_dw", base="nope")
    with pytest.raises(BenchctlError, match="lamda_scale.*valid: lambda_scale, .*std, eps"):
        get_estimator("ha_dw", lamda_scale=1.0)
    with pytest.raises(BenchctlError, match="base= applies to modifiers only"):
        get_estimator("grpo", base="dr_grpo")


def test_modifier_keywords_flow_to_the_base_and_base_params_resolve_shared_names():
    est = get_estimator("hard_focused", std="population", gamma=0.7)
    assert est.params.gamma == 0.7 and est.base.params.std == "population"
    est = get_estimator("ha_dw", base="avspo", eta=0.5, base_params={"eta": 0.2})
    assert est.params.eta == 0.5 and est.base.params.eta == 0.2
    stacked = get_estimator("ha_dw", base=get_estimator("a_grae", base="dr_grpo", alpha=0.5))
    assert stacked.label == "ha_dw(base=a_grae(base=dr_grpo))" and stacked.base.params.alpha == 0.5
    with pytest.raises(BenchctlError, match="when building it"):
        get_estimator("ha_dw", base=get_estimator("grpo"), std="population")


def test_default_loss_aggregation_follows_spec_section_6_and_modifiers_inherit():
    agg = {name: get_estimator(name).loss_agg for name in registered_names()}
    assert agg["dr_grpo"] == "seq-mean-token-sum-norm" and agg["dgpo"] == "token-mean-nondegenerate"
    others = {name for name in agg if name not in ("dr_grpo", "dgpo")}
    assert {agg[name] for name in others} == {"seq-mean-token-mean"}
    assert get_estimator("a_grae", base="dr_grpo").loss_agg == "seq-mean-token-sum-norm"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["grpo", "ha_dw", "avspo"])
def test_cuda_tensors_come_back_on_the_same_device_and_dtype(name):
    rewards = torch.tensor(batch(), dtype=torch.float32, device="cuda")
    out = get_estimator(name).advantages(rewards)
    assert out.device == rewards.device and out.dtype == torch.float32
    np.testing.assert_array_equal(out.cpu().numpy(), get_estimator(name).advantages(batch().astype(np.float32)))
